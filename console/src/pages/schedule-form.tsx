/**
 * Create or edit a schedule: its cron expression said in words as it is typed (cronstrue), its
 * time zone, the workflow it runs (revision, session, definition) and the input it runs with.
 * Creating runs `create_schedule`; editing sends `update_schedule` with the fields that changed.
 */
import cronstrue from 'cronstrue';
import { useId, useState, type FormEvent } from 'react';
import type { components } from '../../../client/src/rest-types.ts';
import { useService } from '../context.ts';
import { Refusal } from '../ui/states.tsx';

type Schedule = components['schemas']['Schedule'];

/** The expression in words, or why it cannot be said. */
export function cronInWords(cron: string): { words: string; ok: boolean } {
  try {
    return { words: cronstrue.toString(cron, { use24HourTimeFormat: true, verbose: false }), ok: true };
  } catch (error) {
    return { words: typeof error === 'string' ? error : (error as Error).message, ok: false };
  }
}

/** The zones this browser knows, for the zone field's suggestions. */
const ZONES: readonly string[] = (() => {
  try {
    return Intl.supportedValuesOf('timeZone');
  } catch {
    return ['UTC'];
  }
})();

export function ScheduleForm({
  revisionId,
  schedule,
  onSaved,
  onCancel,
}: {
  revisionId: string;
  /** The schedule edited; none to create one. */
  schedule?: Schedule;
  onSaved: () => void;
  onCancel?: () => void;
}) {
  const service = useService();
  const id = useId();
  const [alias, setAlias] = useState(schedule?.alias ?? '');
  const [cron, setCron] = useState(schedule?.cron ?? '0 9 * * 1-5');
  const [timezone, setTimezone] = useState(schedule?.timezone ?? 'UTC');
  const [targetRevision, setTargetRevision] = useState(schedule?.target.revision_id ?? '');
  const [session, setSession] = useState(schedule?.target.session_id ?? '');
  const [definition, setDefinition] = useState(schedule?.target.definition_id ?? '');
  const [input, setInput] = useState(
    schedule && schedule.input_data !== undefined ? JSON.stringify(schedule.input_data ?? null) : '{}',
  );
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const words = cronInWords(cron);
  const name = schedule ? (schedule.alias ?? schedule.id) : 'new schedule';

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setError(null);
    let inputData: unknown;
    try {
      inputData = JSON.parse(input);
    } catch (caught) {
      setError(new Error(`The input is not JSON: ${(caught as Error).message}`));
      return;
    }
    const target = { revision_id: targetRevision.trim(), session_id: session.trim(), definition_id: definition.trim() };
    setBusy(true);
    try {
      if (!schedule) {
        await service.command('create_schedule', revisionId, {
          ...(alias.trim() ? { alias: alias.trim() } : {}),
          cron: cron.trim(),
          timezone: timezone.trim(),
          target,
          input_data: inputData,
        });
      } else {
        // Only what changed: an unchanged cron and zone keep the schedule's next fire as it is.
        const changed: Record<string, unknown> = {};
        if (alias.trim() !== (schedule.alias ?? '')) changed.alias = alias.trim() || null;
        if (cron.trim() !== schedule.cron) changed.cron = cron.trim();
        if (timezone.trim() !== schedule.timezone) changed.timezone = timezone.trim();
        const was = schedule.target;
        if (
          target.revision_id !== was.revision_id ||
          target.session_id !== was.session_id ||
          target.definition_id !== was.definition_id
        )
          changed.target = target;
        if (JSON.stringify(inputData) !== JSON.stringify(schedule.input_data ?? null)) changed.input_data = inputData;
        await service.command('update_schedule', revisionId, { schedule_id: schedule.id, ...changed } as never);
      }
      onSaved();
    } catch (caught) {
      setError(caught);
    } finally {
      setBusy(false);
    }
  };

  return (
    <form
      className="panel schedule-form"
      onSubmit={(event) => void submit(event)}
      aria-label={`Schedule form: ${name}`}
    >
      <label htmlFor={`${id}-alias`}>Alias (optional)</label>
      <input id={`${id}-alias`} value={alias} onChange={(event) => setAlias(event.target.value)} />
      <label htmlFor={`${id}-cron`}>Cron expression</label>
      <input
        id={`${id}-cron`}
        value={cron}
        onChange={(event) => setCron(event.target.value)}
        aria-describedby={`${id}-cron-words`}
        aria-invalid={!words.ok}
        spellCheck={false}
      />
      <p id={`${id}-cron-words`} className={words.ok ? 'cron-words' : 'cron-words problem'} aria-live="polite">
        {words.words}
      </p>
      <label htmlFor={`${id}-zone`}>Time zone</label>
      <input
        id={`${id}-zone`}
        value={timezone}
        list={`${id}-zones`}
        onChange={(event) => setTimezone(event.target.value)}
      />
      <datalist id={`${id}-zones`}>
        {ZONES.map((zone) => (
          <option key={zone} value={zone} />
        ))}
      </datalist>
      <fieldset>
        <legend>What it runs</legend>
        <label htmlFor={`${id}-revision`}>Workflow revision id</label>
        <input
          id={`${id}-revision`}
          value={targetRevision}
          onChange={(event) => setTargetRevision(event.target.value)}
        />
        <label htmlFor={`${id}-session`}>Session id</label>
        <input id={`${id}-session`} value={session} onChange={(event) => setSession(event.target.value)} />
        <label htmlFor={`${id}-definition`}>Definition id</label>
        <input id={`${id}-definition`} value={definition} onChange={(event) => setDefinition(event.target.value)} />
      </fieldset>
      <label htmlFor={`${id}-input`}>Input (JSON)</label>
      <textarea id={`${id}-input`} rows={3} value={input} onChange={(event) => setInput(event.target.value)} />
      <p>
        <button type="submit" disabled={busy}>
          {schedule ? `Save ${name}` : 'Create schedule'}
        </button>{' '}
        {onCancel && (
          <button type="button" onClick={onCancel}>
            Cancel
          </button>
        )}
      </p>
      {error !== null && <Refusal error={error} action={schedule ? 'Saving the schedule' : 'Creating the schedule'} />}
    </form>
  );
}

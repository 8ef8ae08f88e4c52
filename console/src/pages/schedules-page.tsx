/**
 * A scheduler revision's schedules: each cron in words (cronstrue), its next fires in its own time
 * zone, enable/disable, and its run history — `refused` runs with their limit in words. Loaded
 * lazily (cronstrue and croner are not part of the first load).
 */
import { Cron } from 'croner';
import { useState } from 'react';
import type { components } from '../../../client/src/rest-types.ts';
import { usePages } from '../api/use-load.ts';
import { useService } from '../context.ts';
import { Link, seg } from '../router.tsx';
import { Empty, limitInWords, Loading, More, Refusal, Time } from '../ui/states.tsx';
import { cronInWords, ScheduleForm } from './schedule-form.tsx';

type Schedule = components['schemas']['Schedule'];
type ScheduleRun = components['schemas']['ScheduleRun'];

/** The next `count` fires: the service's next one, then the expression's following ones, in the schedule's zone. */
function nextFires(schedule: Schedule, count: number): Date[] {
  if (!schedule.enabled || !schedule.next_fire_at) return [];
  const first = new Date(schedule.next_fire_at);
  const fields = schedule.cron.trim().split(/\s+/).length;
  try {
    const cron = new Cron(schedule.cron, {
      timezone: schedule.timezone,
      paused: true,
      mode: fields === 6 ? '6-part' : '5-part',
    });
    return [first, ...cron.nextRuns(count - 1, first)];
  } catch {
    return [first];
  }
}

/** A moment as the schedule's zone reads it. */
function inZone(at: Date, timeZone: string): string {
  return new Intl.DateTimeFormat('en-GB', { dateStyle: 'medium', timeStyle: 'long', timeZone }).format(at);
}

export default function SchedulesPage({ revisionId }: { revisionId: string }) {
  const service = useService();
  const schedules = usePages(async (cursor) => {
    const page = await service.command('list_schedules', revisionId, cursor ? { start_session_id: cursor } : {});
    return { items: page.schedules, next: page.last_session_id };
  }, revisionId);
  const [error, setError] = useState<unknown>(null);
  const [open, setOpen] = useState<string | null>(null);
  const [editing, setEditing] = useState<string | null>(null);
  const [creating, setCreating] = useState(false);
  const toggle = async (schedule: Schedule) => {
    setError(null);
    try {
      await service.command('update_schedule', revisionId, { schedule_id: schedule.id, enabled: !schedule.enabled });
      await schedules.reload();
    } catch (caught) {
      setError(caught);
    }
  };
  return (
    <main>
      <nav aria-label="Breadcrumb" className="crumbs">
        <Link to="/">Organizations</Link>
      </nav>
      <h1>Schedules</h1>
      {error !== null && <Refusal error={error} action="Changing the schedule" />}
      {creating ? (
        <ScheduleForm
          revisionId={revisionId}
          onSaved={() => {
            setCreating(false);
            void schedules.reload();
          }}
          onCancel={() => setCreating(false)}
        />
      ) : (
        <p>
          <button type="button" onClick={() => setCreating(true)}>
            New schedule
          </button>
        </p>
      )}
      {schedules.state === 'loading' && <Loading what="schedules" />}
      {schedules.state === 'error' && <Refusal error={schedules.error} />}
      {schedules.state === 'ready' && schedules.items.length === 0 && <Empty>No schedule yet.</Empty>}
      {schedules.items.map((schedule) => {
        const label = schedule.alias ?? schedule.id;
        return (
          <section key={schedule.id} className="panel" aria-label={`Schedule ${label}`} data-schedule={schedule.id}>
            <h2>{label}</h2>
            <dl className="facts">
              <dt>Cron</dt>
              <dd>
                <code>{schedule.cron}</code> — <span className="cron-words">{cronInWords(schedule.cron).words}</span>
              </dd>
              <dt>Time zone</dt>
              <dd>{schedule.timezone}</dd>
              <dt>State</dt>
              <dd className="schedule-state">{schedule.enabled ? 'enabled' : 'disabled'}</dd>
              <dt>Next fires</dt>
              <dd>
                {schedule.enabled ? (
                  <ul className="next-fires">
                    {nextFires(schedule, 3).map((at) => (
                      <li key={at.toISOString()}>
                        <time dateTime={at.toISOString()}>{inZone(at, schedule.timezone)}</time>
                      </li>
                    ))}
                  </ul>
                ) : (
                  'none while disabled'
                )}
              </dd>
              <dt>Runs</dt>
              <dd>
                <Link
                  to={`/revisions/${seg(schedule.target.revision_id)}/definitions/${seg(schedule.target.definition_id)}`}
                >
                  the definition it runs
                </Link>
                , in session{' '}
                <Link to={`/revisions/${seg(schedule.target.revision_id)}/sessions/${seg(schedule.target.session_id)}`}>
                  {schedule.target.session_id}
                </Link>
              </dd>
            </dl>
            <button type="button" onClick={() => void toggle(schedule)}>
              {schedule.enabled ? 'Disable' : 'Enable'} {label}
            </button>{' '}
            <button
              type="button"
              aria-expanded={editing === schedule.id}
              onClick={() => setEditing(editing === schedule.id ? null : schedule.id)}
            >
              Edit {label}
            </button>{' '}
            <button
              type="button"
              aria-expanded={open === schedule.id}
              onClick={() => setOpen(open === schedule.id ? null : schedule.id)}
            >
              Run history of {label}
            </button>
            {editing === schedule.id && (
              <ScheduleForm
                revisionId={revisionId}
                schedule={schedule}
                onSaved={() => {
                  setEditing(null);
                  void schedules.reload();
                }}
                onCancel={() => setEditing(null)}
              />
            )}
            {open === schedule.id && <Runs revisionId={revisionId} schedule={schedule} />}
          </section>
        );
      })}
      <More hasMore={schedules.hasMore} loading={schedules.state === 'more'} onMore={() => void schedules.more()} />
    </main>
  );
}

function Runs({ revisionId, schedule }: { revisionId: string; schedule: Schedule }) {
  const service = useService();
  const runs = usePages(async (cursor) => {
    const page = (await service.command('list_executions', revisionId, {
      schedule_id: schedule.id,
      ...(cursor ? { start_session_id: cursor } : {}),
    })) as { executions: ScheduleRun[]; last_session_id: string | null };
    return { items: page.executions, next: page.last_session_id };
  }, schedule.id);
  return (
    <div className="runs">
      {runs.state === 'loading' && <Loading what="runs" />}
      {runs.state === 'error' && <Refusal error={runs.error} />}
      {runs.state === 'ready' && runs.items.length === 0 && <Empty>It has not fired yet.</Empty>}
      {runs.items.length > 0 && (
        <table>
          <thead>
            <tr>
              <th scope="col">Fired</th>
              <th scope="col">Due</th>
              <th scope="col">Outcome</th>
            </tr>
          </thead>
          <tbody>
            {runs.items.map((run) => (
              <tr key={run.id} data-run-status={run.status}>
                <th scope="row">
                  <Time at={run.fired_at} />
                </th>
                <td>
                  <Time at={run.due_at} />
                </td>
                <td>
                  <span className={`status ${run.status}`}>{run.status}</span>{' '}
                  {run.execution_id && (
                    <Link to={`/revisions/${seg(schedule.target.revision_id)}/executions/${seg(run.execution_id)}`}>
                      execution {run.execution_id}
                    </Link>
                  )}
                  {run.limit && <span className="problem"> — the {limitInWords(run.limit)}</span>}
                  {run.error && (
                    <span className="problem">
                      {' '}
                      (<code>{run.error.code}</code> {run.error.message})
                    </span>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <More hasMore={runs.hasMore} loading={runs.state === 'more'} onMore={() => void runs.more()} />
    </div>
  );
}

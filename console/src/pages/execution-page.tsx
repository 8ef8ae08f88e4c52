/**
 * One execution, live: its graph with each node's state (queued, running, succeeded, failed,
 * skipped), a node's runs with their timings, route, error, logs, input and output on click, the
 * event timeline, and cancel. Events come through `subscribe` with replay, so nothing is missed or repeated.
 */
import { memo, useEffect, useMemo, useRef, useState } from 'react';
import { ConnectionError, newIdempotencyKey, type EventRecord } from '../../../client/src/index.ts';
import { useEvents } from '../api/use-events.ts';
import { useLoad } from '../api/use-load.ts';
import { useService } from '../context.ts';
import { GraphView } from '../graph/lazy-graph.tsx';
import { NodeConfig } from '../graph/node-details.tsx';
import { ExecutionFold, type NodeRun, type RunValue } from '../graph/node-runs.ts';
import { graphOf } from '../graph/workflow-graph.ts';
import { Link, navigate, seg } from '../router.tsx';
import { LongValue } from '../ui/long-value.tsx';
import { Json, limitInWords, Loading, Refusal, Time } from '../ui/states.tsx';

const ENDED = new Set(['succeeded', 'failed', 'cancelled']);

export function ExecutionPage({ revisionId, executionId }: { revisionId: string; executionId: string }) {
  const service = useService();
  const execution = useLoad(
    () => service.command('get_execution', revisionId, { execution_id: executionId }),
    executionId,
  );
  const definitions = useLoad(() => service.command('list_definitions', revisionId, {}), revisionId);
  const live = useEvents(revisionId, { execution_id: executionId }, true);
  const [selected, setSelected] = useState<string | null>(null);
  const [cancelError, setCancelError] = useState<unknown>(null);
  const [rerunError, setRerunError] = useState<unknown>(null);
  const [rerunning, setRerunning] = useState(false);
  // One key per intent to re-run: a double click, or a retry after a lost answer, runs once.
  // Made on the first render only: the page renders once per frame of events while it follows one.
  const rerunKey = useRef('');
  if (rerunKey.current === '') rerunKey.current = newIdempotencyKey();
  const record = execution.state === 'ready' ? execution.data.execution : null;
  // The events folded as they arrive (each once), not refolded from the first on every render.
  const fold = useRef(new ExecutionFold());
  if (live.events.length < fold.current.applied) fold.current = new ExecutionFold();
  fold.current.take(live.events);
  const finished = fold.current.finished;
  const { reload } = execution;
  // The record's status, output and error change as the execution moves: read it again, at once
  // when the execution itself changed (started, finished), else at most once a second — not once
  // per event, which would be a get_execution per node run on a long execution.
  const lastReload = useRef(0);
  const lastKind = live.events.at(-1)?.kind ?? '';
  useEffect(() => {
    if (live.events.length === 0) return;
    const wait = lastKind.startsWith('execution.') ? 0 : Math.max(0, lastReload.current + 1000 - Date.now());
    const timer = setTimeout(() => {
      lastReload.current = Date.now();
      void reload();
    }, wait);
    return () => clearTimeout(timer);
    // Deliberately narrow dependencies: once per batch of events
  }, [live.events.length]);

  const definition =
    record && definitions.state === 'ready'
      ? definitions.data.definitions.find((d) => d.id === record.definition_id)
      : undefined;
  const graph = useMemo(() => (definition ? graphOf(definition.graph) : null), [definition]);
  const ended = finished || (record !== null && ENDED.has(record.status));
  const view = useMemo(() => fold.current.view(graph, ended), [graph, live.events, ended]);

  const cancel = async () => {
    setCancelError(null);
    try {
      await service.command('cancel_execution', revisionId, { execution_id: executionId });
      await reload();
    } catch (caught) {
      setCancelError(caught);
    }
  };

  const rerun = async () => {
    if (!graph || !record) return;
    setRerunError(null);
    setRerunning(true);
    try {
      const { execution: created } = await service.command('rerun_execution', revisionId, {
        execution_id: executionId,
        from_node: graph.start,
        input_data: record.input_data,
        idempotency_key: rerunKey.current,
      });
      navigate(`/revisions/${seg(revisionId)}/executions/${seg(created.id)}`);
    } catch (caught) {
      // Refused: a later click is a new attempt. A lost answer keeps the key, so a retry is safe.
      if (!(caught instanceof ConnectionError)) rerunKey.current = newIdempotencyKey();
      setRerunError(caught);
    } finally {
      setRerunning(false);
    }
  };

  return (
    <main>
      <nav aria-label="Breadcrumb" className="crumbs">
        <Link to={`/revisions/${seg(revisionId)}`}>Revision</Link>
        {record && (
          <>
            {' / '}
            <Link to={`/revisions/${seg(revisionId)}/sessions/${seg(record.session_id)}`}>Session</Link>
          </>
        )}
      </nav>
      <h1>Execution {executionId}</h1>
      {execution.state === 'loading' && <Loading what="the execution" />}
      {execution.state === 'error' && <Refusal error={execution.error} />}
      {record && (
        <dl className="facts">
          <dt>Status</dt>
          <dd>
            <span className={`status ${record.status}`} data-testid="execution-status">
              {record.status}
            </span>
          </dd>
          <dt>Created</dt>
          <dd>
            <Time at={record.created_at} />
          </dd>
          <dt>Started</dt>
          <dd>
            <Time at={record.started_at} />
          </dd>
          <dt>Ended</dt>
          <dd>
            <Time at={record.ended_at} />
          </dd>
          <dt>Node runs</dt>
          <dd>{record.node_runs}</dd>
          {record.rerun_of && (
            <>
              <dt>Re-run of</dt>
              <dd>
                <Link to={`/revisions/${seg(revisionId)}/executions/${seg(record.rerun_of)}`}>{record.rerun_of}</Link>
              </dd>
            </>
          )}
          {record.rerun_by && (
            <>
              <dt>Re-run by</dt>
              <dd>
                <Link to={`/revisions/${seg(revisionId)}/executions/${seg(record.rerun_by)}`}>{record.rerun_by}</Link>
              </dd>
            </>
          )}
          {record.error && (
            <>
              <dt>Error</dt>
              <dd className="problem">
                <code>{record.error.code}</code> {record.error.message}
                {record.error.limit && ` (${limitInWords(record.error.limit)})`}
              </dd>
            </>
          )}
        </dl>
      )}
      {record && !ENDED.has(record.status) && (
        <button type="button" className="danger" onClick={() => void cancel()}>
          Cancel execution
        </button>
      )}
      {record && ENDED.has(record.status) && graph && (
        <button type="button" onClick={() => void rerun()} disabled={rerunning}>
          Re-run with the same input
        </button>
      )}
      {cancelError !== null && <Refusal error={cancelError} action="Cancelling" />}
      {rerunError !== null && <Refusal error={rerunError} action="Re-running" />}
      {live.error !== null && <Refusal error={live.error} action="Following the events" />}
      {graph && (
        <div className="split">
          <GraphView
            graph={graph}
            states={view.states}
            taken={view.taken}
            selected={selected}
            onSelect={setSelected}
            label={`Graph of execution ${executionId}`}
          />
          <div>
            <NodeList states={view.states} onSelect={setSelected} selected={selected} />
            {selected && graph.nodes[selected] && (
              <>
                <NodeRuns
                  name={selected}
                  runs={view.runs[selected] ?? []}
                  input={graph.start === selected ? record?.input_data : undefined}
                  output={
                    ended && view.lastNode === selected && record?.status === 'succeeded' ? record.output : undefined
                  }
                />
                <NodeConfig name={selected} node={graph.nodes[selected]} />
              </>
            )}
          </div>
        </div>
      )}
      {record && ENDED.has(record.status) && (
        <section aria-labelledby="output-heading">
          <h2 id="output-heading">Execution output</h2>
          <Json value={record.output} label="Execution output" />
        </section>
      )}
      <section aria-labelledby="timeline-heading">
        <h2 id="timeline-heading">Events</h2>
        <Timeline events={live.events} />
      </section>
    </main>
  );
}

/** Rows per memoized block of the timeline. */
const BLOCK = 100;

/**
 * The event timeline in blocks of BLOCK rows, each a list of its own: a full block keeps its
 * identity (the same array), so a render on new events compares a block per hundred events and
 * the rows of the last block, not one row per event so far; and the browser skips the layout and
 * paint of the blocks out of view (`content-visibility`, styles.css), one check per block.
 */
function Timeline({ events }: { events: readonly EventRecord[] }) {
  const blocks = useRef<EventRecord[][]>([]);
  const kept = blocks.current;
  // The list only grows while the page follows one execution; anything else starts afresh.
  const full = Math.floor(events.length / BLOCK);
  const reuse =
    kept.length > 0 && kept[0]![0] === events[0] ? Math.min(full, kept.filter((b) => b.length === BLOCK).length) : 0;
  const next = kept.slice(0, reuse);
  for (let start = reuse * BLOCK; start < events.length; start += BLOCK) next.push(events.slice(start, start + BLOCK));
  blocks.current = next;
  return (
    <div className="timeline">
      {next.map((block) => (
        <TimelineBlock key={block[0]!.id} events={block} />
      ))}
    </div>
  );
}

const TimelineBlock = memo(function TimelineBlock({ events }: { events: readonly EventRecord[] }) {
  return (
    <ol className="timeline-block">
      {events.map((event) => (
        <TimelineRow key={event.id} event={event} />
      ))}
    </ol>
  );
});

/** One event of the timeline; memoized, so a new event renders its own row only. */
const TimelineRow = memo(function TimelineRow({ event }: { event: EventRecord }) {
  return (
    <li data-event={event.id}>
      <Time at={event.at} /> <code>{event.kind}</code> {event.node && <strong>{event.node}</strong>}{' '}
      <span className="muted">{Object.keys(event.attributes).length > 0 ? JSON.stringify(event.attributes) : ''}</span>
    </li>
  );
});

/** The nodes as a list of buttons: the keyboard's and the screen reader's way into the graph. */
const NodeList = memo(function NodeList({
  states,
  selected,
  onSelect,
}: {
  states: Record<string, string>;
  selected: string | null;
  onSelect: (node: string) => void;
}) {
  return (
    <ul className="node-list" aria-label="Nodes">
      {Object.entries(states).map(([name, state]) => (
        <li key={name}>
          <button type="button" aria-pressed={selected === name} onClick={() => onSelect(name)} data-node={name}>
            {name}: <span className={`status ${state}`}>{state}</span>
          </button>
        </li>
      ))}
    </ul>
  );
});

function NodeRuns({ name, runs, input, output }: { name: string; runs: NodeRun[]; input: unknown; output: unknown }) {
  return (
    <section className="panel" aria-labelledby="node-runs-heading">
      <h3 id="node-runs-heading">Runs of {name}</h3>
      {runs.length === 0 && <p className="muted">Not run.</p>}
      <ol>
        {runs.map((run, i) => (
          <li key={i} className="node-run">
            <p>
              Started <Time at={run.startedAt} />
              {run.endedAt && (
                <>
                  , ended <Time at={run.endedAt} />
                </>
              )}
              {run.durationMs !== null && ` (${run.durationMs} ms)`}
            </p>
            {run.route && (
              <p>
                Route taken:{' '}
                <strong className={run.route === 'failure' ? 'route failure' : 'route'}>{run.route}</strong>
              </p>
            )}
            {run.error && (
              <p className="problem node-error">
                Error <code>{run.error.code}</code>: {run.error.message}
                {run.error.limit && ` (${limitInWords(run.error.limit)})`}
              </p>
            )}
            {run.logs.length > 0 && (
              <ul className="logs">
                {run.logs.map((log, j) => (
                  <li key={j}>
                    [{log.level}] {log.message}
                  </li>
                ))}
              </ul>
            )}
            {run.endedAt === null && <p className="muted">Its input and output are recorded when it ends.</p>}
            <RunValueView title="Input" value={run.input} label={`Input of run ${i + 1} of node ${name}`} />
            <RunValueView title="Output" value={run.output} label={`Output of run ${i + 1} of node ${name}`} />
          </li>
        ))}
      </ol>
      {input !== undefined && (
        <>
          <h4>Execution input</h4>
          <LongValue value={input} label={`Execution input, given to node ${name}`} />
        </>
      )}
      {output !== undefined && (
        <>
          <h4>Execution output</h4>
          <LongValue value={output} label={`Execution output, from node ${name}`} />
        </>
      )}
    </section>
  );
}

/** One run's input or output, whole or as far as the service kept it; nothing when the event has none. */
function RunValueView({ title, value, label }: { title: string; value: RunValue; label: string }) {
  if (value.kind === 'none') return null;
  return (
    <>
      <h4>{title}</h4>
      {value.kind === 'whole' ? (
        <LongValue value={value.value} label={label} />
      ) : (
        <LongValue cut={value} label={label} />
      )}
    </>
  );
}

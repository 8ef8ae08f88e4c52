/**
 * A session's executions, newest first, paged with the API's cursor and kept current by the
 * session's events (a new execution appears, a finished one changes status). The status filter
 * applies to the executions loaded so far: the API's listing has no filter.
 */
import { useEffect, useState } from 'react';
import type { ExecutionRecord, ExecutionStatus } from '../../../client/src/index.ts';
import { useEvents } from '../api/use-events.ts';
import { usePages } from '../api/use-load.ts';
import { useService } from '../context.ts';
import { Link, seg } from '../router.tsx';
import { Empty, Loading, More, Refusal, Time } from '../ui/states.tsx';
import { SessionContents } from './session-contents.tsx';

const STATUSES: ExecutionStatus[] = ['queued', 'running', 'sleeping', 'succeeded', 'failed', 'cancelled'];

export function SessionPage({ revisionId, sessionId }: { revisionId: string; sessionId: string }) {
  const service = useService();
  const [status, setStatus] = useState<ExecutionStatus | ''>('');
  const executions = usePages(async (cursor) => {
    const page = await service.command('list_executions', revisionId, {
      session_id: sessionId,
      ...(cursor ? { start_session_id: cursor } : {}),
    });
    // With session_id the listing is of executions (with schedule_id, of a schedule's runs).
    return { items: page.executions as ExecutionRecord[], next: page.last_session_id };
  }, revisionId + sessionId);
  const live = useEvents(revisionId, { session_id: sessionId }, false);
  const { reload } = executions;
  useEffect(() => {
    if (live.events.length > 0) void reload();
    // Deliberately narrow dependencies: each new event reloads the newest page
  }, [live.events.length]);
  const shown = status ? executions.items.filter((execution) => execution.status === status) : executions.items;
  const base = `/revisions/${seg(revisionId)}`;

  return (
    <main>
      <nav aria-label="Breadcrumb" className="crumbs">
        <Link to={base}>Revision</Link>
      </nav>
      <h1>Session {sessionId}</h1>
      <h2>Executions</h2>
      <p>
        <label htmlFor="status-filter">Status</label>{' '}
        <select id="status-filter" value={status} onChange={(e) => setStatus(e.target.value as ExecutionStatus | '')}>
          <option value="">any</option>
          {STATUSES.map((s) => (
            <option key={s}>{s}</option>
          ))}
        </select>{' '}
        <span className="muted" aria-live="polite">
          {live.error ? 'Live updates stopped.' : 'Live.'}
        </span>
      </p>
      {executions.state === 'loading' && <Loading what="executions" />}
      {executions.state === 'error' && <Refusal error={executions.error} />}
      {executions.state !== 'loading' && shown.length === 0 && (
        <Empty>No execution{status ? ` ${status}` : ''} yet.</Empty>
      )}
      {shown.length > 0 && (
        <table className="executions">
          <thead>
            <tr>
              <th scope="col">Execution</th>
              <th scope="col">Status</th>
              <th scope="col">Created</th>
              <th scope="col">Node runs</th>
            </tr>
          </thead>
          <tbody>
            {shown.map((execution) => (
              <tr key={execution.id}>
                <td>
                  <Link to={`${base}/executions/${seg(execution.id)}`}>{execution.id}</Link>
                </td>
                <td>
                  <span className={`status ${execution.status}`}>{execution.status}</span>
                </td>
                <td>
                  <Time at={execution.created_at} />
                </td>
                <td>{execution.node_runs}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <More hasMore={executions.hasMore} loading={executions.state === 'more'} onMore={() => void executions.more()} />
      <SessionContents revisionId={revisionId} sessionId={sessionId} />
    </main>
  );
}

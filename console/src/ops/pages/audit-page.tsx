/** The audit log (perimeter operations and acting-token requests), newest first, paged on. */
import { useState, type FormEvent } from 'react';
import { usePages } from '../../api/use-load.ts';
import { Empty, Loading, More, Time } from '../../ui/states.tsx';
import { useOps } from '../context.ts';
import { OpsRefusal } from '../refusal.tsx';

interface Entry {
  id: string;
  at: string;
  actorId: string;
  humanId: string | null;
  credential: string;
  operation: string;
  targetType: string | null;
  targetId: string | null;
  outcome: string;
  error: string | null;
  status: number;
}

const PAGE = 50;

export function AuditPage() {
  const ops = useOps();
  const [operation, setOperation] = useState('');
  const [filter, setFilter] = useState('');
  const entries = usePages(async (cursor) => {
    const { auditLog } = await ops<{ auditLog: Entry[] }>(
      `query ($limit: Int, $operation: String, $beforeId: ID) {
        auditLog(limit: $limit, operation: $operation, beforeId: $beforeId) {
          id at actorId humanId credential operation targetType targetId outcome error status } }`,
      { limit: PAGE, operation: filter || null, beforeId: cursor },
    );
    // Paged on from the last entry's id; only an empty page is the end.
    return { items: auditLog, next: auditLog.length > 0 ? auditLog.at(-1)!.id : null };
  }, filter);
  const apply = (event: FormEvent) => {
    event.preventDefault();
    setFilter(operation.trim());
  };
  return (
    <main>
      <h1>Audit log</h1>
      <form className="inline" onSubmit={apply}>
        <label>
          Operation <input value={operation} onChange={(event) => setOperation(event.target.value)} />
        </label>
        <button type="submit">Filter</button>
      </form>
      {entries.state === 'loading' && <Loading what="the audit log" />}
      {entries.state === 'error' && <OpsRefusal error={entries.error} />}
      {entries.state !== 'loading' && entries.items.length === 0 && entries.state !== 'error' && (
        <Empty>No entry{filter ? ` for ${filter}` : ''}.</Empty>
      )}
      {entries.items.length > 0 && (
        <table>
          <thead>
            <tr>
              <th scope="col">At</th>
              <th scope="col">Operation</th>
              <th scope="col">Actor (human)</th>
              <th scope="col">Credential</th>
              <th scope="col">Target</th>
              <th scope="col">Outcome</th>
            </tr>
          </thead>
          <tbody>
            {entries.items.map((entry) => (
              <tr key={entry.id}>
                <th scope="row">
                  <Time at={entry.at} />
                </th>
                <td>
                  <code>{entry.operation}</code>
                </td>
                <td>
                  <code>{entry.actorId}</code>
                  {entry.humanId && entry.humanId !== entry.actorId && (
                    <>
                      {' '}
                      (<code>{entry.humanId}</code>)
                    </>
                  )}
                </td>
                <td>{entry.credential}</td>
                <td>{entry.targetType ? `${entry.targetType} ${entry.targetId ?? ''}` : '—'}</td>
                <td className={entry.outcome === 'refused' ? 'problem' : ''}>
                  {entry.outcome} {entry.status}
                  {entry.error && (
                    <>
                      {' '}
                      <code>{entry.error}</code>
                    </>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <More hasMore={entries.hasMore} loading={entries.state === 'more'} onMore={() => void entries.more()} />
    </main>
  );
}

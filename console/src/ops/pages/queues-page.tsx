/** Every pg-boss queue with its job counts (each at most a minute old). */
import { useLoad } from '../../api/use-load.ts';
import { Empty, Loading, Time } from '../../ui/states.tsx';
import { useOps } from '../context.ts';
import { OpsRefusal } from '../refusal.tsx';

interface Queue {
  name: string;
  policy: string;
  queuedCount: number;
  readyCount: number;
  deferredCount: number;
  activeCount: number;
  failedCount: number;
  totalCount: number;
  countedAt: string | null;
}

export function QueuesPage() {
  const ops = useOps();
  const queues = useLoad(
    () =>
      ops<{ queues: Queue[] }>(
        '{ queues { name policy queuedCount readyCount deferredCount activeCount failedCount totalCount countedAt } }',
      ),
    'queues',
  );
  return (
    <main>
      <h1>Queues</h1>
      <button type="button" onClick={() => void queues.reload()}>
        Refresh
      </button>
      {queues.state === 'loading' && <Loading what="queues" />}
      {queues.state === 'error' && <OpsRefusal error={queues.error} />}
      {queues.state === 'ready' && queues.data.queues.length === 0 && <Empty>No queue.</Empty>}
      {queues.state === 'ready' && queues.data.queues.length > 0 && (
        <table>
          <thead>
            <tr>
              <th scope="col">Queue</th>
              <th scope="col">Policy</th>
              <th scope="col">Queued</th>
              <th scope="col">Ready</th>
              <th scope="col">Deferred</th>
              <th scope="col">Active</th>
              <th scope="col">Failed</th>
              <th scope="col">Total</th>
              <th scope="col">Counted</th>
            </tr>
          </thead>
          <tbody>
            {queues.data.queues.map((queue) => (
              <tr key={queue.name}>
                <th scope="row">
                  <code>{queue.name}</code>
                </th>
                <td>{queue.policy}</td>
                <td>{queue.queuedCount}</td>
                <td>{queue.readyCount}</td>
                <td>{queue.deferredCount}</td>
                <td>{queue.activeCount}</td>
                <td>{queue.failedCount}</td>
                <td>{queue.totalCount}</td>
                <td>
                  <Time at={queue.countedAt} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </main>
  );
}

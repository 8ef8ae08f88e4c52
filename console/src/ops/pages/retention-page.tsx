/** The retention sweep: its history (daily runs and the operator's), and run it now. */
import { useState } from 'react';
import { useLoad } from '../../api/use-load.ts';
import { Empty, Loading, Time } from '../../ui/states.tsx';
import { useOps } from '../context.ts';
import { OpsRefusal } from '../refusal.tsx';

interface Sweep {
  id: string;
  trigger: string;
  status: string;
  startedAt: string;
  finishedAt: string | null;
  executionsRemoved: number;
  runsRemoved: number;
  idempotencyKeysRemoved: number;
  error: string | null;
}

const FIELDS = 'id trigger status startedAt finishedAt executionsRemoved runsRemoved idempotencyKeysRemoved error';

export function RetentionPage() {
  const ops = useOps();
  const sweeps = useLoad(
    () => ops<{ retentionSweeps: Sweep[] }>(`{ retentionSweeps(limit: 50) { ${FIELDS} } }`),
    'sweeps',
  );
  const [running, setRunning] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const [last, setLast] = useState<Sweep | null>(null);
  const run = async () => {
    setRunning(true);
    setError(null);
    try {
      setLast(
        (await ops<{ runRetentionSweep: Sweep }>(`mutation { runRetentionSweep { ${FIELDS} } }`)).runRetentionSweep,
      );
      await sweeps.reload();
    } catch (caught) {
      setError(caught);
    } finally {
      setRunning(false);
    }
  };
  return (
    <main>
      <h1>Retention</h1>
      <p>
        A sweep removes finished executions, schedule runs and idempotency keys past their retention. The runners run
        one daily; this runs one now and answers when it has finished.
      </p>
      <button type="button" onClick={() => void run()} disabled={running}>
        {running ? 'Sweeping…' : 'Run a retention sweep now'}
      </button>
      {error !== null && <OpsRefusal error={error} action="The sweep" />}
      {last && (
        <p role="status" className="fine" data-testid="sweep-result">
          Sweep {last.status}: {last.executionsRemoved} executions, {last.runsRemoved} schedule runs and{' '}
          {last.idempotencyKeysRemoved} idempotency keys removed.
        </p>
      )}
      <h2>Recent sweeps</h2>
      {sweeps.state === 'loading' && <Loading what="sweeps" />}
      {sweeps.state === 'error' && <OpsRefusal error={sweeps.error} />}
      {sweeps.state === 'ready' && sweeps.data.retentionSweeps.length === 0 && <Empty>No sweep yet.</Empty>}
      {sweeps.state === 'ready' && sweeps.data.retentionSweeps.length > 0 && (
        <table>
          <thead>
            <tr>
              <th scope="col">Started</th>
              <th scope="col">Trigger</th>
              <th scope="col">Status</th>
              <th scope="col">Finished</th>
              <th scope="col">Executions</th>
              <th scope="col">Schedule runs</th>
              <th scope="col">Idempotency keys</th>
              <th scope="col">Error</th>
            </tr>
          </thead>
          <tbody>
            {sweeps.data.retentionSweeps.map((sweep) => (
              <tr key={sweep.id}>
                <th scope="row">
                  <Time at={sweep.startedAt} />
                </th>
                <td>{sweep.trigger}</td>
                <td>{sweep.status}</td>
                <td>
                  <Time at={sweep.finishedAt} />
                </td>
                <td>{sweep.executionsRemoved}</td>
                <td>{sweep.runsRemoved}</td>
                <td>{sweep.idempotencyKeysRemoved}</td>
                <td className="problem">{sweep.error ?? ''}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </main>
  );
}

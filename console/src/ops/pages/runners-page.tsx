/**
 * Runners with their sandbox figures (as each reported with its last heartbeat), and the
 * organizations cooled down for breaking the sandbox, which the operator may release early.
 */
import { useState } from 'react';
import { useLoad } from '../../api/use-load.ts';
import { Empty, Loading, Time } from '../../ui/states.tsx';
import { useOps } from '../context.ts';
import { OpsRefusal } from '../refusal.tsx';

interface Runner {
  id: string;
  host: string;
  pid: number;
  version: string;
  startedAt: string;
  heartbeatAt: string;
  stoppedAt: string | null;
  alive: boolean;
  sandbox: {
    isolatesLive: number;
    isolatesBusy: number;
    isolatesIdle: number;
    runsWaiting: number;
    contexts: number;
    contextsMade: number;
    contextsReused: number;
    isolatesRecycled: number;
    memoryKills: number;
    memoryBound: { mechanism: string; boundMb: number } | null;
    organizations: Array<{ orgId: string; waiting: number; busy: number }>;
  } | null;
}

interface Cooldown {
  orgId: string;
  strikes: number;
  until: string;
  reason: string;
  lastStrikeAt: string;
  active: boolean;
}

const RUNNERS = `{ runners { id host pid version startedAt heartbeatAt stoppedAt alive
  sandbox { isolatesLive isolatesBusy isolatesIdle runsWaiting contexts contextsMade contextsReused isolatesRecycled
    memoryKills memoryBound { mechanism boundMb } organizations { orgId waiting busy } } } }`;

export function RunnersPage() {
  const ops = useOps();
  const runners = useLoad(() => ops<{ runners: Runner[] }>(RUNNERS), 'runners');
  const [all, setAll] = useState(false);
  const cooldowns = useLoad(
    () =>
      ops<{ sandboxCooldowns: Cooldown[] }>(
        'query ($all: Boolean) { sandboxCooldowns(all: $all) { orgId strikes until reason lastStrikeAt active } }',
        { all },
      ),
    String(all),
  );
  const [releaseError, setReleaseError] = useState<unknown>(null);
  const release = async (orgId: string) => {
    setReleaseError(null);
    try {
      await ops('mutation ($orgId: ID!) { clearSandboxCooldown(orgId: $orgId) }', { orgId });
      await cooldowns.reload();
    } catch (caught) {
      setReleaseError(caught);
    }
  };
  return (
    <main>
      <h1>Runners</h1>
      <button type="button" onClick={() => void runners.reload()}>
        Refresh
      </button>
      {runners.state === 'loading' && <Loading what="runners" />}
      {runners.state === 'error' && <OpsRefusal error={runners.error} />}
      {runners.state === 'ready' && runners.data.runners.length === 0 && <Empty>No runner has registered.</Empty>}
      {runners.state === 'ready' && runners.data.runners.length > 0 && (
        <table className="runners">
          <thead>
            <tr>
              <th scope="col">Runner</th>
              <th scope="col">State</th>
              <th scope="col">Heartbeat</th>
              <th scope="col">Isolates (busy / idle)</th>
              <th scope="col">Runs waiting</th>
              <th scope="col">Contexts (made / reused)</th>
              <th scope="col">Recycled</th>
              <th scope="col">Memory bound (kills)</th>
              <th scope="col">Busiest organizations</th>
            </tr>
          </thead>
          <tbody>
            {runners.data.runners.map((runner) => (
              <tr key={runner.id} data-runner={runner.id}>
                <th scope="row">
                  {runner.host} pid {runner.pid}
                  <div className="muted">
                    {runner.version}, started <Time at={runner.startedAt} />
                  </div>
                </th>
                <td className={runner.alive ? 'fine' : 'muted'}>
                  {runner.alive ? 'alive' : runner.stoppedAt ? 'stopped' : 'silent'}
                </td>
                <td>
                  <Time at={runner.heartbeatAt} />
                </td>
                {runner.sandbox ? (
                  <>
                    <td>
                      {runner.sandbox.isolatesLive} ({runner.sandbox.isolatesBusy} / {runner.sandbox.isolatesIdle})
                    </td>
                    <td>{runner.sandbox.runsWaiting}</td>
                    <td>
                      {runner.sandbox.contexts} ({runner.sandbox.contextsMade} / {runner.sandbox.contextsReused})
                    </td>
                    <td>{runner.sandbox.isolatesRecycled}</td>
                    <td>
                      {runner.sandbox.memoryBound
                        ? `${runner.sandbox.memoryBound.boundMb} MiB, ${runner.sandbox.memoryBound.mechanism}`
                        : '—'}{' '}
                      ({runner.sandbox.memoryKills})
                    </td>
                    <td>
                      {runner.sandbox.organizations.length === 0
                        ? '—'
                        : runner.sandbox.organizations
                            .slice(0, 5)
                            .map((org) => `${org.orgId}: ${org.busy} busy, ${org.waiting} waiting`)
                            .join('; ')}
                    </td>
                  </>
                ) : (
                  <td colSpan={6} className="muted">
                    No sandbox report yet.
                  </td>
                )}
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <section aria-labelledby="cooldowns-heading">
        <h2 id="cooldowns-heading">Sandbox cool-downs</h2>
        <label>
          <input type="checkbox" checked={all} onChange={(event) => setAll(event.target.checked)} /> Ended ones too
        </label>
        {cooldowns.state === 'loading' && <Loading what="cool-downs" />}
        {cooldowns.state === 'error' && <OpsRefusal error={cooldowns.error} />}
        {releaseError !== null && <OpsRefusal error={releaseError} action="Releasing" />}
        {cooldowns.state === 'ready' && cooldowns.data.sandboxCooldowns.length === 0 && (
          <Empty>No organization is cooled down.</Empty>
        )}
        {cooldowns.state === 'ready' && cooldowns.data.sandboxCooldowns.length > 0 && (
          <table>
            <thead>
              <tr>
                <th scope="col">Organization</th>
                <th scope="col">Strikes</th>
                <th scope="col">Until</th>
                <th scope="col">Reason</th>
                <th scope="col">Last strike</th>
                <th scope="col">
                  <span className="visually-hidden">Release</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {cooldowns.data.sandboxCooldowns.map((cooldown) => (
                <tr key={cooldown.orgId}>
                  <th scope="row">
                    <code>{cooldown.orgId}</code>
                  </th>
                  <td>{cooldown.strikes}</td>
                  <td>
                    <Time at={cooldown.until} /> {cooldown.active ? '' : '(ended)'}
                  </td>
                  <td>{cooldown.reason}</td>
                  <td>
                    <Time at={cooldown.lastStrikeAt} />
                  </td>
                  <td>
                    {cooldown.active && (
                      <button type="button" onClick={() => void release(cooldown.orgId)}>
                        Release {cooldown.orgId}
                      </button>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </section>
    </main>
  );
}

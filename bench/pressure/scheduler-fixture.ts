/**
 * The hostile tenant's scheduler for the time-zone and cron-check scenarios: its own organization
 * with a workflow (one definition, one session) and a scheduler blob holding one schedule that
 * targets it, plus a request helper that answers the status instead of throwing (the scenarios
 * expect refusals).
 */
import type { Account } from '../client.ts';
import type { HostileSystem } from './scenario.ts';

export interface HostileScheduler {
  /** The scheduler revision the schedules live on. */
  schedulerRevisionId: string;
  /** A target the hostile account can write. */
  target: { revision_id: string; session_id: string; definition_id: string };
  /** One schedule to update in a loop. */
  scheduleId: string;
}

/** POST `path` as `account`; resolves with the status and the parsed body, whatever the status. */
export async function post(
  system: Pick<HostileSystem, 'apiUrl'>,
  account: Account,
  path: string,
  body: unknown,
  signal?: AbortSignal,
): Promise<{ status: number; body: any }> {
  const res = await fetch(`${system.apiUrl}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${account.token}` },
    body: JSON.stringify(body),
    ...(signal ? { signal } : {}),
  });
  return { status: res.status, body: await res.json().catch(() => null) };
}

async function ok(system: HostileSystem, account: Account, path: string, body: unknown): Promise<any> {
  const res = await post(system, account, path, body);
  if (res.status >= 300) throw new Error(`POST ${path}: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

const ONE = { start: 'one', nodes: { one: { processor: 'logic.code', config: { code: 'export default () => 1' } } } };

/** Makes the fixtures (see the file comment); the schedule is disabled, so nothing ever fires. */
export async function hostileScheduler(system: HostileSystem, account: Account): Promise<HostileScheduler> {
  const tag = `${process.pid}-${Date.now().toString(36)}`;
  const org = (await ok(system, account, '/v1/orgs', { alias: `hostile-${tag}` })).org;
  const flow = await ok(system, account, `/v1/blobs/${org.id}`, { type: 'svc.compute.workflow', alias: `flow-${tag}` });
  const sched = await ok(system, account, `/v1/blobs/${org.id}`, {
    type: 'svc.compute.scheduler',
    alias: `sched-${tag}`,
  });
  const rev = flow.revision.id;
  const definition = (
    await ok(system, account, `/v1/revisions/${rev}/create_definition`, { category: 'workflow', graph: ONE })
  ).definition;
  const session = (await ok(system, account, `/v1/revisions/${rev}/create_session`, {})).session;
  const target = { revision_id: rev, session_id: session.id, definition_id: definition.id };
  const schedule = (
    await ok(system, account, `/v1/revisions/${sched.revision.id}/create_schedule`, {
      cron: '0 3 * * *',
      target,
      enabled: false,
    })
  ).schedule;
  return { schedulerRevisionId: sched.revision.id, target, scheduleId: schedule.id };
}

/** Runs `step` on `parallel` loops until `signal` aborts; each loop settles its request first. */
export async function pressLoops(parallel: number, signal: AbortSignal, step: (i: number) => Promise<unknown>) {
  let n = 0;
  await Promise.all(
    Array.from({ length: parallel }, async () => {
      while (!signal.aborted) {
        try {
          await step(n++);
        } catch {
          // A refused or dropped request is part of the pressure, not a failure of the scenario.
        }
      }
    }),
  );
}

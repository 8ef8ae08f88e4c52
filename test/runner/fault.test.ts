import { setTimeout as sleep } from 'node:timers/promises';
import t from 'tap';
import { createWorkload, type Workload } from '../../bench/client.ts';
import { createMany, statusCounts, waitForEnd } from '../../bench/executions.ts';
import { startSystem, type ServiceProcess, type System } from '../../bench/system.ts';
import { createTestDatabase } from '../helpers/db.ts';
import { threadNices } from '../helpers/threads.ts';

// The fault test (docs/architecture.md, "Guarantees"): the real service as processes (control plane + two runners) on this
// file's own database; one runner is killed with SIGKILL while executions are in flight, nothing
// restarts it, and the survivor must finish every execution exactly once once the dead runner's
// leases run out. Waits are generous and bounded; no assertion is about time.

// Starting processes, the lease running out and the recovery sweep take longer than tap's default.
t.setTimeout(300_000);

const EXECUTIONS = 50;
/** Four logic.code nodes with a durable sleep in the middle, so executions are in flight for a while. */
const CODE_NODES = ['a', 'b', 'c', 'd'] as const;
const GRAPH = {
  start: 'a',
  nodes: {
    a: {
      processor: 'logic.code',
      config: { code: 'export default (input) => ({ ...input, a: true })' },
      routes: { success: 'b' },
    },
    b: {
      processor: 'logic.code',
      config: { code: 'export default (input) => ({ ...input, b: true })' },
      routes: { success: 'nap' },
    },
    nap: { processor: 'logic.sleep', config: { seconds: 1 }, routes: { success: 'c' } },
    c: {
      processor: 'logic.code',
      config: { code: 'export default (input) => ({ ...input, c: true })' },
      routes: { success: 'd' },
    },
    d: {
      processor: 'logic.code',
      config: { code: 'export default (input) => ({ ...input, d: true })' },
      routes: { success: null },
    },
  },
};

const databaseUrl = await createTestDatabase(t);
// Short leases so the survivor takes over within seconds (the engine's defaults are 10 s / 3 s / 5 s).
const system: System = await startSystem({
  runners: 2,
  databaseUrl,
  env: { RUNNER_LEASE_SECONDS: '3', RUNNER_RENEW_SECONDS: '1', RUNNER_SWEEP_SECONDS: '1', RUNNER_ORPHAN_SECONDS: '5' },
});
t.teardown(() => system.stop());

/** Polls `probe` until it returns a value; past `timeoutMs` the test fails with the processes' output. */
async function waitFor<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}\n${system.recentOutput()}`);
    await sleep(50);
  }
}

/** The runner process that holds the most running executions of `ids` right now, with their ids. */
async function busiestRunner(ids: string[]): Promise<{ runner: ServiceProcess; held: string[] } | undefined> {
  const { rows } = await system.sql.query<{ pid: number; held: string[] }>(
    `SELECT r.pid, array_agg(e.id::text) AS held
       FROM executions e JOIN runners r ON r.id = e.lease_owner
      WHERE e.id = ANY($1::uuid[]) AND e.status = 'running' AND e.lease_until > now()
      GROUP BY r.pid ORDER BY count(*) DESC LIMIT 1`,
    [ids],
  );
  const row = rows[0];
  const runner = row && system.runners.find((r) => r.pid === row.pid && r.running());
  return runner ? { runner, held: row.held } : undefined;
}

async function orgRunningHeld(workload: Workload): Promise<number> {
  const res = await fetch(`${system.apiUrl}/v1/orgs/${workload.orgId}/limits`, {
    headers: { authorization: `Bearer ${workload.account.token}` },
  });
  if (res.status !== 200) throw new Error(`org limits: ${res.status}`);
  const body = (await res.json()) as { groups: { limits: { id: string; held?: number }[] }[] };
  return body.groups.flatMap((g) => g.limits).find((l) => l.id === 'workflow.running_executions_per_org')!.held!;
}

t.test(
  'kill -9 of one of two runners with 50 executions in flight: every execution ends once, the slots come back',
  async (t) => {
    const workload = await createWorkload(system, GRAPH, { sessions: 5, quota: 1000 });
    t.equal(system.runners.length, 2, 'two runner processes');

    const ids = await createMany(system, [workload], { count: EXECUTIONS, window: 10 });
    t.equal(new Set(ids).size, EXECUTIONS, `${EXECUTIONS} executions created`);

    // Freeze the busiest runner first, so the executions it holds cannot move on between reading
    // them and the kill; a moment lets statements it already sent finish in PostgreSQL.
    const { victim, held } = await waitFor('a runner holding running executions', async () => {
      const busiest = await busiestRunner(ids);
      if (!busiest) return undefined;
      busiest.runner.proc.kill('SIGSTOP');
      await sleep(500);
      const again = await busiestRunner(ids);
      if (again?.runner !== busiest.runner) {
        busiest.runner.proc.kill('SIGCONT');
        return undefined;
      }
      return { victim: busiest.runner, held: again.held };
    });
    victim.proc.kill('SIGKILL');
    const exit = await victim.exited;
    t.equal(exit.signal, 'SIGKILL', `runner ${victim.pid} was killed with ${held.length} running execution(s)`);
    t.ok(held.length > 0, 'it held executions in flight');
    const survivor = system.runners.find((r) => r !== victim)!;

    const open = await waitForEnd(system.sql, ids, 180_000);
    t.equal(open, 0, 'every execution reached a terminal state');
    t.same(
      await statusCounts(system.sql, ids),
      { succeeded: EXECUTIONS },
      'and succeeded: a crash costs a node re-run, not the execution',
    );
    t.ok(survivor.running(), 'the survivor still runs');
    if (process.platform === 'linux') {
      // RUNNER_NICE's default: every thread, the engine workers and isolate threads included.
      const nices = await threadNices(survivor.pid);
      t.ok(
        nices.every((nice) => nice >= 10),
        `the survivor's threads yield the CPU (nice values ${[...new Set(nices)].join(', ')})`,
      );
    }

    // Taken over, not finished by the victim before it died: the survivor's claim of each recorded
    // an execution.resumed event with reason `recovered`.
    const recoveries = async (executionIds: string[]) => {
      const { rows } = await system.sql.query<{ execution_id: string; n: number }>(
        `SELECT e.id::text AS execution_id, count(v.id)::int AS n
         FROM executions e LEFT JOIN execution_events v
           ON v.execution_id = e.id AND v.kind = 'execution.resumed' AND v.attributes->>'reason' = 'recovered'
        WHERE e.id = ANY($1::uuid[]) GROUP BY e.id`,
        [executionIds],
      );
      return new Map(rows.map((r) => [r.execution_id, r.n]));
    };
    const heldRecoveries = await recoveries(held);
    t.same(
      held.filter((id) => !(heldRecoveries.get(id)! >= 1)),
      [],
      'each execution the victim held was taken over (execution.resumed, reason recovered)',
    );
    const { rows: leftovers } = await system.sql.query(
      'SELECT id FROM executions WHERE id = ANY($1::uuid[]) AND lease_owner IS NOT NULL',
      [ids],
    );
    t.same(leftovers, [], 'no lease is left behind');

    // Exactly once where it counts: one execution.finished per execution, in both event logs.
    const { rows: finished } = await system.sql.query<{ execution_id: string; n: number }>(
      `SELECT execution_id::text, count(*)::int AS n FROM execution_events
      WHERE execution_id = ANY($1::uuid[]) AND kind = 'execution.finished' GROUP BY execution_id`,
      [ids],
    );
    t.equal(finished.length, EXECUTIONS, 'every execution has its execution.finished event');
    t.same(
      finished.filter((r) => r.n !== 1),
      [],
      'none finished twice (execution events)',
    );
    const { rows: sessionFinished } = await system.sql.query<{ execution_id: string; n: number }>(
      `SELECT execution_id::text, count(*)::int AS n FROM session_events
      WHERE execution_id = ANY($1::uuid[]) AND kind = 'execution.finished' GROUP BY execution_id`,
      [ids],
    );
    t.equal(sessionFinished.length, EXECUTIONS, 'every execution has its session event');
    t.same(
      sessionFinished.filter((r) => r.n !== 1),
      [],
      'none finished twice (session events)',
    );

    // At-least-once is about a node's side effects: the node the victim was running may have run
    // again under the survivor (a second node.started, at most one per recovery). Its result is
    // persisted with its node.finished event under the lease, so a code node's outcome is recorded
    // exactly once; the dead runner's write, had it come, would have been refused.
    const { rows: nodes } = await system.sql.query<{
      execution_id: string;
      node: string;
      started: number;
      finished: number;
    }>(
      `SELECT execution_id::text, node,
            count(*) FILTER (WHERE kind = 'node.started')::int AS started,
            count(*) FILTER (WHERE kind = 'node.finished')::int AS finished
       FROM execution_events
      WHERE execution_id = ANY($1::uuid[]) AND node = ANY($2::text[])
      GROUP BY execution_id, node`,
      [ids, [...CODE_NODES]],
    );
    t.equal(nodes.length, EXECUTIONS * CODE_NODES.length, 'every code node of every execution ran');
    t.same(
      nodes.filter((r) => r.finished !== 1),
      [],
      "each code node's node.finished is recorded once",
    );
    const reruns = new Map<string, number>();
    for (const r of nodes) reruns.set(r.execution_id, (reruns.get(r.execution_id) ?? 0) + r.started - 1);
    const allRecoveries = await recoveries(ids);
    t.comment(
      `recoveries: ${[...allRecoveries.values()].reduce((a, b) => a + b, 0)}, code node re-runs: ${[...reruns.values()].reduce((a, b) => a + b, 0)}`,
    );
    t.same(
      [...reruns].filter(([id, n]) => n > allRecoveries.get(id)!),
      [],
      'node re-runs never exceed the recoveries (one node in flight per crash)',
    );

    const { rows: outputs } = await system.sql.query<{ output: Record<string, unknown> }>(
      'SELECT output FROM executions WHERE id = ANY($1::uuid[])',
      [ids],
    );
    t.ok(
      outputs.every(({ output }) => output.a && output.b && output.c && output.d),
      'each output went through all four code nodes',
    );

    t.equal(await orgRunningHeld(workload), 0, 'Get Organization Limits: running_executions_per_org held is back to 0');
  },
);

/**
 * Driving executions through a running system and reading what happened from SQL: the benchmark
 * and the fault test share these. Times come from the database's clock only (`created_at` is the
 * create transaction's start, event `at` is `clock_timestamp()`), so no clock of a process skews them.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type pg from 'pg';
import { connectRpc, createExecution, type RpcConnection, type Workload } from './client.ts';
import type { System } from './system.ts';

export interface CreateOptions {
  /** Executions in all, spread round robin over the workloads (and their sessions). */
  count: number;
  /** Calls in flight per workload's socket. */
  window: number;
  /**
   * Calls in flight in all instead: the i-th execution goes to workload i mod n, whichever lane
   * is free sends it. So 1,000 organizations get the same creation pressure as one (a window per
   * workload would put 1,000 creates in flight at once).
   */
  inFlight?: number;
  /** Unset: as fast as the window allows. Set: at most this many creates per second in all. */
  ratePerSecond?: number;
  /** Input of the `i`-th execution (default `{n: i}`). */
  input?: (i: number) => unknown;
}

/**
 * Creates `count` executions over one JSON-RPC socket per workload, each socket keeping up to
 * `window` calls in flight. Returns their ids in creation order; any refused create throws.
 */
export async function createMany(
  system: Pick<System, 'wsUrl'>,
  workloads: readonly Workload[],
  options: CreateOptions,
): Promise<string[]> {
  // One connection per account: workloads of one account (createOrgWorkloads) share it.
  const byAccount = new Map<string, Promise<RpcConnection>>();
  for (const w of workloads)
    if (!byAccount.has(w.account.token)) byAccount.set(w.account.token, connectRpc(system, w.account));
  const sockets: RpcConnection[] = await Promise.all(workloads.map((w) => byAccount.get(w.account.token)!));
  const ids: string[] = new Array(options.count);
  let next = 0;
  const started = performance.now();
  try {
    const lane = async (socket: RpcConnection, workload: Workload) => {
      for (;;) {
        const i = next++;
        if (i >= options.count) return;
        if (options.ratePerSecond) {
          const due = started + (i * 1000) / options.ratePerSecond;
          const wait = due - performance.now();
          if (wait > 0) await sleep(wait);
        }
        ids[i] = await createExecution(
          socket,
          workload,
          Math.floor(i / workloads.length),
          options.input?.(i) ?? { n: i },
        );
      }
    };
    const sharedLane = async () => {
      for (;;) {
        const i = next++;
        if (i >= options.count) return;
        const w = i % workloads.length;
        ids[i] = await createExecution(
          sockets[w]!,
          workloads[w]!,
          Math.floor(i / workloads.length),
          options.input?.(i) ?? { n: i },
        );
      }
    };
    if (options.inFlight !== undefined) await Promise.all(Array.from({ length: options.inFlight }, sharedLane));
    else
      await Promise.all(
        workloads.flatMap((workload, w) => Array.from({ length: options.window }, () => lane(sockets[w]!, workload))),
      );
  } finally {
    for (const socket of new Set(sockets)) socket.close();
  }
  return ids;
}

/** How many of `ids` are in each status. */
export async function statusCounts(sql: pg.Pool, ids: readonly string[]): Promise<Record<string, number>> {
  const { rows } = await sql.query<{ status: string; n: number }>(
    'SELECT status, count(*)::int AS n FROM executions WHERE id = ANY($1::uuid[]) GROUP BY status ORDER BY status',
    [ids],
  );
  return Object.fromEntries(rows.map((r) => [r.status, r.n]));
}

/**
 * Waits until every one of `ids` has ended (polling SQL), or `timeoutMs` passed. Returns how many
 * are still unended (0 on success); the caller decides whether that is a failure.
 */
export async function waitForEnd(sql: pg.Pool, ids: readonly string[], timeoutMs: number): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { rows } = await sql.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM executions WHERE id = ANY($1::uuid[]) AND ended_at IS NULL',
      [ids],
    );
    const open = rows[0]!.n;
    if (open === 0 || Date.now() > deadline) return open;
    await sleep(200);
  }
}

/**
 * The span of a batch: its first `created_at` (or `from`, a database timestamp) to its last
 * `ended_at`, and how many succeeded in it.
 */
export async function batchSpan(
  sql: pg.Pool,
  ids: readonly string[],
  from?: string,
): Promise<{ seconds: number; succeeded: number; ended: number }> {
  const { rows } = await sql.query<{ seconds: number; succeeded: number; ended: number }>(
    `SELECT extract(epoch FROM max(ended_at) - coalesce($2::timestamptz, min(created_at)))::float8 AS seconds,
            count(*) FILTER (WHERE status = 'succeeded')::int AS succeeded,
            count(ended_at)::int AS ended
       FROM executions WHERE id = ANY($1::uuid[])`,
    [ids, from ?? null],
  );
  return rows[0]!;
}

/** Per execution of `ids` (ended ones): create → first `node.started`, and create → end, in ms. */
export async function executionLatencies(
  sql: pg.Pool,
  ids: readonly string[],
): Promise<{ toStart: number[]; toEnd: number[] }> {
  const { rows } = await sql.query<{ to_start: number | null; to_end: number }>(
    `SELECT extract(epoch FROM s.at - e.created_at)::float8 * 1000 AS to_start,
            extract(epoch FROM e.ended_at - e.created_at)::float8 * 1000 AS to_end
       FROM executions e
       LEFT JOIN LATERAL (SELECT at FROM execution_events v
                           WHERE v.execution_id = e.id AND v.kind = 'node.started' ORDER BY v.id LIMIT 1) s ON true
      WHERE e.id = ANY($1::uuid[]) AND e.ended_at IS NOT NULL`,
    [ids],
  );
  return {
    toStart: rows.flatMap((r) => (r.to_start === null ? [] : [r.to_start])),
    toEnd: rows.map((r) => r.to_end),
  };
}

/**
 * Per node run of `ids`: `node.started` → its `node.finished` (the processor's run as the engine
 * sees it) and `node.started` → the next `node.started` of the same execution (a whole step: run,
 * persistence and the hand-over to the next node), in ms.
 */
export async function nodeTimings(sql: pg.Pool, ids: readonly string[]): Promise<{ run: number[]; step: number[] }> {
  const { rows } = await sql.query<{ kind: string; ms: number }>(
    `WITH ev AS (
       SELECT kind, at, lead(kind) OVER w AS next_kind, lead(at) OVER w AS next_at
         FROM execution_events
        WHERE execution_id = ANY($1::uuid[]) AND kind IN ('node.started', 'node.finished', 'node.failed')
       WINDOW w AS (PARTITION BY execution_id ORDER BY id)),
     starts AS (
       SELECT at, lead(at) OVER (PARTITION BY execution_id ORDER BY id) AS next_at
         FROM execution_events WHERE execution_id = ANY($1::uuid[]) AND kind = 'node.started')
     SELECT 'run' AS kind, extract(epoch FROM next_at - at)::float8 * 1000 AS ms
       FROM ev WHERE kind = 'node.started' AND next_kind IN ('node.finished', 'node.failed')
     UNION ALL
     SELECT 'step', extract(epoch FROM next_at - at)::float8 * 1000 FROM starts WHERE next_at IS NOT NULL`,
    [ids],
  );
  return {
    run: rows.filter((r) => r.kind === 'run').map((r) => r.ms),
    step: rows.filter((r) => r.kind === 'step').map((r) => r.ms),
  };
}

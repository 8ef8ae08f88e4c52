/**
 * A year of history (docs/benchmarks.md, "A year of history"), on a system of its own with one
 * runner at its defaults. Prints, asserts nothing: the everyday calls of a tenant with little data
 * and of a tenant whose own data is large, three-node throughput and create → first node start,
 * first on the small database, then again once it has been grown by SQL to a year's history; then
 * the retention sweep of the expired half (paced by RETENTION_SWEEP_DUTY_PERCENT, which the
 * children read from this process's environment) with another tenant's create_execution beside
 * it, the tables' free space after it, and schedule fire lag among the standing schedules.
 *
 *   ./node_modules/.bin/node --no-node-snapshot bench/volume.ts [--scale 0.1 --samples 100]
 * `npm run bench -- --volume` runs only it (`--volume-scale` sets the scale).
 *
 * What the growth fakes (bench/volume-state.ts): the rows are written by INSERT … SELECT in one
 * session with triggers off (`session_replication_role = replica`), and the counters the triggers
 * keep are then set from the rows; executions are all ended, with ten execution events each, in
 * creation order over the last 180 days (so about half are past the 90-day retention); their ids
 * are time-ordered by insertion, not by their faked creation time. Nothing of the growth went
 * through the API, so no idempotency key, pg-boss job or audit row comes with it. The database is
 * vacuumed and analysed after the growth, as autovacuum would have done over a year.
 */
import { request } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import '../shared/db/embedded.ts';
import { command, connectRpc, createExecution, createWorkload, setOverride, type Workload } from './client.ts';
import { batchSpan, createMany, executionLatencies, waitForEnd } from './executions.ts';
import { fmt, summarize, table, type Summary } from './stats.ts';
import { BENCH_GRAPH } from './workflow.ts';
import { runSection, type System } from './system.ts';
import { growState, stateCounts, volumeShape, type VolumeShape } from './volume-state.ts';
import { defaultDutyPercent, RETENTION_LOCK } from '../shared/retention/recorded-sweep.ts';
import { getPriority } from 'node:os';
import { autogroupNiceOf } from '../shared/priority.ts';

const { values: args } = parseArgs({
  options: {
    scale: { type: 'string', default: '0.1' },
    samples: { type: 'string', default: '100' },
    // Only the grown state's retention rows: the sweep beside another tenant's creates, and the
    // tables after it (a quicker run when comparing sweep settings).
    'retention-only': { type: 'boolean', default: false },
  },
});
const SCALE = Number(args.scale);
const SAMPLES = Math.max(10, Number(args.samples));
const RETENTION_ONLY = args['retention-only'];
/** Calls of the other tenant before the sweep, at least (the retention row's idle p99). */
const RETENTION_IDLE_SAMPLES = 300;
/** Executions of each throughput batch. */
const BATCH = 600;
/** Schedules firing every minute during the fire-lag window. */
const FIRING = 100;

const log = (message: string) => process.stderr.write(`[bench volume] ${message}\n`);

async function rest(system: System, token: string, method: string, path: string, body?: unknown): Promise<any> {
  const res = await fetch(`${system.apiUrl}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const parsed = (await res.json()) as any;
  if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(parsed)}`);
  return parsed;
}

/** `count` sequential calls of `call`, each timed (ms). */
async function timed(count: number, call: (i: number) => Promise<unknown>): Promise<Summary> {
  const samples: number[] = [];
  for (let i = 0; i < count; i++) {
    const started = performance.now();
    await call(i);
    samples.push(performance.now() - started);
  }
  return summarize(samples);
}

/** The tenants the figures are about: one with little data, one whose own data grows large. */
interface Tenants {
  quiet: Workload;
  big: Workload;
  /** A session of `big` holding a large graph, and one holding many executions and events. */
  graphSession: string;
  historySession: string;
}

/**
 * The cursor that answers the last page of a session's events, as a client tailing it holds: the
 * walk to it is not timed.
 */
async function tailCursor(system: System, w: Workload, sessionId: string): Promise<string | undefined> {
  let cursor: string | undefined;
  let previous: string | undefined;
  for (;;) {
    const page = await command(system, w.account, w.revisionId, 'list_session_events', {
      session_id: sessionId,
      limit: 200,
      ...(cursor === undefined ? {} : { cursor }),
    });
    if (page.cursor === null) return previous;
    previous = cursor;
    cursor = page.cursor;
  }
}

/** Every figure of one state, by name. */
type Figures = Map<string, Summary | number>;

async function measure(system: System, t: Tenants): Promise<Figures> {
  const figures: Figures = new Map();
  const { quiet, big } = t;
  const rpc = await connectRpc(system, quiet.account);
  const bigRpc = await connectRpc(system, big.account);
  try {
    const created: string[] = [];
    figures.set(
      'create_execution (small tenant)',
      await timed(SAMPLES, async (i) => created.push(await createExecution(rpc, quiet, i))),
    );
    await waitForEnd(system.sql, created, 120_000);
    const { toStart } = await executionLatencies(system.sql, created);
    figures.set('create → first node start (small tenant)', summarize(toStart));
    const one = created[0]!;
    figures.set(
      'get_execution (small tenant)',
      await timed(SAMPLES, () =>
        command(system, quiet.account, quiet.revisionId, 'get_execution', { execution_id: one }),
      ),
    );
    figures.set(
      'list_executions (small tenant)',
      await timed(SAMPLES, () =>
        command(system, quiet.account, quiet.revisionId, 'list_executions', { session_id: quiet.sessionIds[0] }),
      ),
    );
    const quietTail = await tailCursor(system, quiet, quiet.sessionIds[0]!);
    figures.set(
      'list_session_events, tail (small tenant)',
      await timed(SAMPLES, () =>
        command(system, quiet.account, quiet.revisionId, 'list_session_events', {
          session_id: quiet.sessionIds[0],
          ...(quietTail === undefined ? {} : { cursor: quietTail }),
        }),
      ),
    );
    figures.set(
      'Get Revision with held (small tenant)',
      await timed(SAMPLES, () => rest(system, quiet.account.token, 'GET', `/v1/revisions/${quiet.revisionId}`)),
    );

    figures.set(
      'create_execution in a session of many (large tenant)',
      await timed(SAMPLES, (i) =>
        bigRpc.call('create_execution', {
          revision_id: big.revisionId,
          session_id: t.historySession,
          definition_id: big.definitionId,
          input_data: { n: i },
        }),
      ),
    );
    const bigTail = await tailCursor(system, big, t.historySession);
    figures.set(
      'list_session_events, tail of a big idle session (large tenant)',
      await timed(SAMPLES, () =>
        command(system, big.account, big.revisionId, 'list_session_events', {
          session_id: t.historySession,
          ...(bigTail === undefined ? {} : { cursor: bigTail }),
        }),
      ),
    );
    figures.set(
      'Get Revision with held, many sessions (large tenant)',
      await timed(SAMPLES, () => rest(system, big.account.token, 'GET', `/v1/revisions/${big.revisionId}`)),
    );
    figures.set(
      'create_session in a revision of many (large tenant)',
      await timed(SAMPLES, () => command(system, big.account, big.revisionId, 'create_session', {})),
    );
    figures.set(
      'query_session_graph from a label with where (large tenant)',
      await timed(SAMPLES, (i) =>
        command(system, big.account, big.revisionId, 'query_session_graph', {
          session_id: t.graphSession,
          // One node matches, in both states (names are unique; the small graph has 100).
          query: { start: { label: 'person', where: { name: `n${i % 100}` } } },
        }),
      ),
    );

    // Three-node throughput: a batch created as fast as 8 calls in flight allow, run by the runner.
    const ids = await createMany(system, [quiet], { count: BATCH, window: 8 });
    await waitForEnd(system.sql, ids, 180_000);
    const span = await batchSpan(system.sql, ids);
    figures.set('three-node executions per second', span.succeeded / span.seconds);
  } finally {
    rpc.close();
    bigRpc.close();
  }
  return figures;
}

/** The graph of the large tenant's graph session: `count` `person` nodes, each `k` one of 0..49. */
async function addGraph(system: System, sessionId: string, from: number, count: number): Promise<void> {
  await system.sql.query(
    `INSERT INTO graph_elements (session_id, id, kind, label, properties)
     SELECT $1::uuid, 'p' || i, 'node', 'person', jsonb_build_object('k', i % 50, 'name', 'n' || i)
       FROM generate_series($2::int, $2::int + $3::int - 1) AS i`,
    [sessionId, from, count],
  );
}

/**
 * One operations GraphQL call, over node:http: a sweep at full scale can take minutes, past the
 * five minutes fetch waits for response headers.
 */
function opsQuery(system: System, query: string): Promise<any> {
  const body = JSON.stringify({ query });
  return new Promise((resolve, reject) => {
    const req = request(
      system.opsUrl,
      {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
          authorization: `Bearer ${system.opsToken}`,
        },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => {
          try {
            resolve(JSON.parse(text));
          } catch (error) {
            reject(error);
          }
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** The sweep of the expired executions, timed, with the small tenant's create_execution p99 beside it. */
async function retention(
  system: System,
  quiet: Workload,
): Promise<{ seconds: number; removed: number; idle: Summary; during: Summary; backendNice: number | null }> {
  const rpc = await connectRpc(system, quiet.account);
  try {
    let i = 0;
    // The idle p99 is the ratio's divisor: of 100 calls it is their second slowest, and it read
    // 10.5 and 20.6 ms in two runs at the same size; 300 calls at least hold it better.
    const idle = await timed(Math.max(SAMPLES, RETENTION_IDLE_SAMPLES), () => createExecution(rpc, quiet, i++));
    const samples: number[] = [];
    let sweeping = true;
    const beside = (async () => {
      while (sweeping) {
        const started = performance.now();
        await createExecution(rpc, quiet, i++);
        samples.push(performance.now() - started);
        await sleep(20);
      }
    })();
    const started = performance.now();
    const answering = opsQuery(system, 'mutation { runRetentionSweep { status executionsRemoved error } }');
    const backendNice = await sweepBackendNice(system);
    const answer = await answering;
    const seconds = (performance.now() - started) / 1000;
    sweeping = false;
    await beside;
    const sweep = answer.data?.runRetentionSweep;
    if (sweep?.status !== 'completed') throw new Error(`retention sweep: ${JSON.stringify(answer)}`);
    return { seconds, removed: Number(sweep.executionsRemoved), idle, during: summarize(samples), backendNice };
  } finally {
    rpc.close();
  }
}

/**
 * The nice value of the backend holding the sweep lock, once it holds it (this process and the
 * bench's server share the host); null when the sweep ended before it was seen.
 */
let backendAutogroup: number | null = null;
async function sweepBackendNice(system: System): Promise<number | null> {
  for (let i = 0; i < 200; i++) {
    const { rows } = await system.sql.query<{ pid: number }>(
      `SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 2
          AND classid = $1::oid AND objid = $2::oid`,
      [...RETENTION_LOCK],
    );
    if (rows[0]) {
      await sleep(200); // past the lock, the sweep sets its backend's priority before its first batch
      backendAutogroup = autogroupNiceOf(rows[0].pid);
      try {
        return getPriority(rows[0].pid);
      } catch {
        return null;
      }
    }
    await sleep(10);
  }
  return null;
}

/** Size and free space of the tables retention empties, after VACUUM (pgstattuple when the server has it). */
async function freeSpace(system: System): Promise<string> {
  await system.sql.query('VACUUM executions, execution_events');
  const hasStattuple = await system.sql
    .query('CREATE EXTENSION IF NOT EXISTS pgstattuple')
    .then(() => true)
    .catch(() => false);
  const parts: string[] = [];
  for (const name of ['executions', 'execution_events']) {
    const { rows } = await system.sql.query<{ size: string; free: number | null }>(
      `SELECT pg_size_pretty(pg_table_size($1::regclass)) AS size,
              ${hasStattuple ? '(SELECT free_percent FROM pgstattuple($1::regclass))' : 'NULL::float8'} AS free`,
      [name],
    );
    parts.push(`${name} ${rows[0]!.size}${rows[0]!.free === null ? '' : `, ${fmt(Number(rows[0]!.free), 0)}% free`}`);
  }
  return parts.join('; ');
}

/**
 * Fire lag of FIRING schedules due every minute, each at a second of its own (a couple due each
 * second, as many schedules spread over a day are), among the standing ones, over one minute.
 */
async function fireLag(system: System, quiet: Workload, schedulerRev: string): Promise<Summary> {
  const target = { revision_id: quiet.revisionId, session_id: quiet.sessionIds[1], definition_id: quiet.definitionId };
  const ids: string[] = [];
  for (let i = 0; i < FIRING; i++)
    ids.push(
      (await command(system, quiet.account, schedulerRev, 'create_schedule', { cron: `${i % 60} * * * * *`, target }))
        .schedule.id,
    );
  // One whole minute of fires, from the first boundary after every schedule fired once (a first
  // fire's job is sent by its create, which wakes no runner: it waits for the next poll), and a
  // few seconds for the last to land.
  const start = Math.ceil((Date.now() + 61_000) / 60_000) * 60_000;
  await sleep(start + 60_000 + 5_000 - Date.now());
  const { rows } = await system.sql.query<{ ms: number }>(
    `SELECT extract(epoch FROM (e.created_at - r.due_at)) * 1000 AS ms
       FROM schedule_runs r JOIN executions e ON e.id = r.execution_id
      WHERE r.schedule_id = ANY($1::uuid[]) AND r.due_at >= to_timestamp($2 / 1000.0)
        AND r.due_at < to_timestamp($2 / 1000.0 + 60)`,
    [ids, start],
  );
  await system.sql.query('UPDATE schedules SET enabled = false, next_fire_at = NULL WHERE id = ANY($1::uuid[])', [ids]);
  return summarize(rows.map((r) => Number(r.ms)));
}

function cell(value: Summary | number | undefined, digits = 2): string {
  if (value === undefined) return '-';
  return typeof value === 'number' ? fmt(value, 0) : `${fmt(value.p50, digits)} ms`;
}

function ratio(small: Summary | number | undefined, large: Summary | number | undefined): string {
  if (small === undefined || large === undefined) return '-';
  const a = typeof small === 'number' ? small : small.p50;
  const b = typeof large === 'number' ? large : large.p50;
  return `x${fmt(b / a, 2)}`;
}

async function main(system: System): Promise<string> {
  const shape: VolumeShape = volumeShape(SCALE);
  const quiet = await createWorkload(system, BENCH_GRAPH, { sessions: 4, quota: 1_000_000_000 });
  const big = await createWorkload(system, BENCH_GRAPH, { sessions: 2, quota: 1_000_000_000 });
  await setOverride(system, 'workflow.sessions_per_revision', 'blob', big.blobId, 1_000_000_000);
  const [historySession, graphSession] = big.sessionIds as [string, string];
  const tenants: Tenants = { quiet, big, historySession, graphSession };
  await addGraph(system, graphSession, 0, 100);
  const schedBlob = await rest(system, quiet.account.token, 'POST', `/v1/blobs/${quiet.orgId}`, {
    type: 'svc.compute.scheduler',
    alias: `bench-volume-scheduler-${Date.now().toString(36)}`,
  });
  await setOverride(system, 'scheduler.schedules_per_revision', 'blob', schedBlob.blob.id, 1_000_000_000);

  // Warm-up: the processes' code is optimised and their pools filled before anything is timed.
  const warm = await createMany(system, [quiet, big], { count: 400, window: 8 });
  await waitForEnd(system.sql, warm, 120_000);
  log('the small state');
  const small = RETENTION_ONLY ? (new Map() as Figures) : await measure(system, tenants);

  log(`growing the database to a year's history at scale ${SCALE} (bench/volume-state.ts)`);
  const grownAt = performance.now();
  await growState(system.sql, shape, {
    userId: quiet.account.userId,
    big: { revisionId: big.revisionId, sessionId: historySession, orgId: big.orgId, blobId: big.blobId },
    bigDefinitionId: big.definitionId,
    schedulerRevisionId: schedBlob.revision.id,
    target: { revisionId: quiet.revisionId, sessionId: quiet.sessionIds[1]!, definitionId: quiet.definitionId },
  });
  await addGraph(system, graphSession, 100, shape.graphElements);
  await system.sql.query('VACUUM ANALYZE');
  const growSeconds = (performance.now() - grownAt) / 1000;
  const counts = await stateCounts(system.sql);
  log(`grown in ${fmt(growSeconds, 0)} s: ${counts}`);

  log('the large state');
  const large = RETENTION_ONLY ? (new Map() as Figures) : await measure(system, tenants);
  log(`fire lag among ${shape.schedules} standing schedules`);
  const lag = RETENTION_ONLY ? undefined : await fireLag(system, quiet, schedBlob.revision.id);
  log('the retention sweep of the expired executions');
  const sweep = await retention(system, quiet);
  const space = await freeSpace(system);

  const rows: string[][] = [['figure (p50 unless said)', 'small', 'large', 'large / small', 'target']];
  for (const [name, value] of small) {
    const target = name.includes('per second') ? '>= x0.9' : 'p50 <= x1.3';
    rows.push([name, cell(value), cell(large.get(name)), ratio(value, large.get(name)), target]);
  }
  if (lag) {
    rows.push([
      `fire lag among ${shape.schedules} schedules, p50 / p99`,
      '-',
      `${fmt(lag.p50)} / ${fmt(lag.p99)} ms (${lag.count} fires)`,
      '-',
      'p99 <= 100 ms',
    ]);
  }
  // The children read RETENTION_SWEEP_DUTY_PERCENT and RETENTION_SWEEP_NICE from this process's
  // environment (bench/system.ts); unset, the duty follows the backend's priority.
  const lowered = (sweep.backendNice ?? 0) > 0;
  const duty = process.env.RETENTION_SWEEP_DUTY_PERCENT || String(defaultDutyPercent({ lowered }));
  rows.push([
    `retention sweep (duty ${duty} %, backend at nice ${sweep.backendNice ?? '?'}, its autogroup at ${backendAutogroup ?? '-'}): ${sweep.removed} expired executions`,
    '-',
    `${fmt(sweep.seconds, 1)} s (${fmt(sweep.removed / sweep.seconds, 0)}/s)`,
    '-',
    `1,000,000 in <= 60 s`,
  ]);
  rows.push([
    'create_execution p99 of another tenant: idle / during the sweep',
    '-',
    `${fmt(sweep.idle.p99)} / ${fmt(sweep.during.p99)} ms (${sweep.during.count} calls)`,
    `x${fmt(sweep.during.p99 / sweep.idle.p99, 2)}`,
    '<= x1.5',
  ]);
  rows.push(['tables after the sweep (VACUUM)', '-', space, '-', 'space reused']);
  return `scale ${SCALE}: ${counts}; grown by SQL in ${fmt(growSeconds, 0)} s\n${table(rows)}`;
}

await runSection(1, main);

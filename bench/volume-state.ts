/**
 * The large state of bench/volume.ts, built by SQL: a year's history at `scale` (1 = the year of
 * history docs/benchmarks.md describes: 10,000 organizations, 100,000 sessions, 2,000,000 ended
 * executions with 20,000,000 execution events, 5,000,000 session events, 1,000,000 session
 * objects, 50,000 schedules with 1,000,000 runs; one tenant with a 10,000-session revision, a
 * 100,000-execution session and a 60,000-element graph). What it fakes is listed in bench/volume.ts.
 */
import type pg from 'pg';
import { BENCH_GRAPH } from './workflow.ts';

/** How many rows of each kind the growth writes. */
export interface VolumeShape {
  orgs: number;
  /** Sessions per organization (one workflow revision each). */
  sessionsPerOrg: number;
  executionsPerSession: number;
  /** Execution events per execution. */
  eventsPerExecution: number;
  sessionEventsPerSession: number;
  objectsPerSession: number;
  schedules: number;
  runsPerSchedule: number;
  /** The large tenant: sessions of its revision, executions and session events of one session, graph elements. */
  bigSessions: number;
  bigExecutions: number;
  bigSessionEvents: number;
  graphElements: number;
}

/** The shape at `scale` (each count at least 1). */
export function volumeShape(scale: number): VolumeShape {
  if (!(scale > 0)) throw new RangeError('the scale must be a positive number');
  const n = (full: number) => Math.max(1, Math.round(full * scale));
  return {
    orgs: n(10_000),
    sessionsPerOrg: 10,
    executionsPerSession: 20,
    eventsPerExecution: 10,
    sessionEventsPerSession: 50,
    objectsPerSession: 10,
    schedules: n(50_000),
    runsPerSchedule: 20,
    bigSessions: n(10_000),
    bigExecutions: n(100_000),
    bigSessionEvents: n(250_000),
    graphElements: n(60_000),
  };
}

/** Where the growth puts the large tenant's rows and the standing schedules. */
export interface GrowContext {
  /** Owner of the fake organizations and writer of the schedules. */
  userId: string;
  big: { revisionId: string; sessionId: string; orgId: string; blobId: string };
  bigDefinitionId: string;
  /** The scheduler revision that holds the standing schedules, and what they would run. */
  schedulerRevisionId: string;
  target: { revisionId: string; sessionId: string; definitionId: string };
}

// The ten events of a three-node execution, in order.
const EVENTS = `(VALUES (1, 'execution.started', NULL), (2, 'node.started', 'a'), (3, 'node.finished', 'a'),
                        (4, 'node.started', 'b'), (5, 'node.finished', 'b'), (6, 'node.started', 'c'),
                        (7, 'node.finished', 'c'), (8, 'execution.progress', NULL), (9, 'execution.output', NULL),
                        (10, 'execution.finished', NULL)) AS k (i, kind, node)`;

/**
 * Grows the database (see the module comment): one session with triggers off, each kind of row
 * one INSERT … SELECT in creation order, then the counters the triggers would have kept.
 */
export async function growState(pool: pg.Pool, shape: VolumeShape, ctx: GrowContext): Promise<void> {
  const client = await pool.connect();
  const tag = Date.now().toString(36);
  const q = (text: string, params: unknown[] = []) => client.query(text, params);
  try {
    await q('SET session_replication_role = replica');
    await q("SET work_mem = '64MB'");
    // Ids first, so every later insert can name its parents.
    await q(`CREATE TEMP TABLE vol_org AS SELECT uuid_v7() AS id, i AS n FROM generate_series(1, $1::int) i`, [
      shape.orgs,
    ]);
    await q(`INSERT INTO orgs (id, alias, owner_id) SELECT id, 'vol-' || $1 || '-' || n, $2::uuid FROM vol_org`, [
      tag,
      ctx.userId,
    ]);
    await q(`CREATE TEMP TABLE vol_blob AS SELECT uuid_v7() AS id, o.id AS org_id, o.n FROM vol_org o`);
    await q(
      `INSERT INTO blobs (id, alias, org_id, type) SELECT id, 'vol-' || $1 || '-' || n, org_id, 'svc.compute.workflow' FROM vol_blob`,
      [tag],
    );
    await q(
      `CREATE TEMP TABLE vol_rev AS SELECT uuid_v7() AS id, b.id AS blob_id, b.org_id, uuid_v7() AS definition_id FROM vol_blob b`,
    );
    await q(`INSERT INTO revisions (id, blob_id, number) SELECT id, blob_id, 1 FROM vol_rev`);
    await q(
      `INSERT INTO definitions (id, alias, revision_id, category, graph) SELECT definition_id, 'bench', id, 'workflow', $1::jsonb FROM vol_rev`,
      [JSON.stringify(BENCH_GRAPH)],
    );
    await q(
      `CREATE TEMP TABLE vol_session AS
       SELECT uuid_v7() AS id, r.id AS revision_id, r.org_id, r.blob_id, r.definition_id
         FROM vol_rev r CROSS JOIN generate_series(1, $1::int)`,
      [shape.sessionsPerOrg],
    );
    await q(`INSERT INTO sessions (id, revision_id) SELECT id, revision_id FROM vol_session`);
    await q(`INSERT INTO sessions (revision_id) SELECT $1::uuid FROM generate_series(1, $2::int)`, [
      ctx.big.revisionId,
      shape.bigSessions,
    ]);

    // Executions, ended over the last 180 days, with their events, in creation order.
    await q(
      `CREATE TEMP TABLE vol_exec AS
       SELECT s.id AS session_id, s.org_id, s.blob_id, s.revision_id, s.definition_id,
              now() - random() * interval '180 days' AS at
         FROM vol_session s CROSS JOIN generate_series(1, $1::int)
       UNION ALL
       SELECT $2::uuid, $3::uuid, $4::uuid, $5::uuid, $6::uuid, now() - random() * interval '180 days'
         FROM generate_series(1, $7::int)`,
      [
        shape.executionsPerSession,
        ctx.big.sessionId,
        ctx.big.orgId,
        ctx.big.blobId,
        ctx.big.revisionId,
        ctx.bigDefinitionId,
        shape.bigExecutions,
      ],
    );
    await q(
      `CREATE TEMP TABLE vol_exec_sorted AS SELECT uuid_v7() AS id, x.* FROM (SELECT * FROM vol_exec ORDER BY at) x`,
    );
    await q(
      `INSERT INTO executions (id, session_id, org_id, blob_id, revision_id, definition_id, graph, status, input_data,
                               output, limits, state, node_runs, created_at, started_at, ended_at)
       SELECT id, session_id, org_id, blob_id, revision_id, definition_id, $1::jsonb, 'succeeded', '{"n": 1}',
              '{"n": 1}', '{}', '{}', 3, at, at, at + interval '1 second'
         FROM vol_exec_sorted ORDER BY at`,
      [JSON.stringify(BENCH_GRAPH)],
    );
    await q(
      `INSERT INTO execution_events (execution_id, session_id, kind, node, attributes, at)
       SELECT e.id, e.session_id, k.kind, k.node, '{}'::jsonb, e.at + k.i * interval '10 milliseconds'
         FROM vol_exec_sorted e CROSS JOIN ${EVENTS}
        WHERE k.i <= $1::int
        ORDER BY e.at, e.id, k.i`,
      [shape.eventsPerExecution],
    );

    // Session events: the large tenant's session first (then idle), everyone else's after it.
    await q(
      `INSERT INTO session_events (session_id, kind, attributes, at)
       SELECT $1::uuid, 'object.set', '{"alias": "o"}', now() - interval '200 days' FROM generate_series(1, $2::int)`,
      [ctx.big.sessionId, shape.bigSessionEvents],
    );
    await q(
      `INSERT INTO session_events (session_id, kind, attributes, at)
       SELECT id, 'object.set', '{"alias": "o"}', at FROM (
         SELECT s.id, now() - random() * interval '180 days' AS at
           FROM vol_session s CROSS JOIN generate_series(1, $1::int)) x
        ORDER BY at`,
      [shape.sessionEventsPerSession],
    );
    await q(
      `INSERT INTO session_objects (session_id, alias, kind, value, size)
       SELECT s.id, 'o' || i, 'object', '{"v": 1}', 8 FROM vol_session s CROSS JOIN generate_series(1, $1::int) i`,
      [shape.objectsPerSession],
    );

    // Standing schedules (daily, each at an hour of its own, next fire at least 5 minutes away) and their runs.
    await q(
      `INSERT INTO schedules (revision_id, cron, timezone, target_revision_id, target_session_id, target_definition_id,
                              enabled, next_fire_at, created_by, updated_by)
       SELECT $1::uuid, '0 ' || h || ' * * *', 'UTC', $2::uuid, $3::uuid, $4::uuid, true,
              CASE WHEN base <= now() + interval '5 minutes' THEN base + interval '1 day' ELSE base END, $5::uuid, $5::uuid
         FROM (SELECT i % 24 AS h, date_trunc('day', now()) + (i % 24) * interval '1 hour' AS base
                 FROM generate_series(1, $6::int) i) x`,
      [
        ctx.schedulerRevisionId,
        ctx.target.revisionId,
        ctx.target.sessionId,
        ctx.target.definitionId,
        ctx.userId,
        shape.schedules,
      ],
    );
    await q(
      `INSERT INTO schedule_runs (schedule_id, due_at, fired_at, created_at, status, error)
       SELECT sc.id, t, t, t, 'refused', '{"code": "limit_exceeded", "message": "bench"}'
         FROM schedules sc CROSS JOIN LATERAL (
                SELECT sc.next_fire_at - k * interval '1 day' AS t FROM generate_series(1, $2::int) k) r
        WHERE sc.revision_id = $1::uuid
        ORDER BY t`,
      [ctx.schedulerRevisionId, shape.runsPerSchedule],
    );

    // The counters the triggers keep, set from the rows.
    await q('RESET session_replication_role');
    await q(
      `UPDATE sessions s SET executions_count = c.n
         FROM (SELECT session_id, count(*)::int AS n FROM vol_exec GROUP BY session_id) c
        WHERE s.id = c.session_id`,
    );
    await q(
      `UPDATE revisions r SET active_sessions = c.n
         FROM (SELECT revision_id, count(*)::int AS n FROM sessions
                WHERE revision_id = $1::uuid OR revision_id IN (SELECT id FROM vol_rev) GROUP BY revision_id) c
        WHERE r.id = c.revision_id`,
      [ctx.big.revisionId],
    );
  } finally {
    await q('RESET session_replication_role').catch(() => {});
    await q('DROP TABLE IF EXISTS vol_org, vol_blob, vol_rev, vol_session, vol_exec, vol_exec_sorted').catch(() => {});
    client.release();
  }
}

/** The rows of each grown table, as the statistics count them (after ANALYZE). */
export async function stateCounts(pool: pg.Pool): Promise<string> {
  const names = [
    'orgs',
    'sessions',
    'executions',
    'execution_events',
    'session_events',
    'session_objects',
    'schedules',
    'schedule_runs',
    'graph_elements',
  ];
  const { rows } = await pool.query<{ relname: string; n: string }>(
    `SELECT relname, greatest(reltuples, 0)::bigint::text AS n FROM pg_class
      WHERE relkind = 'r' AND relnamespace = 'public'::regnamespace AND relname = ANY($1::text[])`,
    [names],
  );
  const of = new Map(rows.map((r) => [r.relname, Number(r.n).toLocaleString('en-US')]));
  return names.map((name) => `${name} ${of.get(name) ?? '?'}`).join(', ');
}

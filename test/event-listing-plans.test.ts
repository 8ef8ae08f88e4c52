/**
 * The event listings read through their (owner, id) index whatever the table's statistics say:
 * a session that holds a large share of all events and was idle for a while must not make the
 * planner walk the primary key from the cursor on, filtering out every other session's events
 * written since (a client tailing it would pay for everyone's events). The executions listing of
 * a session holding a large share of all executions reads its (session, created_at, id) index too.
 */
import t from 'tap';
import type { Queryable } from '../shared/db/db.ts';
import { executionListing } from '../control-plane/sql/executions.ts';
import { lastEventId, readEvents, type EventStream } from '../shared/events/store.ts';
import { buildTestApp, signInAnonymous } from './helpers/app.ts';
import { createBlob, createOrg } from './helpers/resources.ts';
import { transports } from './helpers/session-commands.ts';

const { app, db } = await buildTestApp(t);
const io = transports(t, app);
const alice = await signInAnonymous(app);
const org = await createOrg(app, alice);
const rev = (await createBlob(app, alice, org.id)).revision.id as string;

async function newSession(): Promise<string> {
  const res = await io.rest(alice, rev, 'create_session', {});
  if (res.status !== 200) throw new Error(`create_session: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.session.id;
}

interface PlanNode {
  'Node Type': string;
  'Index Name'?: string;
  'Relation Name'?: string;
  Plans?: PlanNode[];
}

function nodes(plan: PlanNode): PlanNode[] {
  return [plan, ...(plan.Plans ?? []).flatMap(nodes)];
}

/** A Queryable that answers the plan of each statement instead of running it. */
function planOf(into: PlanNode[]): Queryable {
  return {
    async query(text: string, params?: unknown[]) {
      const { rows } = await db.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(`EXPLAIN (FORMAT JSON) ${text}`, params);
      into.push(rows[0]!['QUERY PLAN'][0].Plan);
      return { rows: [{ id: 0 }], rowCount: 1 } as any;
    },
  } as Queryable;
}

// A skewed table: the big session's events first (a large share of the table), then many more of
// other sessions; the big session is then idle, its cursor past its own last event.
const big = await newSession();
const others = [await newSession(), await newSession(), await newSession()];
await db.query(
  `INSERT INTO session_events (session_id, kind, attributes)
   SELECT $1::uuid, 'test.filler', '{}'::jsonb FROM generate_series(1, 40000)`,
  [big],
);
const { rows: lastRows } = await db.query<{ id: string }>('SELECT max(id)::text AS id FROM session_events');
const bigLast = Number(lastRows[0]!.id);
await db.query(
  `INSERT INTO session_events (session_id, kind, attributes)
   SELECT ($1::uuid[])[1 + i % 3], 'test.filler', '{}'::jsonb FROM generate_series(1, 200000) i`,
  [others],
);
await db.query('ANALYZE session_events');

const STREAM: EventStream = 'session';

t.test("a page of an idle big session's events reads its (session_id, id) index, no sort", async (t) => {
  const plans: PlanNode[] = [];
  await readEvents(planOf(plans), STREAM, big, bigLast, 51);
  const all = nodes(plans[0]!);
  const scans = all.filter((n) => n['Relation Name'] === 'session_events');
  t.same(
    scans.map((n) => [n['Node Type'], n['Index Name']]),
    [['Index Scan', 'session_events_listing_idx']],
    'one scan, of the listing index',
  );
  t.notOk(
    all.some((n) => n['Node Type'] === 'Sort' || n['Node Type'] === 'Incremental Sort'),
    'the index gives the order',
  );
});

t.test("the newest event id of a session reads its (session_id, id) index, not the primary key's end", async (t) => {
  const plans: PlanNode[] = [];
  await lastEventId(planOf(plans), STREAM, others[0]!);
  const scans = nodes(plans[0]!).filter((n) => n['Relation Name'] === 'session_events');
  t.same(
    scans.map((n) => n['Index Name']),
    ['session_events_listing_idx'],
  );
});

t.test('the listing still answers the right events', async (t) => {
  const rows = await readEvents(db, STREAM, big, bigLast - 3, 10);
  t.same(
    rows.map((r) => Number(r.id)),
    [bigLast - 2, bigLast - 1, bigLast],
  );
  t.equal(Number(await lastEventId(db, STREAM, big)), bigLast);
});

t.test("a page of a big session's executions reads its listing index, no sort", async (t) => {
  // The same skew for executions: the big session's first, then many more of other sessions.
  const insert = `INSERT INTO executions (session_id, org_id, definition_id, graph, limits, status, created_at, ended_at)
    SELECT ($1::uuid[])[1 + i % cardinality($1::uuid[])], $2::uuid, gen_random_uuid(), '{}', '{}', 'succeeded',
           $3::timestamptz + i * interval '1 millisecond', $3::timestamptz + i * interval '1 millisecond'
      FROM generate_series(1, $4::int) i`;
  await db.query(insert, [[big], org.id, '2026-01-01T00:00:00Z', 2_000]);
  await db.query(insert, [others, org.id, '2026-02-01T00:00:00Z', 4_000]);
  await db.query('ANALYZE executions');
  const { rows } = await db.query<{ at: string; id: string }>(
    `SELECT to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS at, id::text AS id
       FROM executions WHERE session_id = $1::uuid ORDER BY created_at DESC, id DESC OFFSET 100 LIMIT 1`,
    [big],
  );
  const plans: PlanNode[] = [];
  await executionListing(planOf(plans), big).read(rows[0]!, 51);
  const all = nodes(plans[0]!);
  t.same(
    all.filter((n) => n['Relation Name'] === 'executions').map((n) => [n['Node Type'], n['Index Name']]),
    [['Index Scan', 'executions_listing_idx']],
    'one scan, of the listing index',
  );
  t.notOk(
    all.some((n) => n['Node Type'] === 'Sort' || n['Node Type'] === 'Incremental Sort'),
    'the index gives the order',
  );
});

/**
 * The runner's event announcements (shared/events/store.ts, announceExecutionEvents) against a real
 * PostgreSQL: a NOTIFY carries the events of its statement and the id of the execution's event
 * before them, parsed into exactly the records the listing answers; events too large for a NOTIFY
 * are announced by id alone, and the writing statement does not fail.
 */
import { once } from 'node:events';
import pg from 'pg';
import t from 'tap';
import { announceExecutionEvents, EVENTS_CHANNEL, parseAnnouncement } from '../shared/events/store.ts';
import { buildTestApp, signInAnonymous } from './helpers/app.ts';
import { createWorkflow, executionEvents, runGraph } from './helpers/runner.ts';

const { app, databaseUrl } = await buildTestApp(t);
const alice = await signInAnonymous(app);
const flow = await createWorkflow(app, alice);
// No runner: the execution stays queued, and its events are the ones written here.
const execution = await runGraph(app, alice, flow, {
  start: 'a',
  nodes: { a: { processor: 'logic.code', config: { code: 'export default (input) => input' } } },
});

const listener = new pg.Client({ connectionString: databaseUrl });
await listener.connect();
t.teardown(() => listener.end());
await listener.query(`LISTEN ${EVENTS_CHANNEL}`);

/** Appends `events` to the execution in one statement, as the runner does, and returns its NOTIFY payload. */
async function append(events: Array<{ kind: string; node?: string; attributes?: unknown }>): Promise<string> {
  const notified = once(listener, 'notification');
  await app.ctx.db.query(
    `WITH ins AS (
       INSERT INTO execution_events (execution_id, session_id, kind, node, attributes)
       SELECT $2::uuid, $3::uuid, x.ev->>'kind', x.ev->>'node', coalesce(x.ev->'attributes', '{}'::jsonb)
         FROM jsonb_array_elements($4::jsonb) WITH ORDINALITY AS x(ev, ord) ORDER BY x.ord
       RETURNING id, kind, at, session_id, execution_id, node, attributes),
     ${announceExecutionEvents('notified', 'ins', '$1')}
     SELECT notified.n FROM notified`,
    [EVENTS_CHANNEL, execution.id, execution.session_id, JSON.stringify(events)],
  );
  const [message] = (await notified) as [pg.Notification];
  return message.payload!;
}

t.test('a NOTIFY carries its events and the one before them, as the listing answers them', async (t) => {
  const first = parseAnnouncement(
    await append([
      { kind: 'execution.started' },
      { kind: 'node.started', node: 'a', attributes: { processor: 'logic.code', text: 'ünïcode: "quoted"' } },
    ]),
  );
  const second = parseAnnouncement(await append([{ kind: 'node.finished', node: 'a', attributes: { route: null } }]));
  const stored = await executionEvents(app, alice, flow, execution.id);
  t.equal(stored.length, 3);
  t.match(first, { stream: 'execution', ownerId: execution.id, newest: Number(stored[1].id) });
  t.equal(first!.carried()!.prev, 0, 'the execution had no event before');
  t.strictSame(first!.carried()!.events, stored.slice(0, 2), 'the records the listing answers');
  t.equal(second!.carried()!.prev, Number(stored[1].id), "the previous statement's newest event");
  t.strictSame(second!.carried()!.events, stored.slice(2));
});

t.test('events past what a NOTIFY holds are announced by id alone', async (t) => {
  const payload = await append([{ kind: 'node.finished', node: 'a', attributes: { logs: ['x'.repeat(9000)] } }]);
  const stored = await executionEvents(app, alice, flow, execution.id);
  const announced = parseAnnouncement(payload)!;
  t.match(announced, { stream: 'execution', ownerId: execution.id, newest: Number(stored.at(-1).id) });
  t.equal(announced.carried(), null, 'no events carried');
});

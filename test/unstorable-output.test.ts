/**
 * Text PostgreSQL cannot store (U+0000, an unpaired surrogate) and over-deep values, produced
 * inside a run rather than sent to the API: a code node's output fails its run with
 * output_invalid naming the path; a ctx call's arguments are refused (invalid_request_body) and
 * the code may catch that; free text (a thrown message, a log line) is kept with U+FFFD in place.
 * Before, each of these failed the runner's write and the execution was retried until recovery
 * gave up.
 */
import t from 'tap';
import { buildTestApp, signInAnonymous } from './helpers/app.ts';
import { createWorkflow, define, startExecution, startEngine, waitForEnd } from './helpers/runner.ts';

const { app, databaseUrl, db } = await buildTestApp(t);
const alice = await signInAnonymous(app);

t.test('values a run produces are held to what can be stored', async (t) => {
  await startEngine(t, databaseUrl);
  const flow = await createWorkflow(app, alice);
  const run = async (code: string) => {
    const def = await define(app, alice, flow, {
      start: 'one',
      nodes: { one: { processor: 'logic.code', config: { code } } },
    });
    return waitForEnd(app, alice, flow, (await startExecution(app, alice, flow, def)).id);
  };
  for (const [code, path] of [
    ['export default () => "a\\u0000b"', '(the body)'],
    ['export default () => ({ list: [1, { ["k\\u0000"]: 1 }] })', 'list[1]'],
    ['export default () => ({ text: "\\ud800" })', 'text'],
    ['export default () => { let v = 1; for (let i = 0; i < 100; i++) v = [v]; return v }', '…'],
  ] as const) {
    const ended = await run(code);
    t.equal(ended.status, 'failed', code);
    t.equal(ended.error?.code, 'output_invalid', code);
    t.ok(String(ended.error?.message).includes(path), `${code}: ${ended.error?.message}`);
  }
  const caught = await run(
    'export default async (i, ctx) => { try { await ctx.objects.put("note", { text: "\\ud800" }); return "stored" } catch (e) { return e.code + ": " + e.message } }',
  );
  t.equal(caught.status, 'succeeded');
  t.match(
    caught.output,
    /^invalid_request_body: ctx\.objects\.put arguments \[1\]\.text: text holds U\+0000 or an unpaired surrogate/,
  );
  const thrown = await run('export default () => { throw new Error("bad\\u0000news") }');
  t.equal(thrown.status, 'failed');
  t.equal(thrown.error?.message, 'Error: bad\ufffdnews', 'a thrown message keeps U+FFFD in place of U+0000');
  const logged = await run('export default () => { console.log("log\\u0000line \\udc00"); return 1 }');
  t.equal(logged.status, 'succeeded', 'a log line with U+0000 does not fail the run');
  const { rows } = await db.query<{ logs: unknown }>(
    "SELECT attributes->'logs' AS logs FROM execution_events WHERE execution_id = $1::uuid AND attributes ? 'logs'",
    [logged.id],
  );
  t.match(rows, [{ logs: [{ message: 'log\ufffdline \ufffd' }] }], 'the log line is kept with U+FFFD');
});

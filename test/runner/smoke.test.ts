import t from 'tap';
import { buildTestApp, signInAnonymous } from '../helpers/app.ts';
import { createWorkflow, executionEvents, runGraph, startRunner, waitForEnd } from '../helpers/runner.ts';

const { app, databaseUrl } = await buildTestApp(t);
const alice = await signInAnonymous(app);
await startRunner(t, databaseUrl);

t.test('3 nodes', async (t) => {
  const flow = await createWorkflow(app, alice);
  const graph = {
    start: 'a',
    nodes: {
      a: { processor: 'logic.code', config: { code: 'export default (input) => ({ n: input.n + 1 })' }, routes: { success: 'b' } },
      b: { processor: 'logic.switch', config: { cases: [{ when: { path: 'n', gte: 2 }, route: 'big' }] }, routes: { big: 'c' } },
      c: { processor: 'logic.code', config: { code: 'export default (input, ctx) => { ctx.log("hi"); return { n: input.n * 10 } }' } },
    },
  };
  const execution = await runGraph(app, alice, flow, graph, { n: 1 });
  const ended = await waitForEnd(app, alice, flow, execution.id);
  t.equal(ended.status, 'succeeded');
  t.same(ended.output, { n: 20 });
  const events = await executionEvents(app, alice, flow, execution.id);
  console.log(JSON.stringify(events.map((e) => [e.kind, e.node, e.attributes])));
});

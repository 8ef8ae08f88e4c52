/**
 * Live execution events from a real runner: the batched writes announce each execution once per
 * statement (naming its newest event and carrying the events), and a subscriber receives every
 * event, once, in order, as the listing answers it, without the listener reading them back.
 */
import t from 'tap';
import { buildTestApp, signInAnonymous } from '../helpers/app.ts';
import { createWorkflow, executionEvents, runGraph, startEngine, waitForEnd } from '../helpers/runner.ts';
import { openSocket } from '../helpers/session-commands.ts';

const { app, databaseUrl } = await buildTestApp(t);
const alice = await signInAnonymous(app);

function code(source: string, next: string | null): Record<string, unknown> {
  return { processor: 'logic.code', config: { code: source }, routes: { success: next } };
}

t.test('a subscriber to an execution receives each of its events once, in order', async (t) => {
  const flow = await createWorkflow(app, alice);
  const graphs = {
    start: 'a',
    nodes: {
      a: code('export default (input) => ({ n: input.n + 1 })', 'b'),
      b: code('export default (input) => ({ n: input.n * 10 })', 'c'),
      c: code('export default (input) => { throw new Error("no") }', null),
    },
  };
  // Created before any runner exists, so the subscription is in place before the first event.
  const executions: Array<Record<string, any>> = [];
  for (let i = 0; i < 4; i++) executions.push(await runGraph(app, alice, flow, graphs, { n: i }));
  const socket = await openSocket(t, app, alice);
  const subscriptions = new Map<string, string>();
  for (const execution of executions) {
    const answer = await socket.call('subscribe', { revision_id: flow.rev, execution_id: execution.id });
    subscriptions.set(answer.result.subscription, execution.id);
  }
  const before = app.ctx.events.stats();
  await startEngine(t, databaseUrl);
  for (const execution of executions) await waitForEnd(app, alice, flow, execution.id);

  const pushed = new Map<string, any[]>(executions.map((execution) => [execution.id, []]));
  const total = async () => {
    const stored = await Promise.all(executions.map((execution) => executionEvents(app, alice, flow, execution.id)));
    return stored.reduce((sum, events) => sum + events.length, 0);
  };
  const expected = await total();
  for (let received = 0; received < expected; received++) {
    const frame = await socket.notification();
    pushed.get(subscriptions.get(frame.params.subscription)!)!.push(frame.params.event);
  }
  // Each runner statement announced its events with the one before them, and the subscriptions
  // had been sent that one: every event went out from the payload, none was read back.
  const after = app.ctx.events.stats();
  t.equal(after.carried - before.carried, expected, 'every event pushed from its announcement');
  t.equal(after.reads - before.reads, 0, 'no event read back');
  for (const execution of executions) {
    const stored = await executionEvents(app, alice, flow, execution.id);
    t.same(
      pushed.get(execution.id)!.map((event) => event.id),
      stored.map((event: any) => event.id),
      'every stored event pushed once, in order',
    );
    t.strictSame(pushed.get(execution.id), stored, 'each pushed event is the record the listing answers');
    t.same(
      stored.map((event: any) => `${event.kind}${event.node ? `:${event.node}` : ''}`),
      [
        'execution.started',
        'node.started:a',
        'node.finished:a',
        'node.started:b',
        'node.finished:b',
        'node.started:c',
        'node.failed:c',
        'execution.finished',
      ],
    );
  }
  t.equal(socket.pendingNotifications(), 0, 'nothing pushed twice');
});

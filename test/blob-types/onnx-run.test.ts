/**
 * The `onnx.run` processor (docs/workflow.md "onnx.run"): a three-node workflow whose middle node
 * runs the test MLP on tensors the first node builds, checked numerically at the end; another
 * organization's model is not found; bad input and a missing model take `failure`; a model host
 * stopped for one organization's run past its bound does not fail another's run in it.
 */
import { request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { buildTestApp, setOverride, signInAnonymous, type Caller } from '../helpers/app.ts';
import { constantOfShapeModel, heavyModel, mlpModel, mlpReference } from '../helpers/onnx-models.ts';
import { createBlob } from '../helpers/resources.ts';
import { createWorkflow, executionEvents, runGraph, startEngine, waitFor, waitForEnd } from '../helpers/runner.ts';

const { app, databaseUrl } = await buildTestApp(t);
const alice = await signInAnonymous(app);
const mallory = await signInAnonymous(app);
await app.listen({ port: 0, host: '127.0.0.1' });
const { port } = app.server.address() as AddressInfo;
await startEngine(t, databaseUrl);

function upload(caller: Caller, rev: string, bytes: Buffer): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: '127.0.0.1',
        port,
        method: 'PUT',
        path: `/v1/revisions/${rev}/model`,
        headers: { ...caller.headers, 'x-request-body': JSON.stringify({ size: bytes.length }) },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end(bytes);
  });
}

const flow = await createWorkflow(app, alice);
const { revision: model } = await createBlob(app, alice, flow.orgId, { type: 'svc.model.onnx' });
t.equal(await upload(alice, model.id, mlpModel()), 200);

const code = (source: string, next: string | null) => ({
  processor: 'logic.code',
  config: { code: source },
  routes: { success: next },
});
const PIPELINE = {
  start: 'tensors',
  nodes: {
    tensors: code(
      'export default (input) => ({ X: { type: "float32", dims: [input.rows.length, 4], data: input.rows.flat() } })',
      'model',
    ),
    model: {
      processor: 'onnx.run',
      config: { revision_id: model.id, outputs: ['Y'] },
      routes: { success: 'sum', failure: null },
    },
    sum: code('export default (input) => ({ y: input.outputs.Y.data, dims: input.outputs.Y.dims })', null),
  },
};

t.test('a three-node workflow runs the model on its own tensors', async (t) => {
  const rows = [
    [1, 2, 3, 4],
    [0.5, -1, 2, 0],
  ];
  const execution = await runGraph(app, alice, flow, PIPELINE, { rows });
  const ended = await waitForEnd(app, alice, flow, execution.id);
  t.equal(ended.status, 'succeeded', JSON.stringify(ended.error));
  t.same(ended.output.dims, [2, 2]);
  const expected = mlpReference(rows).flat();
  ended.output.y.forEach((value: number, i: number) =>
    t.ok(Math.abs(value - expected[i]!) < 1e-4, `y[${i}] ${value} ≈ ${expected[i]}`),
  );
});

t.test("bad input, a missing model and another organization's model take failure", async (t) => {
  const fails = async (caller: Caller, graph: unknown, input: unknown) => {
    const wf = caller === alice ? flow : await createWorkflow(app, caller);
    const execution = await runGraph(app, caller, wf, graph, input);
    return waitForEnd(app, caller, wf, execution.id);
  };
  const direct = (config: Record<string, unknown>) => ({
    start: 'model',
    nodes: { model: { processor: 'onnx.run', config } },
  });
  const wrongType = await fails(
    alice,
    direct({ revision_id: model.id, inputs: { X: { type: 'int32', dims: [1, 4], data: [1, 2, 3, 4] } } }),
    null,
  );
  t.equal(wrongType.status, 'failed');
  t.match(wrongType.error, { code: 'invalid_model_input', message: /inputs\.X: type int32, the model takes float32/ });
  const notTensors = await fails(alice, direct({ revision_id: model.id }), { X: 'nope' });
  t.match(notTensors.error, { code: 'invalid_model_input' });
  const { revision: empty } = await createBlob(app, alice, flow.orgId, { type: 'svc.model.onnx' });
  const missing = await fails(alice, direct({ revision_id: empty.id, inputs: {} }), null);
  t.match(missing.error, { code: 'model_unavailable' });
  const stolen = await fails(
    mallory,
    direct({ revision_id: model.id, inputs: { X: { type: 'float32', dims: [1, 4], data: [1, 2, 3, 4] } } }),
    null,
  );
  t.match(stolen.error, { code: 'model_not_found' }, "mallory's workflow cannot run alice's model");
});

t.test("an onnx.run node's outputs are held to a code node's output bound", async (t) => {
  const { revision: zeros } = await createBlob(app, alice, flow.orgId, { type: 'svc.model.onnx' });
  t.equal(await upload(alice, zeros.id, constantOfShapeModel()), 200);
  const run = (count: number) =>
    runGraph(
      app,
      alice,
      flow,
      {
        start: 'model',
        nodes: {
          model: {
            processor: 'onnx.run',
            config: { revision_id: zeros.id, inputs: { S: { type: 'int64', dims: [1], data: [count] } } },
          },
        },
      },
      null,
    ).then((execution) => waitForEnd(app, alice, flow, execution.id));
  // 3,000,000 zeros are 6 MB as JSON, past the 5 MiB a code node's output may take.
  const over = await run(3_000_000);
  t.equal(over.status, 'failed');
  t.match(over.error, { code: 'output_invalid', message: /larger than 5242880 bytes/ });
  const under = await run(1000);
  t.equal(under.status, 'succeeded', JSON.stringify(under.error));
});

t.test("a run stopped at its bound does not fail another organization's run in the same host", async (t) => {
  // The engine has one thread (FAST), so both runs share its model host, two at once, one per
  // organization. Mallory's run would take minutes and her blob's workflow.code_run_seconds is 1:
  // the host process is killed under both runs. Alice's (seconds of work, her bound 870 s) was in
  // flight then.
  const single = (revisionId: string) => ({
    start: 'model',
    nodes: {
      model: {
        processor: 'onnx.run',
        config: { revision_id: revisionId, inputs: { X: { type: 'float32', dims: [1], data: [0] } } },
      },
    },
  });
  const { revision: work } = await createBlob(app, alice, flow.orgId, { type: 'svc.model.onnx' });
  t.equal(await upload(alice, work.id, heavyModel(96, 1024)), 200);
  const hostileFlow = await createWorkflow(app, mallory);
  await setOverride(app, 'workflow.code_run_seconds', 'blob', hostileFlow.blobId, 1);
  const { revision: endless } = await createBlob(app, mallory, hostileFlow.orgId, { type: 'svc.model.onnx' });
  t.equal(await upload(mallory, endless.id, heavyModel(4096, 1024)), 200);

  const innocent = await runGraph(app, alice, flow, single(work.id), null);
  await waitFor(
    () => executionEvents(app, alice, flow, innocent.id),
    (events) => events.some((event) => event.kind === 'node.started'),
    "alice's model node to start",
  );
  const hostile = await runGraph(app, mallory, hostileFlow, single(endless.id), null);
  const stopped = await waitForEnd(app, mallory, hostileFlow, hostile.id);
  t.equal(stopped.status, 'failed');
  t.match(stopped.error, { code: 'model_timeout', message: /workflow\.code_run_seconds is 1/ });
  const ended = await waitForEnd(app, alice, flow, innocent.id);
  t.equal(ended.status, 'succeeded', JSON.stringify(ended.error));
});

/**
 * Upload Model and Download Model (docs/blob-types.md "ONNX models") with models the tests build
 * (test/helpers/onnx-models.ts): a byte-identical round trip with the inputs and outputs ONNX
 * Runtime reported; refusals before the body is read (the server answers while the client has
 * sent none of its declared bytes); a body shorter or longer than declared, or cut off, keeps
 * nothing; garbage and unsupported operators leave the revision `failed`.
 */
import { createHash } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { buildTestApp, call, setOverride, signInAnonymous } from '../helpers/app.ts';
import { addModel, mlpModel, mlpReference, unsupportedModel } from '../helpers/onnx-models.ts';
import { createBlob, createOrg } from '../helpers/resources.ts';

const { app, db } = await buildTestApp(t);
const alice = await signInAnonymous(app);
const bob = await signInAnonymous(app);
const org = await createOrg(app, alice);
await app.listen({ port: 0, host: '127.0.0.1' });
const { port } = app.server.address() as AddressInfo;

async function onnxRevision(): Promise<{ blobId: string; rev: string }> {
  const { blob, revision } = await createBlob(app, alice, org.id, { type: 'svc.model.onnx' });
  return { blobId: blob.id, rev: revision.id };
}

/** PUT /model over a real socket; `send` bytes (default: all of `bytes`), `declared` in the header. */
function upload(
  rev: string,
  bytes: Buffer,
  options: { declared?: unknown; header?: string | null; send?: Buffer; as?: typeof alice; endEarly?: boolean } = {},
): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = {
      ...(options.as ?? alice).headers,
      'content-type': 'application/octet-stream',
    };
    const header =
      options.header === undefined ? JSON.stringify({ size: options.declared ?? bytes.length }) : options.header;
    if (header !== null) headers['x-request-body'] = header;
    const req = httpRequest(
      { host: '127.0.0.1', port, method: 'PUT', path: `/v1/revisions/${rev}/model`, headers },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text ? JSON.parse(text) : null }));
      },
    );
    req.on('error', (error) => (options.endEarly ? resolve({ status: 0, body: null }) : reject(error)));
    const body = options.send ?? bytes;
    if (options.endEarly) {
      req.write(body);
      setTimeout(() => req.destroy(), 200);
      return;
    }
    req.end(body);
  });
}

async function download(rev: string): Promise<{ status: number; bytes: Buffer; header: any }> {
  const res = await fetch(`http://127.0.0.1:${port}/v1/revisions/${rev}/model`, { headers: alice.headers });
  const bytes = Buffer.from(await res.arrayBuffer());
  const header = res.headers.get('x-response-body');
  return { status: res.status, bytes, header: header ? JSON.parse(header) : null };
}

async function revisionOf(rev: string): Promise<any> {
  return (await call(app, 'GET', `/v1/revisions/${rev}`, { as: alice })).body.revision;
}

t.test('a model round-trips byte for byte, with its inputs and outputs', async (t) => {
  const { rev } = await onnxRevision();
  t.equal((await revisionOf(rev)).status, 'pending', 'pending until a model is uploaded');
  t.equal((await revisionOf(rev)).model, null, 'Get Revision: no model yet');
  const bytes = mlpModel();
  const sha256 = createHash('sha256').update(bytes).digest('hex');
  const res = await upload(rev, bytes);
  t.equal(res.status, 200, JSON.stringify(res.body));
  t.match(res.body, { status: 'success', revision: { id: rev, status: 'ready' } });
  t.same(res.body.model, {
    size: bytes.length,
    sha256,
    inputs: [{ name: 'X', type: 'float32', shape: ['batch', 4] }],
    outputs: [{ name: 'Y', type: 'float32', shape: ['batch', 2] }],
  });
  const back = await download(rev);
  t.equal(back.status, 200);
  t.ok(back.bytes.equals(bytes), 'identical bytes');
  t.same(back.header, { status: 'success', size: bytes.length, sha256 });
  t.equal((await revisionOf(rev)).status, 'ready');
  t.same((await revisionOf(rev)).model, res.body.model, 'Get Revision names the model as its upload did');

  // Uploading again replaces the model (and its large object).
  const add = addModel();
  const again = await upload(rev, add);
  t.equal(again.status, 200);
  t.same(
    again.body.model.inputs.map((i: { name: string }) => i.name),
    ['A', 'B'],
  );
  t.ok((await download(rev)).bytes.equals(add));
  const { rows } = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM pg_largeobject_metadata');
  t.ok(rows[0]!.n >= 1);
});

t.test('refusals before the body is read: declared size over the limit, bad header, access, entitlement', async (t) => {
  const { rev, blobId } = await onnxRevision();
  await setOverride(app, 'onnx.model_bytes', 'blob', blobId, 1000);
  // Declares 600 MB (in the header and as content-length), sends 64 KiB of it and waits: the
  // answer comes without the rest of the body, and the server closes the connection.
  const over = await new Promise<{ status: number; body: any; closed: boolean }>((resolve, reject) => {
    const req = httpRequest(
      {
        host: '127.0.0.1',
        port,
        method: 'PUT',
        path: `/v1/revisions/${rev}/model`,
        headers: {
          ...alice.headers,
          'x-request-body': JSON.stringify({ size: 600_000_000 }),
          'content-length': '600000000',
        },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, body: JSON.parse(text), closed: res.headers.connection === 'close' }),
        );
      },
    );
    req.on('error', () => {});
    req.write(Buffer.alloc(64 * 1024));
    setTimeout(() => reject(new Error('no answer while the body was still owed')), 10_000).unref();
  });
  t.equal(over.status, 400);
  t.match(over.body, { status: 'failure', error: 'limit_exceeded', limit: { id: 'onnx.model_bytes', value: 1000 } });
  t.ok(over.closed, 'the connection is closed rather than drained');
  await db.query(`DELETE FROM limit_overrides WHERE limit_id = 'onnx.model_bytes'`);
  const cases: Array<[string, string | null, RegExp]> = [
    ['missing header', null, /X-Request-Body header is required/],
    ['not JSON', '{size:', /not valid JSON/],
    ['negative', JSON.stringify({ size: -1 }), /size/],
    ['not a number', JSON.stringify({ size: '10' }), /size/],
    ['extra field', JSON.stringify({ size: 1, x: 1 }), /x/],
  ];
  for (const [what, header, message] of cases) {
    const res = await upload(rev, Buffer.from('abc'), { header });
    t.equal(res.status, 400, what);
    t.match(res.body, { error: 'invalid_request_body', message }, what);
  }
  const stranger = await upload(rev, addModel(), { as: bob });
  t.equal(stranger.status, 404, 'a stranger does not see the revision');
  await setOverride(app, 'onnx.enabled', 'org', org.id, false);
  const off = await upload(rev, addModel());
  t.equal(off.status, 400);
  t.same(off.body.limit, { id: 'onnx.enabled', value: false });
  await db.query(`DELETE FROM limit_overrides WHERE limit_id = 'onnx.enabled'`);
  t.equal((await revisionOf(rev)).status, 'pending', 'nothing changed');
});

t.test('a body shorter or longer than declared, or cut off, keeps nothing', async (t) => {
  const { rev } = await onnxRevision();
  const bytes = addModel();
  const before = (await db.query<{ n: number }>('SELECT count(*)::int AS n FROM pg_largeobject_metadata')).rows[0]!.n;
  const longer = await upload(rev, bytes, { declared: bytes.length - 10 });
  t.equal(longer.status, 400);
  t.match(longer.body.message, /longer than the declared/);
  const shorter = await upload(rev, bytes, { declared: bytes.length + 10 });
  // The server waits for bytes that never come until the client ends the request.
  t.equal(shorter.status, 400);
  t.match(shorter.body.message, /not the declared|did not complete/);
  await upload(rev, bytes, { declared: bytes.length * 10, send: bytes, endEarly: true });
  await new Promise((resolve) => setTimeout(resolve, 300));
  t.equal((await revisionOf(rev)).status, 'pending');
  t.equal((await download(rev)).status, 404);
  const after = (await db.query<{ n: number }>('SELECT count(*)::int AS n FROM pg_largeobject_metadata')).rows[0]!.n;
  t.equal(after, before, 'no large object left behind');
});

t.test('garbage and unsupported operators leave the revision failed with a reason', async (t) => {
  for (const [what, bytes, reason] of [
    ['garbage', Buffer.from('definitely not a model'), /Protobuf parsing failed/],
    ['unsupported operator', unsupportedModel(), /NoSuchOperatorAnywhere/],
  ] as const) {
    const { rev } = await onnxRevision();
    const res = await upload(rev, bytes);
    t.equal(res.status, 400, what);
    t.match(res.body, { error: 'invalid_model', message: reason }, what);
    t.equal((await revisionOf(rev)).status, 'failed', what);
    t.equal((await revisionOf(rev)).model, null, `${what}: Get Revision names no model`);
    t.equal((await download(rev)).status, 404, `${what}: no bytes kept`);
  }
});

t.test('run_model: outputs checked numerically; inputs checked against the model, naming the input', async (t) => {
  const { rev } = await onnxRevision();
  t.equal((await upload(rev, mlpModel())).status, 200);
  const x = [
    [1, 2, 3, 4],
    [-1, 0.5, 2, -3],
  ];
  const ran = await call(app, 'POST', `/v1/revisions/${rev}/run_model`, {
    as: alice,
    body: { inputs: { X: { type: 'float32', dims: [2, 4], data: x.flat() } } },
  });
  t.equal(ran.status, 200, JSON.stringify(ran.body));
  t.same(ran.body.outputs.Y.dims, [2, 2]);
  t.equal(ran.body.outputs.Y.type, 'float32');
  const expected = mlpReference(x).flat();
  ran.body.outputs.Y.data.forEach((value: number, i: number) =>
    t.ok(Math.abs(value - expected[i]!) < 1e-4, `Y[${i}] ${value} ≈ ${expected[i]}`),
  );
  const warm = await call(app, 'POST', `/v1/revisions/${rev}/run_model`, {
    as: alice,
    body: { inputs: { X: { type: 'float32', dims: [1, 4], data: [0, 0, 0, 0] } }, outputs: ['Y'] },
  });
  t.same(warm.body.outputs.Y.dims, [1, 2]);

  const bad: Array<[unknown, RegExp]> = [
    [{ X: { type: 'float64', dims: [1, 4], data: [1, 2, 3, 4] } }, /inputs\.X: type float64, the model takes float32/],
    [{ X: { type: 'float32', dims: [1, 3], data: [1, 2, 3] } }, /inputs\.X: dimension 1 is 3, the model takes 4/],
    [{ X: { type: 'float32', dims: [4], data: [1, 2, 3, 4] } }, /inputs\.X: 1 dimensions, the model takes 2/],
    [{ X: { type: 'float32', dims: [1, 4], data: [1, 2, 3] } }, /product of dims|hold 4 elements/],
    [{ X: { type: 'float32', dims: [1, 4], data: [1, 2, 'three', 4] } }, /inputs\.X: data\[2\]/],
    [{}, /inputs\.X: missing/],
    [
      { X: { type: 'float32', dims: [1, 4], data: [1, 2, 3, 4] }, Z: { type: 'float32', dims: [1], data: [1] } },
      /no input "Z"/,
    ],
  ];
  for (const [inputs, message] of bad) {
    const res = await call(app, 'POST', `/v1/revisions/${rev}/run_model`, { as: alice, body: { inputs } });
    t.equal(res.status, 400, String(message));
    t.match(res.body, { error: 'invalid_request_body', message }, String(message));
  }
  const noOutput = await call(app, 'POST', `/v1/revisions/${rev}/run_model`, {
    as: alice,
    body: { inputs: { X: { type: 'float32', dims: [1, 4], data: [1, 2, 3, 4] } }, outputs: ['nope'] },
  });
  t.match(noOutput.body, { error: 'invalid_request_body', message: /no output "nope"/ });

  const { rev: empty } = await onnxRevision();
  const none = await call(app, 'POST', `/v1/revisions/${empty}/run_model`, { as: alice, body: { inputs: {} } });
  t.equal(none.status, 409, 'no model uploaded');
  const add = await onnxRevision();
  await upload(add.rev, addModel());
  const sum = await call(app, 'POST', `/v1/revisions/${add.rev}/run_model`, {
    as: alice,
    body: {
      inputs: {
        A: { type: 'float32', dims: [3], data: [1, 2, 3] },
        B: { type: 'float32', dims: [3], data: [10, 20, 30] },
      },
    },
  });
  t.same(sum.body.outputs.C, { type: 'float32', dims: [3], data: [11, 22, 33] });
});

/**
 * The S3 model store (MODEL_STORE=s3, docs/blob-types.md "Storage") against a local S3 server
 * (s3rver): an upload lands in the bucket and not in a large object, comes back byte for byte,
 * runs; a refused or failed upload leaves no object; a replaced or deleted model's object is
 * deleted by the control plane.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import S3rver from 's3rver';
import t from 'tap';
import { buildTestApp, call, signInAnonymous } from '../helpers/app.ts';
import { addModel, mlpModel } from '../helpers/onnx-models.ts';
import { createBlob, createOrg } from '../helpers/resources.ts';
import { waitFor } from '../helpers/runner.ts';

const directory = await mkdtemp(join(tmpdir(), 'ws-s3rver-'));
const s3rver = new S3rver({
  port: 0,
  address: '127.0.0.1',
  silent: true,
  directory,
  configureBuckets: [{ name: 'models', configs: [] }],
});
const { port: s3Port } = (await s3rver.run()) as AddressInfo;
t.teardown(async () => {
  await s3rver.close();
  await rm(directory, { recursive: true, force: true });
});
const endpoint = `http://127.0.0.1:${s3Port}`;
const { app, db } = await buildTestApp(t, {
  MODEL_STORE: 's3',
  S3_BUCKET: 'models',
  S3_ENDPOINT: endpoint,
  S3_ACCESS_KEY_ID: 'S3RVER',
  S3_SECRET_ACCESS_KEY: 'S3RVER',
});
const s3 = new S3Client({
  region: 'us-east-1',
  endpoint,
  forcePathStyle: true,
  credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
});
t.teardown(() => s3.destroy());
const alice = await signInAnonymous(app);
const org = await createOrg(app, alice);
await app.listen({ port: 0, host: '127.0.0.1' });
const { port } = app.server.address() as AddressInfo;

async function keys(): Promise<string[]> {
  const listed = await s3.send(new ListObjectsV2Command({ Bucket: 'models' }));
  return (listed.Contents ?? []).map((o) => o.Key!).sort();
}

function upload(rev: string, bytes: Buffer, declared = bytes.length): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: '127.0.0.1',
        port,
        method: 'PUT',
        path: `/v1/revisions/${rev}/model`,
        headers: { ...alice.headers, 'x-request-body': JSON.stringify({ size: declared }) },
      },
      (res) => {
        let text = '';
        res.on('data', (chunk) => (text += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
      },
    );
    req.on('error', reject);
    req.end(bytes);
  });
}

t.test('a model goes to the bucket, comes back identical, runs; replaced and deleted objects go', async (t) => {
  const { blob, revision } = await createBlob(app, alice, org.id, { type: 'svc.model.onnx' });
  const los = async () =>
    (await db.query<{ n: number }>('SELECT count(*)::int AS n FROM pg_largeobject_metadata')).rows[0]!.n;
  const losBefore = await los();
  const bytes = mlpModel();
  const res = await upload(revision.id, bytes);
  t.equal(res.status, 200, JSON.stringify(res.body));
  t.equal((await keys()).length, 1, 'one object in the bucket');
  t.equal(await los(), losBefore, 'no large object');
  const back = await fetch(`http://127.0.0.1:${port}/v1/revisions/${revision.id}/model`, { headers: alice.headers });
  t.ok(Buffer.from(await back.arrayBuffer()).equals(bytes), 'identical bytes');
  t.match(JSON.parse(back.headers.get('x-response-body')!), { status: 'success', size: bytes.length });
  const ran = await call(app, 'POST', `/v1/revisions/${revision.id}/run_model`, {
    as: alice,
    body: { inputs: { X: { type: 'float32', dims: [1, 4], data: [1, 2, 3, 4] } } },
  });
  t.equal(ran.status, 200, JSON.stringify(ran.body));
  t.same(ran.body.outputs.Y.dims, [1, 2]);

  const first = await keys();
  t.equal((await upload(revision.id, addModel())).status, 200);
  await waitFor(keys, (now) => now.length === 1 && now[0] !== first[0], 'the replaced object to be deleted');

  t.equal((await call(app, 'DELETE', `/v1/blobs/${org.id}/${blob.id}`, { as: alice })).status, 200);
  await waitFor(keys, (now) => now.length === 0, "the deleted blob's object to be deleted");
});

t.test('a refused or failed upload leaves no object', async (t) => {
  const { revision } = await createBlob(app, alice, org.id, { type: 'svc.model.onnx' });
  const longer = await upload(revision.id, addModel(), 10);
  t.equal(longer.status, 400);
  const garbage = await upload(revision.id, Buffer.from('not a model at all'));
  t.equal(garbage.status, 400);
  t.equal(garbage.body.error, 'invalid_model');
  await waitFor(keys, (now) => now.length === 0, 'no object left');
  t.equal((await call(app, 'GET', `/v1/revisions/${revision.id}`, { as: alice })).body.revision.status, 'failed');
});

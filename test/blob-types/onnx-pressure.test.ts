/**
 * What one organization's models can do to the others (docs/operations.md "What one tenant can
 * do to the others"): uploads that trickle and downloads that are never read hold no database
 * connection, a download whose model is replaced midway ends short and gives its connection
 * back, a stalled upload is refused after MODEL_UPLOAD_IDLE_SECONDS, outputs are bounded before
 * they are built, a graph past MODEL_MAX_NODES or with external data is refused before ONNX
 * Runtime opens it and no refusal names a path, one organization's heavy runs do not queue
 * another's behind them, and the model host and the inspection processes run at a lower
 * priority than the API (the inspection processes from their start).
 */
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { request as httpRequest, type ClientRequest, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import t, { type Test as Tap } from 'tap';
import { buildTestApp, call, signInAnonymous, type Caller } from '../helpers/app.ts';
import {
  chainModel,
  constantOfShapeModel,
  externalDataModel,
  futureIrModel,
  heavyModel,
  identityModel,
} from '../helpers/onnx-models.ts';
import { createBlob, createOrg } from '../helpers/resources.ts';
import { waitFor } from '../helpers/runner.ts';
import { threadNices } from '../helpers/threads.ts';
import { childPids, statFields } from '../../shared/proc-stat.ts';
import { MODEL_PROCESS_NICE } from '../../shared/priority.ts';

// The uploads' temporary files go to a folder of this file's own, so the test can see them appear.
const spool = await mkdtemp(join(tmpdir(), 'ws-onnx-pressure-'));
process.env.TMPDIR = spool;
t.teardown(() => rm(spool, { recursive: true, force: true }));

const { app, db, databaseUrl } = await buildTestApp(t, { MODEL_UPLOAD_IDLE_SECONDS: '2', MODEL_MAX_NODES: '300' });
const alice = await signInAnonymous(app);
const bob = await signInAnonymous(app);
const org = await createOrg(app, alice);
const bobOrg = await createOrg(app, bob);
await app.listen({ port: 0, host: '127.0.0.1' });
const { port } = app.server.address() as AddressInfo;
/** The test app's pool (test/helpers/app.ts). */
const POOL = 20;

async function onnxRevision(as: Caller = alice, orgId = org.id): Promise<string> {
  return (await createBlob(app, as, orgId, { type: 'svc.model.onnx' })).revision.id;
}

function upload(rev: string, bytes: Buffer, as: Caller = alice): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: '127.0.0.1',
        port,
        method: 'PUT',
        path: `/v1/revisions/${rev}/model`,
        headers: { ...as.headers, 'x-request-body': JSON.stringify({ size: bytes.length }) },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text ? JSON.parse(text) : null }));
      },
    );
    req.on('error', reject);
    req.end(bytes);
  });
}

/** A quiet tenant's requests: a sign-up and a read of its own organizations. */
async function quietRequests(t: Tap): Promise<void> {
  const carol = await app.inject({ method: 'POST', url: '/v1/auth/anonymous', payload: {} });
  t.equal(carol.statusCode, 200, 'a sign-up answers');
  const orgs = await call(app, 'GET', `/v1/orgs/${bobOrg.id}`, { as: bob });
  t.equal(orgs.status, 200, "another tenant's read answers");
}

async function spooled(): Promise<number> {
  return (await readdir(spool)).filter((name) => name.startsWith('ws-model-')).length;
}

t.test('uploads that trickle hold no database connection, and a stalled one is refused', async (t) => {
  const rev = await onnxRevision();
  // As many uploads as the pool has connections, each sending a byte every 200 ms of a 1 MB body.
  const trickles: ClientRequest[] = [];
  const timers: NodeJS.Timeout[] = [];
  for (let i = 0; i < POOL; i++) {
    const req = httpRequest({
      host: '127.0.0.1',
      port,
      method: 'PUT',
      path: `/v1/revisions/${rev}/model`,
      headers: { ...alice.headers, 'x-request-body': JSON.stringify({ size: 1_000_000 }) },
    });
    req.on('error', () => {});
    req.on('response', (res: IncomingMessage) => res.resume());
    req.write(Buffer.alloc(1));
    timers.push(setInterval(() => req.write(Buffer.alloc(1)), 200));
    trickles.push(req);
  }
  // Every upload has reached its handler (each has a temporary file).
  await waitFor(spooled, (n) => n >= POOL, 'every upload to reach its handler');
  await quietRequests(t);
  // Another upload of the same revision completes: no upload holds the revision's row lock while its client sends.
  const done = await upload(rev, chainModel(3));
  t.equal(done.status, 200, JSON.stringify(done.body));
  for (const timer of timers) clearInterval(timer);
  for (const req of trickles) req.destroy();

  // A client that stops sending is refused after MODEL_UPLOAD_IDLE_SECONDS (2 here).
  const stalled = await new Promise<{ status: number; body: any }>((resolve, reject) => {
    const req = httpRequest(
      {
        host: '127.0.0.1',
        port,
        method: 'PUT',
        path: `/v1/revisions/${rev}/model`,
        headers: { ...alice.headers, 'x-request-body': JSON.stringify({ size: 1000 }) },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
      },
    );
    req.on('error', () => {});
    req.write(Buffer.alloc(10));
    setTimeout(() => reject(new Error('a stalled upload was never refused')), 60_000).unref();
  });
  t.equal(stalled.status, 400);
  t.match(stalled.body, { error: 'invalid_request_body', message: /sent no byte for 2 s/ });
  const revision = (await call(app, 'GET', `/v1/revisions/${rev}`, { as: alice })).body.revision;
  t.equal(revision.status, 'ready', 'the completed upload stands');
});

t.test('downloads that are never read hold no database connection', async (t) => {
  const rev = await onnxRevision();
  // 8 MB of weights: more than the sockets and streams between the store and a client buffer.
  const big = identityModel(8 * 1024 * 1024);
  t.equal((await upload(rev, big)).status, 200);
  // The downloads' chunk reads running at once, as the database sees them, from a connection of
  // the test's own: each download reads ahead as far as its socket's buffers take, and the reads
  // of all of them together must never take more than two of the pool's connections.
  const watcher = new pg.Client({ connectionString: databaseUrl });
  await watcher.connect();
  t.teardown(() => watcher.end());
  let most = 0;
  let watching = true;
  const watched = (async () => {
    while (watching) {
      const { rows } = await watcher.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND state = 'active' AND query LIKE 'COPY (SELECT lo_get(%'",
      );
      most = Math.max(most, rows[0]!.n);
    }
  })();
  const readers: ClientRequest[] = [];
  await Promise.all(
    Array.from(
      { length: POOL },
      () =>
        new Promise<void>((resolve, reject) => {
          const req = httpRequest(
            { host: '127.0.0.1', port, path: `/v1/revisions/${rev}/model`, headers: alice.headers },
            (res) => {
              // Headers in, body never read.
              res.pause();
              resolve();
            },
          );
          req.on('error', reject);
          req.end();
          readers.push(req);
        }),
    ),
  );
  await quietRequests(t);
  watching = false;
  await watched;
  t.ok(most <= 2, `at most two chunk reads at once (${most} seen)`);
  for (const req of readers) req.destroy();
  const whole = await fetch(`http://127.0.0.1:${port}/v1/revisions/${rev}/model`, { headers: alice.headers });
  t.ok(Buffer.from(await whole.arrayBuffer()).equals(big), 'a download read to the end is the model, byte for byte');
});

t.test('a download whose model is replaced midway ends short, and every connection goes back', async (t) => {
  const rev = await onnxRevision();
  // More than the sockets between the store and a paused client buffer, so chunks are left to read.
  const first = identityModel(24 * 1024 * 1024);
  t.equal((await upload(rev, first)).status, 200);
  let received = 0;
  let declared = 0;
  let paused!: IncomingMessage;
  await new Promise<void>((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path: `/v1/revisions/${rev}/model`, headers: alice.headers });
    req.on('response', (res) => {
      declared = Number(res.headers['content-length']);
      res.once('data', (chunk: Buffer) => {
        received += chunk.length;
        res.pause();
        paused = res;
        resolve();
      });
    });
    req.on('error', reject);
    req.end();
  });
  // The replacement unlinks the large object the download reads from.
  const second = identityModel(64 * 1024);
  t.equal((await upload(rev, second)).status, 200, 'the model is replaced');
  await new Promise<void>((resolve) => {
    paused.on('data', (chunk: Buffer) => (received += chunk.length));
    paused.on('close', resolve);
    paused.resume();
  });
  t.ok(received < declared, `the download ended short (${received} of ${declared} bytes)`);
  // Its failed chunk read gave its connection back: none stays checked out of the pool.
  const out = await waitFor(
    async () => db.pool.totalCount - db.pool.idleCount,
    (n) => n === 0,
    'every pool connection to be back',
    10_000,
  ).catch(() => db.pool.totalCount - db.pool.idleCount);
  t.equal(out, 0, 'no connection is left checked out');
  await quietRequests(t);
  const now = await fetch(`http://127.0.0.1:${port}/v1/revisions/${rev}/model`, { headers: alice.headers });
  t.ok(Buffer.from(await now.arrayBuffer()).equals(second), 'a new download is the new model');
});

t.test('run_model outputs are bounded before they are built', async (t) => {
  const rev = await onnxRevision();
  t.equal((await upload(rev, constantOfShapeModel())).status, 200);
  const run = (count: number) =>
    call(app, 'POST', `/v1/revisions/${rev}/run_model`, {
      as: alice,
      body: { inputs: { S: { type: 'int64', dims: [1], data: [count] } } },
    });
  const over = await run(3_000_000);
  t.equal(over.status, 400);
  t.match(over.body, { error: 'model_run_failed', message: /larger than 5242880 bytes as JSON/ });
  const under = await run(1000);
  t.equal(under.status, 200);
  t.equal(under.body.outputs.Y.data.length, 1000);
});

t.test('graphs past MODEL_MAX_NODES are refused before the runtime opens them, subgraphs counted', async (t) => {
  for (const [what, bytes] of [
    ['a chain of 301 nodes', chainModel(301)],
    ['two branches of 150', chainModel(150, { inSubgraph: true })],
  ] as const) {
    const rev = await onnxRevision();
    const res = await upload(rev, bytes);
    t.equal(res.status, 400, what);
    t.match(res.body, { error: 'invalid_model', message: /more than 300 nodes/ }, what);
  }
  t.equal((await upload(await onnxRevision(), chainModel(140, { inSubgraph: true }))).status, 200, '281 nodes open');
});

t.test("an upload's inspection process runs below the control plane's priority from its start", async (t) => {
  // Each inspection process's nice value when first seen: a process started by the API's own
  // thread ran at its priority (nice 0) through Node's start and ONNX Runtime's loading, about
  // half a second of CPU per upload, until it lowered its own.
  const firstSeen = new Map<number, number>();
  let watching = true;
  const watched = (async () => {
    while (watching) {
      for (const pid of await childPids(process.pid)) {
        if (firstSeen.has(pid)) continue;
        const command = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
        const fields = await statFields(pid);
        if (command.includes('inspect-model-child') && fields) firstSeen.set(pid, Number(fields[16]));
      }
    }
  })();
  for (let i = 0; i < 3; i++) t.equal((await upload(await onnxRevision(), identityModel(1024))).status, 200);
  watching = false;
  await watched;
  t.ok(firstSeen.size > 0, `inspection processes seen (${firstSeen.size})`);
  t.same(
    [...firstSeen.values()].filter((nice) => nice < MODEL_PROCESS_NICE),
    [],
    `each at nice ${MODEL_PROCESS_NICE} or more when first seen`,
  );
});

t.test('external data is refused before the runtime sees it, and no refusal names a path', async (t) => {
  for (const [what, bytes] of [
    ['an initializer', externalDataModel('../../.data/secrets.json')],
    ['an absolute path', externalDataModel('/etc/hostname')],
    ['a subgraph initializer', externalDataModel('secrets.json', { inSubgraph: true })],
  ] as const) {
    const rev = await onnxRevision();
    const res = await upload(rev, bytes);
    t.equal(res.status, 400, what);
    t.match(res.body, { error: 'invalid_model', message: /external file/ }, what);
    t.notMatch(res.body.message, /secrets|hostname|\/tmp|ws-model/, `${what}: no path`);
  }
  const future = await upload(await onnxRevision(), futureIrModel());
  t.equal(future.status, 400);
  t.match(future.body.message, /Unsupported model IR version/);
  t.notMatch(future.body.message, /\/tmp|ws-model|onnxruntime_src|\.cc:|onnxruntime::/, 'no temporary or source path');
});

t.test("one organization's heavy runs do not queue another's behind them", async (t) => {
  const heavyRev = await onnxRevision();
  t.equal((await upload(heavyRev, heavyModel(256, 512))).status, 200);
  const lightRev = await onnxRevision(bob, bobOrg.id);
  t.equal((await upload(lightRev, chainModel(3), bob)).status, 200);
  const x = { X: { type: 'float32', dims: [1], data: [0] } };
  // Warm both sessions, so what follows measures turns, not loads.
  t.equal(
    (await call(app, 'POST', `/v1/revisions/${heavyRev}/run_model`, { as: alice, body: { inputs: x } })).status,
    200,
  );
  const lightInputs = { X: { type: 'float32', dims: [2], data: [1, 2] } };
  t.equal(
    (await call(app, 'POST', `/v1/revisions/${lightRev}/run_model`, { as: bob, body: { inputs: lightInputs } })).status,
    200,
  );

  const finished: string[] = [];
  const heavy = Array.from({ length: 4 }, (_, i) =>
    call(app, 'POST', `/v1/revisions/${heavyRev}/run_model`, { as: alice, body: { inputs: x } }).then((res) => {
      finished.push(`heavy ${i}`);
      return res.status;
    }),
  );
  const light = call(app, 'POST', `/v1/revisions/${lightRev}/run_model`, {
    as: bob,
    body: { inputs: lightInputs },
  }).then((res) => {
    finished.push('light');
    return res.status;
  });
  t.same(await Promise.all([light, ...heavy]), [200, 200, 200, 200, 200]);
  // Bob's run took its turn beside Alice's first, not after her queue: at most one heavy run ended before it.
  t.ok(finished.indexOf('light') <= 1, finished.join(', '));
});

/** The control plane's model host: a child of this process (the app runs in it), once a run started it. */
async function modelHost(): Promise<number | undefined> {
  for (const pid of await childPids(process.pid)) {
    const cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
    if (cmdline.includes('model-host-child')) return pid;
  }
  return undefined;
}

async function rssMiB(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1]) / 1024;
}

t.test("the model host runs below the control plane's priority", async (t) => {
  // The host started by the runs above.
  const host = await modelHost();
  t.ok(host, 'the model host is running');
  const nices = await threadNices(host!);
  t.ok(
    nices.every((nice) => nice >= MODEL_PROCESS_NICE),
    `every thread at nice ${MODEL_PROCESS_NICE} or more: ${nices.join(' ')}`,
  );
});

t.test("the model host gives back a run's large outputs once it is answered", async (t) => {
  const rev = await onnxRevision();
  t.equal((await upload(rev, constantOfShapeModel())).status, 200);
  const run = (count: number) =>
    call(app, 'POST', `/v1/revisions/${rev}/run_model`, {
      as: alice,
      body: { inputs: { S: { type: 'int64', dims: [1], data: [count] } } },
    });
  t.equal((await run(10)).status, 200, 'the session is loaded');
  const host = (await modelHost())!;
  const before = await rssMiB(host);
  // 20,000,000 float32 zeros: 80 MB in the runtime and as much again in the host's JavaScript.
  for (let i = 0; i < 2; i++) t.equal((await run(20_000_000)).status, 400, 'refused past the output bound');
  const settled = await waitFor(
    () => rssMiB(host),
    (mib) => mib < before + 40,
    'the model host to give the outputs back',
    20_000,
  ).catch(() => undefined);
  t.ok(settled !== undefined, `the host's resident memory is back within 40 MiB of ${Math.round(before)} MiB`);
});

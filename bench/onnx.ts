/**
 * ONNX models (docs/benchmarks.md "ONNX models"), on a system of its own with one runner at its
 * defaults. Prints, asserts nothing:
 *
 * - Upload and Download Model of a 200 MB model (a constant initializer the bench builds): MB/s
 *   each way, and the control plane's RSS before and at its peak during the upload;
 * - run_model on the tests' two-layer MLP: cold (the first run of each of 20 freshly uploaded
 *   models: the session is loaded) and warm p50/p99, and runs/s with 8 in flight;
 * - onnx.run in a three-node workflow against the same workflow with logic.code in its place:
 *   create → succeeded p50/p99 and executions/s.
 *
 *   ./node_modules/.bin/node --no-node-snapshot bench/onnx.ts [--megabytes 200]
 * `npm run bench` runs it after the scheduler section (`--onnx-only` runs only it).
 */
import { readFile } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import { parseArgs } from 'node:util';
import '../shared/db/embedded.ts';
import { command, createWorkload, setOverride, type Account } from './client.ts';
import { batchSpan, createMany, executionLatencies, waitForEnd } from './executions.ts';
import { fmt, summarize, table } from './stats.ts';
import { runSection, type System } from './system.ts';
import { identityModel, mlpModel } from '../test/helpers/onnx-models.ts';

const { values: args } = parseArgs({ options: { megabytes: { type: 'string', default: '200' } } });
const MEGABYTES = Number(args.megabytes);
const log = (message: string) => process.stderr.write(`[bench onnx] ${message}\n`);

async function rssMiB(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => '');
  const kb = /VmRSS:\s+(\d+)/.exec(status);
  return kb ? Number(kb[1]) / 1024 : Number.NaN;
}

function upload(system: System, account: Account, rev: string, bytes: Buffer): Promise<number> {
  const url = new URL(system.apiUrl);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: url.hostname,
        port: url.port,
        method: 'PUT',
        path: `/v1/revisions/${rev}/model`,
        headers: { authorization: `Bearer ${account.token}`, 'x-request-body': JSON.stringify({ size: bytes.length }) },
      },
      (res) => {
        let text = '';
        res.on('data', (chunk) => (text += chunk));
        res.on('end', () =>
          res.statusCode === 200
            ? resolve(res.statusCode)
            : reject(new Error(`upload: ${res.statusCode} ${text.slice(0, 300)}`)),
        );
      },
    );
    req.on('error', reject);
    // Written in 1 MiB pieces, as a client streaming a file would.
    let at = 0;
    const pump = () => {
      while (at < bytes.length) {
        const piece = bytes.subarray(at, at + 1024 * 1024);
        at += piece.length;
        if (!req.write(piece)) return void req.once('drain', pump);
      }
      req.end();
    };
    pump();
  });
}

async function newModelRevision(system: System, account: Account, orgId: string): Promise<string> {
  const res = await fetch(`${system.apiUrl}/v1/blobs/${orgId}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${account.token}` },
    body: JSON.stringify({
      type: 'svc.model.onnx',
      alias: `bench-model-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`,
    }),
  });
  const body = (await res.json()) as any;
  if (body.status !== 'success') throw new Error(`creating a model blob: ${JSON.stringify(body)}`);
  return body.revision.id;
}

async function main(system: System): Promise<string> {
  const code = (source: string, next: string | null) => ({
    processor: 'logic.code',
    config: { code: source },
    routes: { success: next },
  });
  const work = await createWorkload(
    system,
    { start: 'a', nodes: { a: code('export default () => 1', null) } },
    { sessions: 8, quota: 1_000_000_000 },
  );
  const { account, orgId } = work;
  await setOverride(system, 'platform.blobs_per_org', 'org', orgId, 100);

  // Upload and download of a big model.
  const big = identityModel(MEGABYTES * 1024 * 1024);
  const bigRev = await newModelRevision(system, account, orgId);
  const pid = system.controlPlane.pid;
  const rssBefore = await rssMiB(pid);
  let rssPeak = rssBefore;
  const sampler = setInterval(
    () =>
      void rssMiB(pid).then((mib) => {
        if (mib > rssPeak) rssPeak = mib;
      }),
    50,
  );
  log(`uploading ${(big.length / 1e6).toFixed(0)} MB`);
  const upStarted = performance.now();
  await upload(system, account, bigRev, big);
  const upSeconds = (performance.now() - upStarted) / 1000;
  clearInterval(sampler);
  const downStarted = performance.now();
  const res = await fetch(`${system.apiUrl}/v1/revisions/${bigRev}/model`, {
    headers: { authorization: `Bearer ${account.token}` },
  });
  let downloaded = 0;
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) downloaded += chunk.length;
  const downSeconds = (performance.now() - downStarted) / 1000;
  if (downloaded !== big.length) throw new Error(`downloaded ${downloaded} of ${big.length} bytes`);

  // run_model: cold (a fresh model each), then warm.
  log('run_model cold and warm');
  const mlp = mlpModel();
  const input = { inputs: { X: { type: 'float32', dims: [1, 4], data: [1, 2, 3, 4] } } };
  const timedRun = async (rev: string) => {
    const started = performance.now();
    await command(system, account, rev, 'run_model', input);
    return performance.now() - started;
  };
  const cold: number[] = [];
  let warmRev = '';
  for (let i = 0; i < 20; i++) {
    const rev = await newModelRevision(system, account, orgId);
    await upload(system, account, rev, mlp);
    cold.push(await timedRun(rev));
    warmRev = rev;
  }
  const warm: number[] = [];
  for (let i = 0; i < 300; i++) warm.push(await timedRun(warmRev));
  const concurrentStarted = performance.now();
  let done = 0;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (done < 1000) {
        done++;
        await command(system, account, warmRev, 'run_model', input);
      }
    }),
  );
  const runsPerSecond = 1000 / ((performance.now() - concurrentStarted) / 1000);

  // onnx.run in a three-node workflow, against logic.code in its place.
  log('onnx.run against logic.code in a three-node workflow');
  const graphs = {
    'onnx.run': {
      start: 'a',
      nodes: {
        a: code(
          'export default (input) => ({ X: { type: "float32", dims: [1, 4], data: [input.n % 7, 1, 2, 3] } })',
          'model',
        ),
        model: { processor: 'onnx.run', config: { revision_id: warmRev }, routes: { success: 'c' } },
        c: code('export default (input) => ({ y: input.outputs.Y.data })', null),
      },
    },
    'logic.code': {
      start: 'a',
      nodes: {
        a: code(
          'export default (input) => ({ X: { type: "float32", dims: [1, 4], data: [input.n % 7, 1, 2, 3] } })',
          'model',
        ),
        model: code(
          'export default (input) => ({ outputs: { Y: { type: "float32", dims: [1, 2], data: [input.X.data[0] * 2, 1] } } })',
          'c',
        ),
        c: code('export default (input) => ({ y: input.outputs.Y.data })', null),
      },
    },
  };
  const rows: string[][] = [];
  for (const [name, graph] of Object.entries(graphs)) {
    const definitionId = (
      await command(system, account, work.revisionId, 'create_definition', { category: 'workflow', graph })
    ).definition.id;
    const flow = { ...work, definitionId };
    const ids = await createMany(system, [flow], { count: 500, window: 8, ratePerSecond: 100 });
    await waitForEnd(system.sql, ids, 120_000);
    const span = await batchSpan(system.sql, ids);
    const latency = summarize((await executionLatencies(system.sql, ids)).toEnd);
    rows.push([
      `three-node workflow with ${name} in the middle (500 at 100/s): create → succeeded p50 / p99`,
      `${fmt(latency.p50)} / ${fmt(latency.p99)} ms; ${span.succeeded}/500 succeeded`,
      '-',
    ]);
  }

  const coldSummary = summarize(cold);
  const warmSummary = summarize(warm);
  return table([
    ['figure', 'value', 'target'],
    [
      `Upload Model, ${MEGABYTES} MB`,
      `${fmt(big.length / 1e6 / upSeconds)} MB/s (${fmt(upSeconds)} s, opening by ONNX Runtime included)`,
      '-',
    ],
    [`Download Model, ${MEGABYTES} MB`, `${fmt(big.length / 1e6 / downSeconds)} MB/s`, '-'],
    [
      'control plane RSS: before / peak during the upload',
      `${fmt(rssBefore, 0)} / ${fmt(rssPeak, 0)} MiB (+${fmt(rssPeak - rssBefore, 0)})`,
      'growth ≤ ~2 × the stream buffer',
    ],
    [
      'run_model cold (first run of each of 20 fresh models) p50 / p99',
      `${fmt(coldSummary.p50)} / ${fmt(coldSummary.p99)} ms`,
      '-',
    ],
    ['run_model warm (300 in a row) p50 / p99', `${fmt(warmSummary.p50)} / ${fmt(warmSummary.p99)} ms`, '-'],
    ['run_model warm, 8 in flight', `${fmt(runsPerSecond, 0)} runs/s`, '-'],
    ...rows,
  ]);
}

await runSection(1, main);

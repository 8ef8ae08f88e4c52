/**
 * Fixtures and requests of the model scenarios (slow-uploads.ts, slow-downloads.ts,
 * model-outputs.ts, model-host.ts): an organization of the hostile tenant's own with ONNX
 * revisions, an upload over a raw socket, and a `run_model` that settles however it is answered.
 */
import { request as httpRequest, type ClientRequest } from 'node:http';
import type { Account } from '../client.ts';
import type { HostileSystem } from './scenario.ts';

let seq = 0;
const alias = (prefix: string) => `${prefix}-${process.pid}-${Date.now().toString(36)}-${++seq}`;

async function post(system: HostileSystem, account: Account, path: string, body: unknown): Promise<any> {
  const res = await fetch(`${system.apiUrl}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${account.token}` },
    body: JSON.stringify(body),
  });
  const parsed = (await res.json()) as any;
  if (res.status >= 300) throw new Error(`POST ${path}: ${res.status} ${JSON.stringify(parsed)}`);
  return parsed;
}

/** A new organization of `account`'s with `count` ONNX revisions (one blob each); their ids. */
export async function modelRevisions(system: HostileSystem, account: Account, count: number): Promise<string[]> {
  const org = (await post(system, account, '/v1/orgs', { alias: alias('pressure-org') })).org;
  const revisions: string[] = [];
  for (let i = 0; i < count; i++)
    revisions.push(
      (await post(system, account, `/v1/blobs/${org.id}`, { type: 'svc.model.onnx', alias: alias('pressure-model') }))
        .revision.id,
    );
  return revisions;
}

/** Opens Upload Model of `rev` declaring `size` bytes and sends nothing yet; `onEnd` when answered or dropped. */
export function openUpload(
  system: HostileSystem,
  account: Account,
  rev: string,
  size: number,
  onEnd: () => void,
): ClientRequest {
  const url = new URL(system.apiUrl);
  const req = httpRequest({
    host: url.hostname,
    port: url.port,
    method: 'PUT',
    path: `/v1/revisions/${rev}/model`,
    headers: { authorization: `Bearer ${account.token}`, 'x-request-body': JSON.stringify({ size }) },
  });
  let ended = false;
  const end = () => {
    if (ended) return;
    ended = true;
    onEnd();
  };
  req.on('response', (res) => {
    res.resume();
    res.on('end', end);
    res.on('error', end);
  });
  req.on('error', end);
  req.on('close', end);
  return req;
}

/** Uploads `bytes` whole; resolves with the status (refusals are answers, not errors). */
export function upload(system: HostileSystem, account: Account, rev: string, bytes: Buffer): Promise<number> {
  return new Promise((resolve) => {
    let status = 0;
    const req = openUpload(system, account, rev, bytes.length, () => resolve(status));
    req.on('response', (res) => (status = res.statusCode ?? 0));
    req.end(bytes);
  });
}

/** Uploads `bytes` and throws unless the model is ready. */
export async function uploadReady(system: HostileSystem, account: Account, rev: string, bytes: Buffer): Promise<void> {
  const status = await upload(system, account, rev, bytes);
  if (status !== 200) throw new Error(`uploading a model for the scenario: ${status}`);
}

/** `run_model` on `rev`; the status, whatever it is (0 when the connection failed). */
export async function runModel(
  system: HostileSystem,
  account: Account,
  rev: string,
  inputs: Record<string, unknown>,
): Promise<number> {
  try {
    const res = await fetch(`${system.apiUrl}/v1/revisions/${rev}/run_model`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${account.token}` },
      body: JSON.stringify({ inputs }),
    });
    await res.arrayBuffer();
    return res.status;
  } catch {
    return 0;
  }
}

/** Runs `worker` in `lanes` loops until `signal` aborts; resolves once every loop has settled. */
export async function loops(lanes: number, signal: AbortSignal, worker: () => Promise<unknown>): Promise<void> {
  await Promise.all(
    Array.from({ length: lanes }, async () => {
      while (!signal.aborted) await worker();
    }),
  );
}

/** Resolves when `signal` aborts. */
export function aborted(signal: AbortSignal): Promise<void> {
  return signal.aborted
    ? Promise.resolve()
    : new Promise((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
}

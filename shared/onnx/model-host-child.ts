/**
 * The model host (shared/onnx/model-host.ts): a process that loads ONNX models from the database
 * and runs them, so that a model's memory, a runtime crash and a run that will not stop are this
 * process's, which its parent kills and replaces, never the API's or the runner's. Sessions are
 * cached per revision and model hash, least recently used first out, bounded by the memory the
 * sessions hold (`MODEL_CACHE_BYTES`): a session is loaded alone and charged the growth of this
 * process's resident memory across its load (at least the model's bytes), since a small file of
 * many nodes can cost a hundred times its size once opened. Outputs are held to the request's
 * `maxOutputBytes` as JSON before any of them is turned into JSON.
 */
import ort from 'onnxruntime-node';
import pg from 'pg';
import type { Readable } from 'node:stream';
import type { HostReply, HostRequest } from './model-host-messages.ts';
import type { JsonTensor } from './tensors.ts';
import { s3SettingsFrom } from './s3-settings.ts';
import { runtimeReason } from './runtime-messages.ts';
import { yieldCpu } from '../priority.ts';
import { readLargeObject } from '../db/large-objects.ts';

// Before any session exists: ONNX Runtime's threads, started by the first load, inherit it.
const nice = Number(process.env.MODEL_HOST_NICE);
if (Number.isInteger(nice) && nice > 0) yieldCpu(nice);

const pool = new pg.Pool({
  connectionString: process.env.DATABASE_URL,
  max: 2,
  application_name: 'workspace-model-host',
});
pool.on('error', () => {});
const budget = Number(process.env.MODEL_CACHE_BYTES) || 512 * 1024 * 1024;

interface Cached {
  session: ort.InferenceSession;
  bytes: number;
}
const cache = new Map<string, Cached>();
const loading = new Map<string, Promise<Cached>>();

const settings = s3SettingsFrom(process.env);
// The S3 SDK only where a model store is configured (about half a second of CPU at start).
const objects = settings === null ? null : new (await import('./s3-objects.ts')).S3Objects(settings);

async function readAll(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

async function readModel(revisionId: string, sha256: string): Promise<Buffer> {
  const client = await pool.connect();
  try {
    // One snapshot for the row and every chunk: a model replaced meanwhile is still read whole, as it was.
    await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
    const { rows } = await client.query<{
      oid: number | null;
      object_key: string | null;
      sha256: string;
      size: string;
    }>(
      'SELECT oid, object_key, sha256, size FROM models WHERE revision_id = $1::uuid AND (oid IS NOT NULL OR object_key IS NOT NULL)',
      [revisionId],
    );
    if (!rows[0] || rows[0].sha256 !== sha256)
      throw Object.assign(new Error('The model changed or is gone; run again.'), { code: 'model_unavailable' });
    if (rows[0].object_key !== null) {
      await client.query('COMMIT');
      if (objects === null)
        throw Object.assign(new Error('The model is in an S3 store this process is not configured with.'), {
          code: 'model_unavailable',
        });
      return await readAll(await objects.get(rows[0].object_key));
    }
    const bytes = await readLargeObject(client, rows[0].oid!, Number(rows[0].size), 1024 * 1024);
    await client.query('COMMIT');
    return bytes;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => {});
    throw error;
  } finally {
    client.release();
  }
}

/** Loads one at a time, so the memory a load adds is that session's. */
let loads: Promise<unknown> = Promise.resolve();

async function load(key: string, revisionId: string, sha256: string): Promise<Cached> {
  const before = process.memoryUsage.rss();
  const bytes = await readModel(revisionId, sha256);
  const size = bytes.length;
  // No memory arena: ONNX Runtime's CPU arena keeps the largest buffers a session ever needed (a
  // ConstantOfShape asked for millions) until the session goes; without it they are freed as
  // each run ends.
  const session = await ort.InferenceSession.create(bytes, {
    intraOpNumThreads: 1,
    interOpNumThreads: 1,
    enableCpuMemArena: false,
  });
  const entry = { session, bytes: Math.max(size, process.memoryUsage.rss() - before) };
  cache.set(key, entry);
  let total = [...cache.values()].reduce((n, c) => n + c.bytes, 0);
  for (const [oldKey, old] of cache) {
    if (total <= budget || oldKey === key) break;
    cache.delete(oldKey);
    total -= old.bytes;
    void old.session.release();
  }
  return entry;
}

async function sessionFor(revisionId: string, sha256: string): Promise<Cached> {
  const key = `${revisionId}:${sha256}`;
  const hit = cache.get(key);
  if (hit) {
    cache.delete(key);
    cache.set(key, hit);
    return hit;
  }
  let pending = loading.get(key);
  if (!pending) {
    pending = loads
      .catch(() => {})
      .then(() => cache.get(key) ?? load(key, revisionId, sha256))
      .finally(() => loading.delete(key));
    loads = pending;
    loading.set(key, pending);
  }
  return pending;
}

/**
 * The bytes `tensor` takes as JSON data, counted element by element until past `room`
 * (then `room + 1`): nothing is built to count it.
 */
function jsonBytes(tensor: ort.Tensor, room: number): number {
  // Every element takes at least a digit and a comma.
  if (tensor.size * 2 > room) return room + 1;
  let total = 0;
  const data = tensor.data as ArrayLike<number | bigint | string>;
  for (let i = 0; i < data.length && total <= room; i++) {
    const v = data[i]!;
    if (typeof v === 'string') total += Buffer.byteLength(JSON.stringify(v)) + 1;
    else if (tensor.type === 'bool') total += 6;
    // An int64 past 2^53 is a quoted decimal string (fromOrt).
    else total += String(v).length + (typeof v === 'bigint' ? 3 : 1);
  }
  return total;
}

function toOrt(tensor: JsonTensor): ort.Tensor {
  switch (tensor.type) {
    case 'float32':
      return new ort.Tensor('float32', Float32Array.from(tensor.data as number[]), tensor.dims);
    case 'float64':
      return new ort.Tensor('float64', Float64Array.from(tensor.data as number[]), tensor.dims);
    case 'int32':
      return new ort.Tensor('int32', Int32Array.from(tensor.data as number[]), tensor.dims);
    case 'int64':
      return new ort.Tensor(
        'int64',
        BigInt64Array.from(tensor.data.map((v) => BigInt(v as number | string))),
        tensor.dims,
      );
    case 'bool':
      return new ort.Tensor('bool', Uint8Array.from((tensor.data as boolean[]).map((b) => (b ? 1 : 0))), tensor.dims);
    case 'string':
      return new ort.Tensor('string', tensor.data as string[], tensor.dims);
    default:
      throw Object.assign(new Error(`type ${tensor.type} is not supported`), { code: 'invalid_request_body' });
  }
}

function fromOrt(tensor: ort.Tensor): JsonTensor {
  const data = Array.from(tensor.data as ArrayLike<number | bigint | string | boolean>, (v) => {
    if (typeof v === 'bigint') return Number.isSafeInteger(Number(v)) ? Number(v) : v.toString();
    if (tensor.type === 'bool') return Boolean(v);
    return v as number | string;
  });
  return { type: tensor.type as JsonTensor['type'], dims: [...tensor.dims], data };
}

/**
 * Output bytes of one run past which the host collects garbage once the run is answered: the
 * outputs' buffers are freed only when V8 collects them, and an idle host may not collect for
 * hours, holding a refused run's hundred megabytes (the parent starts it with --expose-gc).
 */
const COLLECT_AFTER_BYTES = 8 * 1024 * 1024;
const collect = (globalThis as { gc?: () => void }).gc;
let collecting = false;

function collectSoon(): void {
  if (collect === undefined || collecting) return;
  collecting = true;
  setImmediate(() => {
    collecting = false;
    collect();
  });
}

process.on('message', (message: HostRequest) => {
  void (async () => {
    let reply: HostReply;
    try {
      const { session } = await sessionFor(message.revisionId, message.sha256);
      const feeds = Object.fromEntries(Object.entries(message.inputs).map(([name, tensor]) => [name, toOrt(tensor)]));
      const results = message.outputs ? await session.run(feeds, message.outputs) : await session.run(feeds);
      const outputBytes = Object.values(results).reduce(
        (n, tensor) => n + ((tensor.data as { byteLength?: number }).byteLength ?? tensor.size * 8),
        0,
      );
      if (outputBytes > COLLECT_AFTER_BYTES) collectSoon();
      let room = message.maxOutputBytes;
      for (const tensor of Object.values(results)) {
        room -= jsonBytes(tensor, room);
        if (room < 0)
          throw Object.assign(
            new Error(
              `The outputs are larger than ${message.maxOutputBytes} bytes as JSON; pick fewer with outputs, or send smaller inputs.`,
            ),
            { code: 'output_too_large' },
          );
      }
      reply = {
        id: message.id,
        outputs: Object.fromEntries(Object.entries(results).map(([name, tensor]) => [name, fromOrt(tensor)])),
      };
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      reply = {
        id: message.id,
        error: {
          code: typeof code === 'string' ? code : 'model_run_failed',
          message: runtimeReason(String((error as Error)?.message ?? error)),
        },
      };
    }
    // A parent gone meanwhile: the write fails quietly ('disconnect' below ends this process).
    if (process.connected) process.send?.(reply, (error: Error | null) => void error);
  })();
});
process.on('disconnect', () => process.exit(0));

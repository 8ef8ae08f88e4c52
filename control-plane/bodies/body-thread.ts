/**
 * A body thread (piscina worker of ./body-threads.ts): reads a large command body off the event
 * loop. It runs the checks the event loop would run on a small body — the JSON guard, the
 * command's params schema, `upload_records`' record checks — with the same functions, and hands
 * back only what the handler and its SQL need: refusals as messages, records as the array
 * literals of their INSERTs, a session object's value as its JSON text, all as UTF-8 bytes
 * transferred to the event loop. The parsed body never crosses: a structured clone of 10,000
 * records costs the receiving thread more than parsing them.
 */
import { isUtf8 } from 'node:buffer';
import { Piscina } from 'piscina';
import { ServiceError } from '../../shared/errors.ts';
import { parseInput } from '../../shared/validate.ts';
import { RECORDS_PER_STATEMENT } from '../sql/nlp-records.ts';
import { checkedRecords, jsonLinesRecords, uploadRecordsParams } from '../commands/nlp-record-checks.ts';
import { uploadSessionObjectParams } from '../commands/session-object-params.ts';
import { guardedJson } from './guarded-json.ts';
import { collectAll } from '../models/reclaim.ts';
import type { BodyResult, BodyTask, RecordLiterals, Refused, Shell } from './body-messages.ts';
import type { z } from 'zod';

/** The refusal a check throws, as a message; anything else is a fault and is rethrown. */
function refusalOf(error: unknown): Refused {
  if (error instanceof ServiceError && error.code === 'invalid_request_body') return { refusal: error.message };
  throw error;
}

/** UTF-8 bytes of `text` in an array buffer of their own (transferable; never Buffer's shared pool). */
function bytesOf(text: string): Uint8Array {
  const bytes = Buffer.allocUnsafeSlow(Buffer.byteLength(text, 'utf8'));
  bytes.write(text, 'utf8');
  return bytes;
}

// node-postgres' literal of a text array element (lib/utils.js escapeElement), so a slice's
// literal is the text node-postgres sends for the same array.
function element(text: string | null): string {
  return text === null ? 'NULL' : `"${text.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
}

function literal(items: Array<string | null>): Uint8Array {
  return bytesOf(`{${items.map(element).join(',')}}`);
}

/** Checks the records (checkedRecords) and encodes them a statement's slice at a time. */
function recordLiterals(input: unknown): RecordLiterals | Refused {
  let records;
  try {
    records = checkedRecords(input);
  } catch (error) {
    return refusalOf(error);
  }
  const slices = [];
  for (let at = 0; at < records.length; at += RECORDS_PER_STATEMENT) {
    const slice = records.slice(at, at + RECORDS_PER_STATEMENT);
    slices.push({
      text: literal(slice.map((r) => r.text)),
      labels: literal(slice.map((r) => JSON.stringify(r.labels))),
      meta: literal(slice.map((r) => (r.meta === null ? null : JSON.stringify(r.meta)))),
    });
  }
  return { count: records.length, slices };
}

/** The params with their large field as `true`, parsed by the command's schema (the field is any value there). */
function shellOf(schema: z.ZodType, body: Record<string, unknown>, field: string): Shell {
  const shell = Object.hasOwn(body, field) ? { ...body, [field]: true } : body;
  try {
    return { params: parseInput(schema, shell, 'params') as Record<string, unknown> };
  } catch (error) {
    return refusalOf(error);
  }
}

/** UTF-8 bytes compared as PostgreSQL compares `jsonb` keys: shorter first, then byte by byte. */
function keyOrder(a: Buffer, b: Buffer): number {
  return a.length - b.length || Buffer.compare(a, b);
}

/**
 * `value` as node-postgres parses it back from `jsonb`: every object's keys in `jsonb`'s order
 * (inserted so, JavaScript then puts integer-like keys first, as for the parsed text). Numbers and
 * strings come back as they went: `jsonb` keeps a number's decimal exactly, and the same decimal
 * parses to the same double.
 */
function asStored(value: unknown): unknown {
  if (typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) return value.map(asStored);
  const keys = Object.keys(value).map((key) => ({ key, bytes: Buffer.from(key, 'utf8') }));
  keys.sort((a, b) => keyOrder(a.bytes, b.bytes));
  const stored: Record<string, unknown> = {};
  for (const { key } of keys) stored[key] = asStored((value as Record<string, unknown>)[key]);
  return stored;
}

function readJson(task: BodyTask): BodyResult {
  const parsed = guardedJson(task.bytes);
  if ('refusal' in parsed) return { kind: 'refused', refusal: parsed.refusal };
  const body = parsed.value;
  // Params that are not an object are the registry's to refuse, as for a small body.
  const object = typeof body === 'object' && body !== null && !Array.isArray(body);
  if (task.prepare && object) {
    const params = body as Record<string, unknown>;
    if (task.command === 'upload_records') {
      const shell = shellOf(uploadRecordsParams, params, 'records');
      // Refused params are answered before the records would be checked: nothing to encode.
      const records = 'refusal' in shell ? { count: 0, slices: [] } : recordLiterals(params.records);
      return { kind: 'records', shell, records };
    }
    if (task.command === 'upload_session_object') {
      const shell = shellOf(uploadSessionObjectParams, params, 'value');
      if ('refusal' in shell || params.value === undefined) return { kind: 'object', shell, json: null, answer: null };
      const json = bytesOf(JSON.stringify(params.value));
      return { kind: 'object', shell, json, answer: bytesOf(JSON.stringify(asStored(params.value))) };
    }
  }
  return { kind: 'guarded', bytes: task.bytes };
}

function readJsonLines(task: BodyTask): BodyResult {
  const text = guardedText(task.bytes);
  if (text === null) return { kind: 'refused', refusal: 'The body is not valid UTF-8.' };
  if (!task.prepare || task.command !== 'upload_records') return { kind: 'guarded', bytes: task.bytes };
  let records: unknown[];
  try {
    records = jsonLinesRecords(text);
  } catch (error) {
    return { kind: 'lines', lines: refusalOf(error) };
  }
  return { kind: 'lines', lines: { records: recordLiterals(records) } };
}

function guardedText(bytes: Uint8Array): string | null {
  return isUtf8(bytes) ? Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8') : null;
}

/** The byte arrays of a result, to be transferred with it. */
function transfers(result: BodyResult): ArrayBuffer[] {
  const arrays: Uint8Array[] = [];
  const records = (value: RecordLiterals | Refused) => {
    if ('slices' in value) for (const s of value.slices) arrays.push(s.text, s.labels, s.meta);
  };
  if (result.kind === 'guarded') arrays.push(result.bytes);
  else if (result.kind === 'records') records(result.records);
  else if (result.kind === 'lines' && 'records' in result.lines) records(result.lines.records);
  else if (result.kind === 'object' && result.json !== null && result.answer !== null)
    arrays.push(result.json, result.answer);
  // Only arrays that own their whole buffer can move; the others are copied.
  return arrays
    .filter((a) => a.byteOffset === 0 && a.byteLength === a.buffer.byteLength)
    .map((a) => a.buffer as ArrayBuffer);
}

/** Bodies from this size on leave enough garbage (the parsed body) to collect it at once. */
const COLLECT_AFTER_BYTES = 1024 * 1024;
let collecting = false;

/** Reads one body (BodyTask); the result's byte arrays are transferred, not copied. */
export default function readBody(task: BodyTask): unknown {
  const large = task.bytes.byteLength >= COLLECT_AFTER_BYTES;
  const result = task.format === 'json' ? readJson(task) : readJsonLines(task);
  // Once the result is posted, between tasks: the parsed body is garbage by then, and V8 would
  // keep its tens of megabytes mapped until the thread's heap grew further.
  if (large && !collecting) {
    collecting = true;
    setImmediate(() => {
      collecting = false;
      collectAll();
    });
  }
  const list = [...new Set(transfers(result))];
  return Piscina.move({
    get [Piscina.transferableSymbol]() {
      return list;
    },
    get [Piscina.valueSymbol]() {
      return result;
    },
  } as never);
}

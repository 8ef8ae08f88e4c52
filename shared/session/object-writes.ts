import { z } from 'zod';
import type { Queryable, Tx } from '../db/db.ts';
import { ServiceError } from '../errors.ts';
import { aliasSchema } from '../ids.ts';
import { limitExceeded, limitRefusal, type LimitId, type LimitInForce } from '../limits/index.ts';
import { parseInput } from '../validate.ts';
import { PreparedJson } from '../prepared-json.ts';
import { appendSessionEvent } from '../events/store.ts';
import { heldCount } from '../limits/holdings.ts';
import { limitsInForce } from '../limits/in-force.ts';
import {
  insertContent,
  lockSessionInserts,
  replaceContent,
  shareLockSession,
  type SessionObjectRow,
  type StoredContent,
} from './session-objects-sql.ts';

/**
 * The one code path that writes a session object or file. Upload Session Object, Upload Session
 * File (binary REST and JSON-RPC), the runner's `object.put` processor and `ctx.objects.put` in
 * `logic.code` all call writeSessionObject / writeSessionFile; they differ only in the limit values
 * they pass (docs/workflow.md, "Which limit values apply").
 */

/** The limits an object write is checked against. */
export interface ObjectWriteLimits {
  /**
   * `workflow.session_objects_per_session`: the value in force when the request arrives (REST,
   * JSON-RPC), or the value the execution resolved at creation (`logic.code`, `object.put`).
   */
  objectsQuota: LimitInForce;
  /** `workflow.session_object_bytes` (fixed). */
  objectBytes: LimitInForce;
}

/** The limits a file write is checked against. */
export interface FileWriteLimits {
  /** As for objects: objects and files share the alias namespace and the quota. */
  objectsQuota: LimitInForce;
  /** `workflow.session_file_bytes` (fixed). */
  fileBytes: LimitInForce;
}

/** Who wrote, for the `object.written` / `file.written` session event. */
export interface WriteOrigin {
  /** The execution whose node wrote it; absent for an API call. */
  executionId?: string | null;
  node?: string | null;
}

export interface ObjectWrite extends WriteOrigin {
  /** The session's id (already resolved within its revision). */
  sessionId: string;
  alias: string;
  /** Any JSON value, `null` included. */
  value: unknown;
}

export interface FileWrite extends WriteOrigin {
  sessionId: string;
  alias: string;
  content: Uint8Array;
  /** Stored and served back on download; `application/octet-stream` when absent. */
  contentType?: string | undefined;
}

export interface WriteResult {
  row: SessionObjectRow;
  /** True when the write created the alias (and so took a slot of the quota). */
  created: boolean;
}

/** A file's content type when the uploader names none. */
const DEFAULT_CONTENT_TYPE = 'application/octet-stream';

// A media type with optional parameters (RFC 9110 §8.3.1), printable ASCII only: it is served back
// verbatim as a Content-Type header, so nothing that could split or smuggle a header gets in.
const TOKEN = "[!#$%&'*+.^_`|~0-9A-Za-z-]+";
const CONTENT_TYPE_RE = new RegExp(
  `^${TOKEN}/${TOKEN}(?:[ \\t]*;[ \\t]*${TOKEN}=(?:${TOKEN}|"[\\x20\\x21\\x23-\\x5b\\x5d-\\x7e]*"))*$`,
);

/** A file's `content_type`: a media type such as `image/png` or `text/plain; charset=utf-8`, at most 255 characters. */
export const contentTypeSchema = z.string().refine(
  // Length first: the pattern never runs on a megabyte of JSON-RPC input.
  (value) => value.length <= 255 && CONTENT_TYPE_RE.test(value),
  'content_type must be a media type such as image/png, at most 255 characters',
);

function expect(resolved: LimitInForce, id: LimitId): LimitInForce {
  // A programming error (limits passed in the wrong slot), never a client's.
  if (resolved.id !== id) throw new Error(`expected the value of ${id}, got ${resolved.id}`);
  return resolved;
}

function over(resolved: LimitInForce, size: number): boolean {
  return typeof resolved.value === 'number' && size > resolved.value;
}

/**
 * PostgreSQL refuses some text that JSON allows: U+0000 in a string (in `jsonb` and `text`) and
 * lone surrogate escapes. Those are the client's input, so they answer `invalid_request_body`
 * rather than a 500. Anything else is rethrown as is.
 */
export function unstorable(error: unknown): never {
  const code = (error as { code?: unknown }).code;
  if (code === '22P05' || code === '22021' || code === '22P02') {
    throw new ServiceError(
      'invalid_request_body',
      'The content holds text the store cannot keep (a U+0000 character or a lone surrogate).',
      {},
      { cause: error },
    );
  }
  throw error;
}

/** The values in force of the limits on session object and file writes, for an API call on a session of `blobId`. */
export async function contentWriteLimits(q: Queryable, blobId: string): Promise<ObjectWriteLimits & FileWriteLimits> {
  const limits = await limitsInForce(q, { blobId });
  return {
    objectsQuota: limits['workflow.session_objects_per_session'],
    objectBytes: limits['workflow.session_object_bytes'],
    fileBytes: limits['workflow.session_file_bytes'],
  };
}

/**
 * Stores `content` under an alias of the session, in the caller's transaction, and appends the
 * session event. Order: the session must exist (404) and be active (409 `conflict`); replacing an
 * alias never touches the quota; creating one counts the session's objects and files first.
 *
 * Locks: the session row only FOR SHARE (see shareLockSession), so replacements never queue
 * behind each other. Creating an alias takes the session's insert lock (see lockSessionInserts)
 * so that listing positions commit in order; the count is read under it, so the quota holds
 * exactly (docs/session-contents.md, "Limits on these writes": stricter than one past it for
 * simultaneous creations, which would be allowed).
 */
async function store(
  tx: Tx,
  sessionId: string,
  alias: string,
  content: StoredContent,
  quota: LimitInForce,
  origin: WriteOrigin,
): Promise<WriteResult> {
  const status = await shareLockSession(tx, sessionId);
  if (status === undefined) throw new ServiceError('not_found', 'No such session.');
  if (status !== 'active') throw new ServiceError('conflict', 'The session is being deleted.');
  let result: WriteResult;
  try {
    let replaced = await replaceContent(tx, sessionId, alias, content);
    if (!replaced) {
      await lockSessionInserts(tx, 'session_objects', sessionId);
      // Another writer may have created the alias while this one waited: then it is a replacement.
      replaced = await replaceContent(tx, sessionId, alias, content);
    }
    if (replaced) {
      result = { row: replaced, created: false };
    } else {
      const held = await heldCount(tx, 'workflow.session_objects_per_session', sessionId);
      if (typeof quota.value === 'number' && held >= quota.value) throw limitExceeded(quota, held);
      result = await insertContent(tx, sessionId, alias, content);
    }
  } catch (error) {
    unstorable(error);
  }
  const { row, created } = result;
  const attributes: Record<string, unknown> = {
    object_id: row.id,
    alias: row.alias,
    kind: row.kind,
    size: row.size,
    created,
  };
  if (row.kind === 'file') attributes.content_type = row.content_type;
  await appendSessionEvent(tx, {
    sessionId,
    kind: row.kind === 'file' ? 'file.written' : 'object.written',
    executionId: origin.executionId ?? null,
    node: origin.node ?? null,
    attributes,
  });
  return result;
}

/** `value` as JSON text and its UTF-8 bytes, or `invalid_request_body` when it is not JSON. */
function serialized(value: unknown): { json: string; size: number } {
  let json: string | undefined;
  try {
    json = JSON.stringify(value);
  } catch (error) {
    throw new ServiceError('invalid_request_body', 'The value is not JSON.', {}, { cause: error });
  }
  if (json === undefined) throw new ServiceError('invalid_request_body', 'The value is not JSON.');
  return { json, size: Buffer.byteLength(json, 'utf8') };
}

/**
 * Writes a JSON value under `alias` (creating it, or replacing an object or a file). Refusals:
 * `invalid_request_body` (alias grammar, a value that is not JSON), `session_object_too_large`
 * when the value serialized (`JSON.stringify`, UTF-8 bytes) passes `workflow.session_object_bytes`,
 * 404/409 for the session, `limit_exceeded` with `{id, value, held}` when a new alias would pass
 * `workflow.session_objects_per_session`. `tx` must be a transaction: the write and its event
 * commit together.
 */
export async function writeSessionObject(tx: Tx, write: ObjectWrite, limits: ObjectWriteLimits): Promise<WriteResult> {
  const quota = expect(limits.objectsQuota, 'workflow.session_objects_per_session');
  const ceiling = expect(limits.objectBytes, 'workflow.session_object_bytes');
  const alias = parseInput(aliasSchema, write.alias, 'alias');
  // A large request's value comes serialized by a body thread of the control plane, with the
  // text its answer carries: the value is then neither read back nor parsed here.
  const prepared = write.value instanceof PreparedJson ? write.value : null;
  const { json, size } = prepared ?? serialized(write.value);
  if (over(ceiling, size)) {
    throw limitRefusal(
      'session_object_too_large',
      ceiling,
      undefined,
      `The object is ${size} bytes serialized; ${ceiling.id} is ${String(ceiling.value)}.`,
    );
  }
  const content = prepared === null ? { json, size } : { json, size, answer: prepared.answer };
  const result = await store(tx, write.sessionId, alias, { kind: 'object', ...content }, quota, write);
  if (prepared !== null) result.row.value = prepared.answer;
  return result;
}

/**
 * Writes a file's bytes under `alias` (creating it, or replacing an object or a file).
 * Refusals as writeSessionObject, with `session_file_too_large` when the bytes pass
 * `workflow.session_file_bytes` and `invalid_request_body` for a malformed `contentType`.
 */
export async function writeSessionFile(tx: Tx, write: FileWrite, limits: FileWriteLimits): Promise<WriteResult> {
  const quota = expect(limits.objectsQuota, 'workflow.session_objects_per_session');
  const ceiling = expect(limits.fileBytes, 'workflow.session_file_bytes');
  const alias = parseInput(aliasSchema, write.alias, 'alias');
  const contentType =
    write.contentType === undefined
      ? DEFAULT_CONTENT_TYPE
      : parseInput(contentTypeSchema, write.contentType, 'content_type');
  const size = write.content.byteLength;
  if (over(ceiling, size)) {
    throw limitRefusal(
      'session_file_too_large',
      ceiling,
      undefined,
      `The file is ${size} bytes; ${ceiling.id} is ${String(ceiling.value)}.`,
    );
  }
  const bytes = Buffer.from(write.content.buffer, write.content.byteOffset, write.content.byteLength);
  return store(tx, write.sessionId, alias, { kind: 'file', bytes, contentType, size }, quota, write);
}

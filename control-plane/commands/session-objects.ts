import { z } from 'zod';
import { decodeCursor, encodeCursor, keysetPage, parseLimit } from '../../shared/cursor.ts';
import { ServiceError } from '../../shared/errors.ts';
import { aliasSchema, refSchema } from '../../shared/ids.ts';
import type { RevisionScope } from './command.ts';
import { defineCommand, WORKFLOW_BLOBS } from './command.ts';
import { sessionObjectSchema } from '../openapi/records.ts';
import type { AppContext } from '../context.ts';
import { downloadable, listContents, sessionObjectRecord } from '../../shared/session/session-objects-sql.ts';
import { findSession } from '../workflow/session-ref.ts';
import { uploadSessionObjectParams } from './session-object-params.ts';
import {
  contentTypeSchema,
  contentWriteLimits,
  writeSessionFile,
  writeSessionObject,
} from '../../shared/session/object-writes.ts';

/** The listing name list_session_objects' cursors are bound to (with the session's id). */
const LISTING = 'session_objects';
/** Opaque-cursor listings take `limit` 1..200, default 50 (docs/session-contents.md, "Pagination"). */
const LIMIT_RANGE = { fallback: 50, max: 200 };
/**
 * A page stops early once the values it carries pass this many bytes (the first row always
 * comes), so 200 objects of 5 MiB never make one reply. A short page is not the end: only a null
 * cursor is (docs/session-contents.md, "Pagination").
 */
const PAGE_VALUE_BYTES = 8 * 1024 * 1024;
/** A position: the `seq` of the last row returned. */
const positionSchema = z.number().int().nonnegative();

// A single character class: a grouped pattern would backtrack through megabytes of input.
const BASE64_RE = /^[A-Za-z0-9+/]*={0,2}$/;

/** Standard base64 with padding, nothing else (no whitespace, no URL alphabet). */
const base64Schema = z
  .string()
  .refine(
    (value) => value.length % 4 === 0 && BASE64_RE.test(value),
    'content_base64 must be standard base64 with padding',
  );

/** The params of Upload Session File besides its bytes: the `X-Request-Body` header over REST. */
export const fileTargetSchema = z.strictObject({
  session_id: refSchema,
  alias: aliasSchema,
  content_type: contentTypeSchema.optional(),
});
/** The params of Download Session File (the JSON body over REST). */
export const fileRefSchema = z.strictObject({ session_id: refSchema, alias: refSchema });

/**
 * Upload Session File, shared by the binary REST route and the JSON-RPC command: resolves the
 * session in the revision and writes through writeSessionFile with the values in force.
 */
export async function storeSessionFile(
  ctx: AppContext,
  scope: RevisionScope,
  target: z.output<typeof fileTargetSchema>,
  content: Uint8Array,
): Promise<Record<string, unknown>> {
  const { row } = await ctx.db.transaction(async (tx) => {
    const session = await findSession(tx, scope.revision.id, target.session_id);
    const limits = await contentWriteLimits(tx, scope.blob.id);
    return writeSessionFile(
      tx,
      { sessionId: session.id, alias: target.alias, content, contentType: target.content_type },
      limits,
    );
  });
  return sessionObjectRecord(row);
}

/**
 * Download Session File, shared by both transports: the file's bytes and how to serve them.
 * An alias holding an object, or none, is 404 `not_found`. A session being deleted still reads.
 */
export async function readSessionFile(
  ctx: AppContext,
  scope: RevisionScope,
  ref: z.output<typeof fileRefSchema>,
): Promise<{ content: Buffer; size: number; content_type: string }> {
  const session = await findSession(ctx.db, scope.revision.id, ref.session_id);
  const found = await downloadable(ctx.db, session.id, ref.alias);
  if (!found) throw new ServiceError('not_found', 'No such session file.');
  if (found.kind !== 'file' || found.content === null) {
    throw new ServiceError(
      'not_found',
      'No such session file: the alias holds an object (read it with list_session_objects).',
    );
  }
  return { content: found.content, size: found.size, content_type: found.content_type ?? 'application/octet-stream' };
}

const uploadSessionObject = defineCommand({
  name: 'upload_session_object',
  result: z.strictObject({ object: sessionObjectSchema }),
  blobTypes: WORKFLOW_BLOBS,
  role: 'write',
  params: uploadSessionObjectParams,
  async handler(ctx, _principal, params, call) {
    const { row } = await ctx.db.transaction(async (tx) => {
      const session = await findSession(tx, call.revision.revision.id, params.session_id);
      const limits = await contentWriteLimits(tx, call.revision.blob.id);
      return writeSessionObject(tx, { sessionId: session.id, alias: params.alias, value: params.value }, limits);
    });
    return { object: sessionObjectRecord(row) };
  },
});

const listSessionObjects = defineCommand({
  name: 'list_session_objects',
  result: z.strictObject({ objects: z.array(sessionObjectSchema), cursor: z.string().nullable() }),
  blobTypes: WORKFLOW_BLOBS,
  role: 'read',
  // `limit` is checked by parseLimit, so every malformed one is `invalid_limit`, not a body error.
  params: z.strictObject({ session_id: refSchema, cursor: z.string().optional(), limit: z.unknown().optional() }),
  async handler(ctx, _principal, params, call) {
    const session = await findSession(ctx.db, call.revision.revision.id, params.session_id);
    const limit = parseLimit(params.limit, LIMIT_RANGE);
    const key = ctx.config.secrets.CURSOR_KEY;
    const filters = { session_id: session.id };
    let after = 0;
    if (params.cursor !== undefined) {
      const position = positionSchema.safeParse(decodeCursor(key, LISTING, filters, params.cursor));
      if (!position.success) throw new ServiceError('invalid_cursor');
      after = position.data;
    }
    const rows = await listContents(ctx.db, session.id, after, limit + 1, PAGE_VALUE_BYTES);
    // `within` holds for a prefix of the rows (sizes only add up), so the budget cuts the tail.
    const fitting = rows.filter((row) => row.within);
    const { page, last } = keysetPage(fitting, limit);
    const more = rows.length > page.length;
    return {
      objects: page.map(sessionObjectRecord),
      cursor: more && last ? encodeCursor(key, LISTING, filters, last.seq) : null,
    };
  },
});

/**
 * Upload Session File over JSON-RPC (REST has the binary route, which takes this name's path):
 * the bytes travel as `content_base64`.
 */
export const uploadSessionFile = defineCommand({
  name: 'upload_session_file',
  result: z.strictObject({ object: sessionObjectSchema }),
  blobTypes: WORKFLOW_BLOBS,
  role: 'write',
  params: fileTargetSchema.extend({ content_base64: base64Schema }),
  async handler(ctx, _principal, params, call) {
    const { content_base64, ...target } = params;
    return { object: await storeSessionFile(ctx, call.revision, target, Buffer.from(content_base64, 'base64')) };
  },
});

/** Download Session File over JSON-RPC: the bytes come back as `content_base64`. */
export const downloadSessionFile = defineCommand({
  name: 'download_session_file',
  result: z.strictObject({
    content_base64: z.base64(),
    size: z.number().int().nonnegative(),
    content_type: z.string(),
  }),
  blobTypes: WORKFLOW_BLOBS,
  role: 'read',
  params: fileRefSchema,
  async handler(ctx, _principal, params, call) {
    const file = await readSessionFile(ctx, call.revision, params);
    return { content_base64: file.content.toString('base64'), size: file.size, content_type: file.content_type };
  },
});

/** Session objects and files (docs/session-contents.md). */
export const sessionObjectCommands = [uploadSessionObject, listSessionObjects, uploadSessionFile, downloadSessionFile];

import { z } from 'zod';
import { decodeCursor, encodeCursor, keysetPage, parseLimit } from '../../shared/cursor.ts';
import { jsonProblem } from '../../shared/json-guard.ts';
import { ServiceError } from '../../shared/errors.ts';
import { requireEntitlement } from '../limits/entitlement.ts';
import { insertRecords, listRecords, nlpRecord, type NewNlpRecord } from '../sql/nlp-records.ts';
import { defineCommand } from './command.ts';
import { nlpRecordSchema } from '../openapi/records.ts';
import { checkRecordBounds } from '../limits/storage-bounds.ts';
import { revisionUsage } from '../sql/revision-usage.ts';

/**
 * NLP dataset commands (docs/blob-types.md, "NLP datasets"): a revision of a
 * `svc.dataset.nlp` blob holds text records `{text, labels?, meta?}`, appended by
 * `upload_records` (a JSON array, or JSON Lines over REST) and read back in upload order by
 * `list_records` with the opaque cursor.
 */

const NLP = ['svc.dataset.nlp'] as const;

/** Bounds of one upload and one record (documented in docs/blob-types.md). */
const NLP_BOUNDS = {
  recordsPerCall: 10_000,
  textBytes: 65_536,
  labels: 64,
  labelLength: 256,
  metaBytes: 16_384,
} as const;

/**
 * Checks every record and says which one is wrong: `records[i]: ...` (400
 * `invalid_request_body`), nothing written. Records are checked here rather than by a zod schema
 * so that every message names the record's index and the rule, however malformed the input.
 */
function checkedRecords(input: unknown): NewNlpRecord[] {
  const bad = (index: number, message: string) =>
    new ServiceError('invalid_request_body', `Invalid params: records[${index}]: ${message}`);
  if (!Array.isArray(input))
    throw new ServiceError(
      'invalid_request_body',
      'Invalid params: records: an array of {text, labels?, meta?} objects',
    );
  if (input.length === 0)
    throw new ServiceError('invalid_request_body', 'Invalid params: records: at least one record');
  if (input.length > NLP_BOUNDS.recordsPerCall)
    throw new ServiceError(
      'invalid_request_body',
      `Invalid params: records: at most ${NLP_BOUNDS.recordsPerCall} per call, got ${input.length}`,
    );
  return input.map((record, index) => {
    if (typeof record !== 'object' || record === null || Array.isArray(record))
      throw bad(index, 'must be an object {text, labels?, meta?}');
    const { text, labels, meta, ...rest } = record as Record<string, unknown>;
    const unknown = Object.keys(rest);
    if (unknown.length > 0) throw bad(index, `unknown field ${JSON.stringify(unknown[0])}`);
    if (typeof text !== 'string') throw bad(index, 'text must be a string');
    if (Buffer.byteLength(text, 'utf8') > NLP_BOUNDS.textBytes)
      throw bad(index, `text is longer than ${NLP_BOUNDS.textBytes} bytes`);
    if (labels !== undefined) {
      if (
        !Array.isArray(labels) ||
        labels.some((l) => typeof l !== 'string' || l.length === 0 || l.length > NLP_BOUNDS.labelLength)
      ) {
        throw bad(index, `labels must be an array of strings of 1-${NLP_BOUNDS.labelLength} characters`);
      }
      if (labels.length > NLP_BOUNDS.labels) throw bad(index, `at most ${NLP_BOUNDS.labels} labels`);
    }
    if (meta !== undefined && meta !== null) {
      if (typeof meta !== 'object' || Array.isArray(meta)) throw bad(index, 'meta must be an object');
      if (Buffer.byteLength(JSON.stringify(meta), 'utf8') > NLP_BOUNDS.metaBytes)
        throw bad(index, `meta is larger than ${NLP_BOUNDS.metaBytes} bytes`);
    }
    return {
      text,
      labels: (labels as string[] | undefined) ?? [],
      meta: (meta as Record<string, unknown> | null | undefined) ?? null,
    };
  });
}

/**
 * Parses a JSON Lines body (REST `upload_records` with `content-type: application/x-ndjson` or
 * `application/jsonl`): one JSON record per non-empty line; a line that is not JSON is refused
 * naming its record index (its line among the non-empty ones). The records then pass the guard
 * every JSON body passes (shared/json-guard.ts: depth, U+0000, unpaired surrogates), counted as
 * the JSON body `{"records": [...]}` they stand for, so either transport refuses the same input.
 */
export function jsonLinesRecords(body: string): unknown[] {
  const records: unknown[] = [];
  for (const line of body.split('\n')) {
    if (line.trim() === '') continue;
    try {
      records.push(JSON.parse(line));
    } catch {
      throw new ServiceError(
        'invalid_request_body',
        `Invalid params: records[${records.length}]: the line is not JSON`,
      );
    }
  }
  const problem = jsonProblem({ records });
  if (problem !== null) throw new ServiceError('invalid_request_body', `Invalid body: ${problem}.`);
  return records;
}

/** `upload_records {records}` → `uploaded` (how many), `total` (the revision's records now). */
const uploadRecords = defineCommand({
  name: 'upload_records',
  result: z.strictObject({ uploaded: z.number().int().nonnegative(), total: z.number().int().nonnegative() }),
  blobTypes: NLP,
  role: 'write',
  creates: true,
  params: z.strictObject({ records: z.unknown() }),
  async handler(ctx, _principal, params, call) {
    const { blob, revision } = call.revision;
    await requireEntitlement(ctx.db, blob.id, 'nlp.enabled');
    const records = checkedRecords(params.records);
    const total = await ctx.db.transaction(async (tx) => {
      // Writers of one revision queue here, so `seq` order is commit order (see insertRecords).
      await tx.query('SELECT 1 FROM revisions WHERE id = $1::uuid FOR NO KEY UPDATE', [revision.id]);
      await insertRecords(tx, revision.id, records);
      // The insert's trigger counted the records in this transaction: past a bound, it rolls back.
      const usage = await revisionUsage(tx, revision.id);
      checkRecordBounds(usage, ctx.config.storage);
      return usage.records;
    });
    return { uploaded: records.length, total };
  },
});

const LISTING = 'nlp_records';
const positionSchema = z.number().int().nonnegative();

/** `list_records {cursor?, limit?}` → `records, cursor`: upload order, opaque cursor, limit 1-200 (default 50). */
const listRecordsCommand = defineCommand({
  name: 'list_records',
  result: z.strictObject({ records: z.array(nlpRecordSchema), cursor: z.string().nullable() }),
  blobTypes: NLP,
  role: 'read',
  params: z.strictObject({ cursor: z.string().optional(), limit: z.unknown().optional() }),
  async handler(ctx, _principal, params, call) {
    const { blob, revision } = call.revision;
    await requireEntitlement(ctx.db, blob.id, 'nlp.enabled');
    const limit = parseLimit(params.limit, { fallback: 50, max: 200 });
    const filters = { revision_id: revision.id };
    let after = 0;
    if (params.cursor !== undefined) {
      const position = positionSchema.safeParse(
        decodeCursor(ctx.config.secrets.CURSOR_KEY, LISTING, filters, params.cursor),
      );
      if (!position.success) throw new ServiceError('invalid_cursor');
      after = position.data;
    }
    const { page, last, more } = keysetPage(await listRecords(ctx.db, revision.id, after, limit + 1), limit);
    return {
      records: page.map(nlpRecord),
      cursor: more && last ? encodeCursor(ctx.config.secrets.CURSOR_KEY, LISTING, filters, last.seq) : null,
    };
  },
});

export const nlpCommands = [uploadRecords, listRecordsCommand] as const;

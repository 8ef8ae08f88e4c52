import { z } from 'zod';
import { decodeCursor, encodeCursor, keysetPage, parseLimit } from '../../shared/cursor.ts';
import { ServiceError } from '../../shared/errors.ts';
import { requireEntitlement } from '../limits/entitlement.ts';
import { insertRecords, listRecords, nlpRecord } from '../sql/nlp-records.ts';
import { checkedRecords, uploadRecordsParams } from './nlp-record-checks.ts';
import { PreparedRecords } from '../bodies/prepared.ts';
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

/** `upload_records {records}` → `uploaded` (how many), `total` (the revision's records now). */
const uploadRecords = defineCommand({
  name: 'upload_records',
  result: z.strictObject({ uploaded: z.number().int().nonnegative(), total: z.number().int().nonnegative() }),
  blobTypes: NLP,
  role: 'write',
  creates: true,
  params: uploadRecordsParams,
  async handler(ctx, _principal, params, call) {
    const { blob, revision } = call.revision;
    await requireEntitlement(ctx.db, blob.id, 'nlp.enabled');
    // A large body's records were checked and encoded by a body thread (control-plane/bodies/).
    const records = params.records instanceof PreparedRecords ? params.records.take() : checkedRecords(params.records);
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

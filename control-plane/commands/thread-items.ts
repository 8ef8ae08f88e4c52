import { z } from 'zod';
import { decodeCursor, encodeCursor, keysetPage, parseLimit } from '../../shared/cursor.ts';
import { ServiceError } from '../../shared/errors.ts';
import { aliasSchema, refSchema } from '../../shared/ids.ts';
import { defineCommand, WORKFLOW_BLOBS } from './command.ts';
import { threadItemSchema } from '../openapi/records.ts';
import { listThreadItems, threadItemRecord } from '../../shared/session/thread-items-sql.ts';
import { findSession } from '../workflow/session-ref.ts';
import { postThreadItem, threadItemLimits, threadSchema } from '../../shared/session/thread-writes.ts';

/** The listing name list_session_thread_items' cursors are bound to (with the session and thread filter). */
const LISTING = 'session_thread_items';
const LIMIT_RANGE = { fallback: 50, max: 200 };
const positionSchema = z.number().int().nonnegative();

const postSessionThreadItem = defineCommand({
  name: 'post_session_thread_item',
  result: z.strictObject({ thread_item: threadItemSchema }),
  blobTypes: WORKFLOW_BLOBS,
  role: 'write',
  creates: true,
  params: z.strictObject({
    session_id: refSchema,
    thread: threadSchema.optional(),
    text: z.string().optional(),
    data: z.unknown().optional(),
    files: z.array(aliasSchema).optional(),
  }),
  async handler(ctx, principal, params, call) {
    const row = await ctx.db.transaction(async (tx) => {
      const session = await findSession(tx, call.revision.revision.id, params.session_id);
      const limits = await threadItemLimits(tx, call.revision.blob.id);
      return postThreadItem(
        tx,
        {
          sessionId: session.id,
          thread: params.thread,
          text: params.text,
          data: params.data,
          files: params.files,
          authorId: principal.userId,
        },
        limits,
      );
    });
    return { thread_item: threadItemRecord(row) };
  },
});

const listSessionThreadItems = defineCommand({
  name: 'list_session_thread_items',
  result: z.strictObject({ thread_items: z.array(threadItemSchema), cursor: z.string().nullable() }),
  blobTypes: WORKFLOW_BLOBS,
  role: 'read',
  params: z.strictObject({
    session_id: refSchema,
    // Absent: every thread of the session, in posting order.
    thread: threadSchema.optional(),
    cursor: z.string().optional(),
    limit: z.unknown().optional(),
  }),
  async handler(ctx, _principal, params, call) {
    const session = await findSession(ctx.db, call.revision.revision.id, params.session_id);
    const limit = parseLimit(params.limit, LIMIT_RANGE);
    const key = ctx.config.secrets.CURSOR_KEY;
    const thread = params.thread ?? null;
    // A cursor resumes only the listing it came from: same session, same thread filter.
    const filters = { session_id: session.id, thread };
    let after = 0;
    if (params.cursor !== undefined) {
      const position = positionSchema.safeParse(decodeCursor(key, LISTING, filters, params.cursor));
      if (!position.success) throw new ServiceError('invalid_cursor');
      after = position.data;
    }
    const rows = await listThreadItems(ctx.db, session.id, thread, after, limit + 1);
    const { page, last, more } = keysetPage(rows, limit);
    return {
      thread_items: page.map(threadItemRecord),
      cursor: more && last ? encodeCursor(key, LISTING, filters, last.seq) : null,
    };
  },
});

/** Thread items (docs/session-contents.md, "Thread items"). */
export const threadItemCommands = [postSessionThreadItem, listSessionThreadItems];

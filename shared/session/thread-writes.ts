import { z } from 'zod';
import type { Queryable, Tx } from '../db/db.ts';
import { ServiceError } from '../errors.ts';
import { aliasSchema } from '../ids.ts';
import { limitRefusal, type LimitId, type LimitInForce } from '../limits/index.ts';
import { parseInput } from '../validate.ts';
import { appendSessionEvent } from '../events/store.ts';
import { limitsInForce } from '../limits/in-force.ts';
import { lockSessionInserts, shareLockFiles, shareLockSession } from './session-objects-sql.ts';
import { insertThreadItem, type ThreadItemRow } from './thread-items-sql.ts';
import { unstorable, type WriteOrigin } from './object-writes.ts';

/**
 * The one code path that posts a thread item: `post_session_thread_item` on both transports, and
 * the runner's `thread.post` processor and `ctx.thread.post` in `logic.code`.
 */

/** The thread an item goes to when none is named. */
const DEFAULT_THREAD = 'main';

/** A thread name: 1–64 characters of `a-z 0-9 . _ -`, first a letter or digit (`main`, `review-2`). */
export const threadSchema = z
  .string()
  .regex(
    /^[a-z0-9][a-z0-9._-]{0,63}$/,
    'thread must be 1-64 characters of a-z 0-9 . _ - starting with a letter or digit',
  );

/** The limits a post is checked against; both are fixed, so a run passes the same values as an API call. */
export interface ThreadItemLimits {
  /** `workflow.thread_item_bytes`. */
  itemBytes: LimitInForce;
  /** `workflow.thread_item_files`. */
  itemFiles: LimitInForce;
}

export interface ThreadItemPost extends WriteOrigin {
  /** The session's id (already resolved within its revision). */
  sessionId: string;
  /** Defaults to `main`. */
  thread?: string | undefined;
  text?: string | null | undefined;
  /** Any JSON value; `null` and absent both mean none. */
  data?: unknown;
  /** Aliases of files of the same session. */
  files?: readonly string[] | undefined;
  /** The account that posted through the API; null for a post by an execution. */
  authorId?: string | null;
}

const postShape = z.object({
  thread: threadSchema.optional(),
  text: z.string().nullable().optional(),
  files: z.array(aliasSchema).optional(),
});

function expect(resolved: LimitInForce, id: LimitId): LimitInForce {
  if (resolved.id !== id) throw new Error(`expected the value of ${id}, got ${resolved.id}`);
  return resolved;
}

/** The values in force of the thread item limits for an API call on a session of `blobId`. */
export async function threadItemLimits(q: Queryable, blobId: string): Promise<ThreadItemLimits> {
  const limits = await limitsInForce(q, { blobId });
  return { itemBytes: limits['workflow.thread_item_bytes'], itemFiles: limits['workflow.thread_item_files'] };
}

/**
 * Posts an item in the caller's transaction and appends `thread.item_posted`. Refusals, in order:
 * `invalid_request_body` (thread or alias grammar, an item with no text, data or files, a file
 * named twice); `too_many_files` when `files` holds more than `workflow.thread_item_files`;
 * `thread_item_too_large` when `JSON.stringify({text, data, files})` of the item as stored (absent
 * fields as `null` / `[]`) passes `workflow.thread_item_bytes`; 404/409 for the session;
 * `invalid_request_body` naming every alias that is not a file of the session. The named files
 * are share-locked until commit, so none can turn into an object under the item.
 */
export async function postThreadItem(tx: Tx, post: ThreadItemPost, limits: ThreadItemLimits): Promise<ThreadItemRow> {
  const itemBytes = expect(limits.itemBytes, 'workflow.thread_item_bytes');
  const itemFiles = expect(limits.itemFiles, 'workflow.thread_item_files');
  const shape = parseInput(postShape, { thread: post.thread, text: post.text, files: post.files }, 'thread item');
  const thread = shape.thread ?? DEFAULT_THREAD;
  const text = shape.text ?? null;
  const data = post.data ?? null;
  const files = shape.files ?? [];
  if ((text === null || text === '') && data === null && files.length === 0) {
    throw new ServiceError('invalid_request_body', 'A thread item needs text, data or files.');
  }
  if (new Set(files).size !== files.length)
    throw new ServiceError('invalid_request_body', 'A thread item names each file once.');
  if (typeof itemFiles.value === 'number' && files.length > itemFiles.value) {
    throw limitRefusal(
      'too_many_files',
      itemFiles,
      undefined,
      `The item names ${files.length} files; ${itemFiles.id} is ${itemFiles.value}.`,
    );
  }
  let serialized: string | undefined;
  let dataJson: string | null;
  try {
    serialized = JSON.stringify({ text, data, files });
    dataJson = data === null ? null : JSON.stringify(data);
  } catch (error) {
    throw new ServiceError('invalid_request_body', "The item's data is not JSON.", {}, { cause: error });
  }
  const size = Buffer.byteLength(serialized, 'utf8');
  if (typeof itemBytes.value === 'number' && size > itemBytes.value) {
    throw limitRefusal(
      'thread_item_too_large',
      itemBytes,
      undefined,
      `The item is ${size} bytes serialized; ${itemBytes.id} is ${itemBytes.value}.`,
    );
  }

  const status = await shareLockSession(tx, post.sessionId);
  if (status === undefined) throw new ServiceError('not_found', 'No such session.');
  if (status !== 'active') throw new ServiceError('conflict', 'The session is being deleted.');
  const found = await shareLockFiles(tx, post.sessionId, files);
  const missing = files.filter((alias) => !found.has(alias));
  if (missing.length > 0) {
    throw new ServiceError(
      'invalid_request_body',
      `Not a file of this session: ${missing.map((a) => JSON.stringify(a)).join(', ')}.`,
    );
  }
  await lockSessionInserts(tx, 'thread_items', post.sessionId);
  let row: ThreadItemRow;
  try {
    row = await insertThreadItem(tx, {
      sessionId: post.sessionId,
      thread,
      text,
      dataJson,
      files,
      authorId: post.authorId ?? null,
      executionId: post.executionId ?? null,
    });
  } catch (error) {
    unstorable(error);
  }
  await appendSessionEvent(tx, {
    sessionId: post.sessionId,
    kind: 'thread.item_posted',
    executionId: post.executionId ?? null,
    node: post.node ?? null,
    attributes: { thread_item_id: row.id, thread: row.thread, files: row.files.length },
  });
  return row;
}

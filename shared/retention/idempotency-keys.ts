import type { Queryable } from '../db/db.ts';
import { pacedBatches, type Batching } from './pacing.ts';

/**
 * How long an idempotency key's stored answer is given back to retries (docs/api.md, "Safe retries"). Past
 * it a key is claimed afresh by the next request that sends it (control-plane/idempotency/), and
 * the retention sweep removes its row.
 */
export const IDEMPOTENCY_KEY_SECONDS = 86_400;

// One batch: the oldest `$3` keys past their lifetime, from the created_at index. The age is
// checked again on the row deleted, so a key a request took over since (which moves created_at to
// its own transaction's start) is left alone.
const KEYS_BATCH_SQL = `
  WITH due AS (
    SELECT caller, key FROM idempotency_keys
     WHERE created_at < $1::timestamptz - make_interval(secs => $2::int)
     ORDER BY created_at
     LIMIT $3::int
  )
  DELETE FROM idempotency_keys k USING due
   WHERE k.caller = due.caller AND k.key = due.key
     AND k.created_at < $1::timestamptz - make_interval(secs => $2::int)`;

/**
 * Removes the idempotency keys older than IDEMPOTENCY_KEY_SECONDS at `now`, `batchSize` per
 * statement (each its own short transaction), paced and stopped as the rest of the sweep
 * (`pacedBatches`). `onBatch` hears each batch's count.
 */
export async function sweepIdempotencyKeys(
  q: Queryable,
  now: Date,
  options: Batching,
  onBatch: (removed: number) => void,
): Promise<void> {
  await pacedBatches(async () => {
    const { rowCount } = await q.query(KEYS_BATCH_SQL, [now, IDEMPOTENCY_KEY_SECONDS, options.batchSize]);
    const removed = rowCount ?? 0;
    onBatch(removed);
    return { last: removed < options.batchSize };
  }, options);
}

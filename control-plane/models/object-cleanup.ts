import type { Db } from '../../shared/db/db.ts';
import type { S3Objects } from '../../shared/onnx/s3-objects.ts';
import { startPeriodic, type Periodic } from '../../shared/periodic.ts';

/** How often queued model objects are deleted from the S3 store. */
const EVERY_MS = 5_000;

/**
 * Deletes from the S3 store the objects of models that were deleted or replaced (PostgreSQL queues
 * their keys in `model_object_deletions`, migration 020). A key leaves the queue in the statement
 * that takes it; one whose delete fails goes back, for the next pass. Any number of control
 * planes may run it: each key is taken by one.
 */
export function startObjectCleanup(db: Db, objects: S3Objects, onError: (error: unknown) => void): Periodic {
  return startPeriodic(
    async () => {
      for (;;) {
        const { rows } = await db.query<{ object_key: string }>(
          `DELETE FROM model_object_deletions WHERE object_key IN (
           SELECT object_key FROM model_object_deletions ORDER BY queued_at LIMIT 100 FOR UPDATE SKIP LOCKED)
         RETURNING object_key`,
        );
        for (const { object_key } of rows) {
          await objects.delete(object_key).catch(async (error: unknown) => {
            await db.query('INSERT INTO model_object_deletions (object_key) VALUES ($1) ON CONFLICT DO NOTHING', [
              object_key,
            ]);
            throw error;
          });
        }
        if (rows.length < 100) return;
      }
    },
    { everyMs: EVERY_MS, firstMs: 1_000, onError },
  );
}

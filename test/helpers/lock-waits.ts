import type { Test } from 'tap';
import type { Db } from '../../shared/db/db.ts';

/**
 * Statements of the test's own database waiting for a lock now. Other test files run beside this
 * one on the same server, with lock waits of their own: counted too, they would end a wait early
 * or break an exact count by chance.
 */
export async function lockWaits(db: Db): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
      WHERE NOT l.granted AND a.datname = current_database()`,
  );
  return rows[0]!.n;
}

/** Polls (every 20 ms) until at least `n` statements of the test's database wait for a lock. */
export async function untilLockWaits(db: Db, n: number): Promise<void> {
  while ((await lockWaits(db)) < n) await new Promise((resolve) => setTimeout(resolve, 20));
}

/**
 * Holds the rows of `revisions` locked (as `upload_records` locks its revision's row) on a
 * connection of its own until the returned function is called, or at teardown.
 */
export async function holdRevisions(t: Test, db: Db, revisions: string[]): Promise<() => Promise<void>> {
  const holder = await db.pool.connect();
  await holder.query('BEGIN');
  await holder.query('SELECT 1 FROM revisions WHERE id = ANY($1::uuid[]) FOR UPDATE', [revisions]);
  let done = false;
  const release = async () => {
    if (done) return;
    done = true;
    await holder.query('ROLLBACK');
    holder.release();
  };
  t.teardown(release);
  return release;
}

import pg from 'pg';
import type { Test } from 'tap';
import type { Queryable } from '../../shared/db/db.ts';

/**
 * Inserts an execution row directly (nothing creates executions through the API yet). Returns
 * its id.
 */
export async function insertExecution(q: Queryable, sessionId: string, orgId: string): Promise<string> {
  const { rows } = await q.query<{ id: string }>(
    `INSERT INTO executions (session_id, org_id, definition_id, graph, limits)
     VALUES ($1::uuid, $2::uuid, gen_random_uuid(), '{}'::jsonb, '{}'::jsonb) RETURNING id`,
    [sessionId, orgId],
  );
  return rows[0]!.id;
}

/**
 * Holds a KEY SHARE lock on a session row from a connection of its own, which blocks the row's
 * removal (DELETE) but not Delete Session's status change, so a test can look at a session in
 * `deleting` without racing its background removal. Released by the returned function, or at
 * teardown.
 */
export async function holdSessionRow(t: Test, databaseUrl: string, sessionId: string): Promise<() => Promise<void>> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  await client.query('BEGIN');
  await client.query('SELECT 1 FROM sessions WHERE id = $1::uuid FOR KEY SHARE', [sessionId]);
  let released = false;
  const release = async () => {
    if (released) return;
    released = true;
    await client.query('COMMIT');
    await client.end();
  };
  t.teardown(release);
  return release;
}

/** Resolves once `sql` (with `params`) returns no row; gives up (throws) after a generous bound. */
export async function waitUntilNone(q: Queryable, sql: string, params: unknown[]): Promise<void> {
  for (let i = 0; i < 1000; i += 1) {
    const { rows } = await q.query(sql, params);
    if (rows.length === 0) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`still present: ${sql}`);
}

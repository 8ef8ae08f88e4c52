import type { Queryable } from '../db/db.ts';
import { limitExceeded, type LimitInForce, type QuotaIdHeldBy } from './index.ts';

type HolderKind = 'user' | 'org' | 'blob' | 'revision' | 'session';

interface Holding {
  holder: HolderKind;
  /** Counts what the holder holds now, `$1` being the holder's id. */
  count: string;
}

// A quota counts live rows rather than keeping a counter: the count can never drift from what
// exists, deleting a record frees its slot by construction, and deleting a holder deletes its
// counts with it. The exceptions, executions per session, running executions per organization and
// active sessions per revision, are counters kept by triggers in the statements that add, end and
// remove the rows, which gives the same guarantees. Concurrency is handled by locking the holder row first (see takeSlot).
const HOLDINGS = {
  'platform.orgs_per_user': { holder: 'user', count: 'SELECT count(*)::int AS n FROM orgs WHERE owner_id = $1::uuid' },
  'platform.blobs_per_org': { holder: 'org', count: 'SELECT count(*)::int AS n FROM blobs WHERE org_id = $1::uuid' },
  'platform.revisions_per_blob': {
    holder: 'blob',
    count: 'SELECT count(*)::int AS n FROM revisions WHERE blob_id = $1::uuid',
  },
  'workflow.definitions_per_revision': {
    holder: 'revision',
    count: `SELECT count(*)::int AS n FROM definitions WHERE revision_id = $1::uuid AND category = 'workflow'`,
  },
  'workflow.playgrounds_per_revision': {
    holder: 'revision',
    count: `SELECT count(*)::int AS n FROM definitions WHERE revision_id = $1::uuid AND category = 'playground'`,
  },
  // Kept on the revision row by triggers on sessions (migration 024); a session entering
  // `deleting` frees its slot at that moment.
  'workflow.sessions_per_revision': {
    holder: 'revision',
    count: 'SELECT active_sessions AS n FROM revisions WHERE id = $1::uuid',
  },
  // Kept on the session row by triggers on executions (migration 014): a create reads it in O(1).
  'workflow.executions_per_session': {
    holder: 'session',
    count: 'SELECT executions_count AS n FROM sessions WHERE id = $1::uuid',
  },
  // Two totals kept by triggers on executions (migration 015): O(1) whatever the backlog.
  'workflow.running_executions_per_org': { holder: 'org', count: 'SELECT org_running_executions($1::uuid) AS n' },
  'workflow.session_objects_per_session': {
    holder: 'session',
    count: 'SELECT count(*)::int AS n FROM session_objects WHERE session_id = $1::uuid',
  },
  'scheduler.schedules_per_revision': {
    holder: 'revision',
    count: 'SELECT count(*)::int AS n FROM schedules WHERE revision_id = $1::uuid',
  },
} as const satisfies Record<string, Holding>;

export type QuotaId = keyof typeof HOLDINGS;

// `NO KEY UPDATE`, like the routes' own row locks (lockOrgByRef, lockOrgOwner): it serialises the
// quota takers of one holder and the ops API's override writes on it, without blocking the
// `KEY SHARE` lock that inserting any row referencing the holder takes (a membership, an execution
// naming its organization), nor upgrading a lock the route already holds.
const LOCKS: Record<HolderKind, string> = {
  user: 'SELECT 1 FROM users WHERE id = $1::uuid FOR NO KEY UPDATE',
  org: 'SELECT 1 FROM orgs WHERE id = $1::uuid FOR NO KEY UPDATE',
  blob: 'SELECT 1 FROM blobs WHERE id = $1::uuid FOR NO KEY UPDATE',
  revision: 'SELECT 1 FROM revisions WHERE id = $1::uuid FOR NO KEY UPDATE',
  session: 'SELECT 1 FROM sessions WHERE id = $1::uuid FOR NO KEY UPDATE',
};

/** How many `quota` the holder holds now. */
export async function heldCount(q: Queryable, quota: QuotaId, holderId: string): Promise<number> {
  const { rows } = await q.query<{ n: number }>(HOLDINGS[quota].count, [holderId]);
  return rows[0]!.n;
}

/**
 * Takes one slot of `quota` for the holder inside the caller's transaction, or throws
 * `limit_exceeded` with `held` = the count when the request arrived. The holder row is locked
 * first, so concurrent takers on one holder queue up and each sees the rows the previous one
 * committed: nobody can take the holder past its value. The caller inserts the counted row in
 * the same transaction; a refusal rolls back and takes nothing.
 */
export async function takeSlot(
  tx: Queryable,
  quota: QuotaId,
  holderId: string,
  inForce: LimitInForce,
): Promise<number> {
  await tx.query(LOCKS[HOLDINGS[quota].holder], [holderId]);
  const held = await heldCount(tx, quota, holderId);
  const value = inForce.value;
  if (typeof value === 'number' && held >= value) throw limitExceeded(inForce, held);
  return held;
}

/** The counts of every quota `kind` holds, for limits reads and `held` maps. */
export async function heldBy<K extends HolderKind>(
  q: Queryable,
  kind: K,
  holderId: string,
): Promise<Record<Extract<QuotaId, QuotaIdHeldBy<PerOf<K>>>, number>> {
  const quotas = (Object.keys(HOLDINGS) as QuotaId[]).filter((id) => HOLDINGS[id].holder === kind);
  const counts = await Promise.all(quotas.map((id) => heldCount(q, id, holderId)));
  return Object.fromEntries(quotas.map((id, i) => [id, counts[i]])) as never;
}

// The catalog's `per` names differ from holder kinds only for organizations.
type PerOf<K extends HolderKind> = K extends 'org' ? 'org' : K;

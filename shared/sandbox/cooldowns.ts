/**
 * Cool-downs of organizations whose code keeps breaking the sandbox (migration 017,
 * docs/sandbox.md "Hostile code"). A strike is recorded when a runner's sandbox loses an isolate
 * thread to an organization's run (an allocation bomb isolated-vm could not stop: the run fails
 * `code_memory`, the sandbox child process that held it is replaced). Each strike cools the
 * organization down for twice as long as the last (`COOLDOWN_BASE_SECONDS` up to
 * `COOLDOWN_MAX_SECONDS`); while cooled down its `logic.code` runs fail at once with
 * `code_cooldown`. Runners read the active cool-downs every few seconds and after each strike.
 */
import type { Queryable } from '../db/db.ts';
import { isUuid } from '../ids.ts';

export const COOLDOWN_BASE_SECONDS = 30;
const COOLDOWN_MAX_SECONDS = 3600;
/** Strikes of one organization this close together count once: several bombs of one burst are one offence. */
const SAME_STRIKE_SECONDS = 5;
/** A strike this long after the last one starts the count again. */
const FORGIVE_AFTER_HOURS = 24;

export interface Cooldown {
  orgId: string;
  strikes: number;
  until: Date;
  reason: string;
  lastStrikeAt: Date;
}

interface CooldownRow {
  org_id: string;
  strikes: number;
  /** Timestamps arrive as text (shared/db/db.ts keeps PostgreSQL's own format). */
  until: string | Date;
  reason: string;
  last_strike_at: string | Date;
}

function cooldownOf(row: CooldownRow): Cooldown {
  return {
    orgId: row.org_id,
    strikes: row.strikes,
    until: new Date(row.until),
    reason: row.reason,
    lastStrikeAt: new Date(row.last_strike_at),
  };
}

/**
 * Records a strike against `orgId` and returns its cool-down, or null when `orgId` is not an
 * organization (a run without a tenant, a deleted organization).
 */
export async function recordStrike(db: Queryable, orgId: string, reason: string): Promise<Cooldown | null> {
  if (!isUuid(orgId)) return null;
  const { rows } = await db.query<CooldownRow>(
    `WITH o AS (SELECT id FROM orgs WHERE id = $1::uuid)
     INSERT INTO sandbox_cooldowns AS c (org_id, strikes, until, reason)
     SELECT o.id, 1, now() + make_interval(secs => $3::int), $2::text FROM o
     ON CONFLICT (org_id) DO UPDATE SET
       strikes = CASE
         WHEN c.last_strike_at > now() - make_interval(secs => $5::int) THEN c.strikes
         WHEN c.last_strike_at < now() - make_interval(hours => $6::int) THEN 1
         ELSE c.strikes + 1 END,
       until = CASE
         WHEN c.last_strike_at > now() - make_interval(secs => $5::int) THEN c.until
         WHEN c.last_strike_at < now() - make_interval(hours => $6::int) THEN now() + make_interval(secs => $3::int)
         ELSE now() + make_interval(secs => least($4::int, $3::int * power(2, least(c.strikes, 20)))::int) END,
       reason = EXCLUDED.reason,
       last_strike_at = CASE WHEN c.last_strike_at > now() - make_interval(secs => $5::int) THEN c.last_strike_at ELSE now() END
     RETURNING org_id, strikes, until, reason, last_strike_at`,
    [
      orgId,
      reason.slice(0, 500),
      COOLDOWN_BASE_SECONDS,
      COOLDOWN_MAX_SECONDS,
      SAME_STRIKE_SECONDS,
      FORGIVE_AFTER_HOURS,
    ],
  );
  return rows[0] ? cooldownOf(rows[0]) : null;
}

/** Organizations cooled down now. */
export async function activeCooldowns(db: Queryable): Promise<Cooldown[]> {
  const { rows } = await db.query<CooldownRow>(
    'SELECT org_id, strikes, until, reason, last_strike_at FROM sandbox_cooldowns WHERE until > now() ORDER BY until DESC, org_id',
  );
  return rows.map(cooldownOf);
}

/** Every recorded cool-down, past ones included (strikes are remembered for a day), newest strike first. */
export async function listCooldowns(db: Queryable, options: { activeOnly: boolean }): Promise<Cooldown[]> {
  const { rows } = await db.query<CooldownRow>(
    `SELECT org_id, strikes, until, reason, last_strike_at FROM sandbox_cooldowns
      WHERE NOT $1::boolean OR until > now() ORDER BY last_strike_at DESC, org_id LIMIT 1000`,
    [options.activeOnly],
  );
  return rows.map(cooldownOf);
}

/** Ends an organization's cool-down and forgets its strikes (an operator's decision). */
export async function clearCooldown(db: Queryable, orgId: string): Promise<boolean> {
  if (!isUuid(orgId)) return false;
  const { rowCount } = await db.query('DELETE FROM sandbox_cooldowns WHERE org_id = $1::uuid', [orgId]);
  return (rowCount ?? 0) > 0;
}

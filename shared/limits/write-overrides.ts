import type { Queryable, Tx } from '../db/db.ts';
import { refColumn } from '../ids.ts';
import { limitById, type OverrideLevel } from './catalog.ts';
import { validateOverride, type OverrideRefusalCode } from './overrides.ts';

/** Why an override write was refused: a `validateOverride` code, or a target that does not exist. */
type OverrideWriteRefusal = OverrideRefusalCode | 'not_found';

/** An override as stored: the target by its UUID, whatever reference named it. */
export interface StoredOverride {
  limitId: string;
  targetType: OverrideLevel;
  targetId: string;
  value: unknown;
  setBy: string;
  setAt: string;
}

/** One row of the override history. `oldValue`/`newValue` are `undefined` for "no override". */
export interface OverrideChange {
  id: string;
  limitId: string;
  targetType: OverrideLevel;
  targetId: string;
  action: 'set' | 'clear';
  oldValue: unknown;
  newValue: unknown;
  changedBy: string;
  changedAt: string;
}

/** The outcome of a set or clear: what is stored now (`null` after a clear) and the history row. */
export type OverrideWriteResult =
  | { ok: true; override: StoredOverride | null; previous: StoredOverride | null; change: OverrideChange | null }
  | { ok: false; code: OverrideWriteRefusal; message: string };

export interface SetOverrideInput {
  limitId: string;
  /** The level: `user`, `org` or `blob`. */
  targetType: string;
  /** The target's UUID or alias (blob aliases are unique across organizations). */
  targetId: string;
  /** The value as the limit takes it; JSON `null` is a value (retention: kept forever). */
  value: unknown;
  /** Who made the change, as recorded in `set_by` and the history. */
  actor: string;
}

export type ClearOverrideInput = Omit<SetOverrideInput, 'value'>;

/** A target of an override, found by id or alias, with its ownership chain as it is now. */
export interface FoundTarget {
  targetType: OverrideLevel;
  id: string;
  alias: string | null;
  /** The blob's type string (blobs only). */
  blobType?: string;
  /** The levels whose overrides bear on the target: its owner, organization and blob as they apply. */
  chain: { userId: string; orgId: string | null; blobId: string | null };
}

const WHAT: Record<OverrideLevel, string> = { user: 'user', org: 'organization', blob: 'blob' };

// One query per level; the lock (when asked) takes the target's own row only (`OF`).
const FIND_SQL: Record<OverrideLevel, string> = {
  user: `SELECT u.id, u.alias, NULL::text AS type, u.id AS user_id, NULL::uuid AS org_id, NULL::uuid AS blob_id
           FROM users u WHERE u.$match`,
  org: `SELECT o.id, o.alias, NULL::text AS type, o.owner_id AS user_id, o.id AS org_id, NULL::uuid AS blob_id
          FROM orgs o WHERE o.$match`,
  blob: `SELECT b.id, b.alias, b.type, o.owner_id AS user_id, b.org_id, b.id AS blob_id
           FROM blobs b JOIN orgs o ON o.id = b.org_id WHERE b.$match`,
};
const LOCK_OF: Record<OverrideLevel, string> = { user: 'u', org: 'o', blob: 'b' };

/** True when `value` is one of the three override levels. */
function isOverrideLevel(value: string): value is OverrideLevel {
  return Object.hasOwn(WHAT, value);
}

/**
 * Finds the user, organization or blob an override names, by id or alias (a canonical lower-case
 * UUID is an id, anything else an alias). With `lock`, the target's row is locked
 * `FOR NO KEY UPDATE`: two override writes on one target queue up, so each history row's old value
 * is the one it replaced, and a write waits for a quota check holding the row (`takeSlot`), so a
 * change lands between two requests, never inside one. Inserting an override row only takes a
 * key-share lock on the target, which this lock does not block.
 */
export async function findOverrideTarget(
  q: Queryable,
  targetType: OverrideLevel,
  ref: string,
  lock = false,
): Promise<FoundTarget | undefined> {
  const match = refColumn(ref) === 'id' ? 'id = $1::uuid' : 'alias = $1::text';
  const sql =
    FIND_SQL[targetType].replace('$match', match) + (lock ? ` FOR NO KEY UPDATE OF ${LOCK_OF[targetType]}` : '');
  const { rows } = await q.query<{
    id: string;
    alias: string | null;
    type: string | null;
    user_id: string;
    org_id: string | null;
    blob_id: string | null;
  }>(sql, [ref]);
  const row = rows[0];
  if (!row) return undefined;
  return {
    targetType,
    id: row.id,
    alias: row.alias,
    ...(row.type !== null ? { blobType: row.type } : {}),
    chain: { userId: row.user_id, orgId: row.org_id, blobId: row.blob_id },
  };
}

interface OverrideRow {
  limit_id: string;
  target_type: OverrideLevel;
  target_id: string;
  value: unknown;
  set_by: string;
  set_at: string;
}

interface ChangeRow {
  id: number;
  limit_id: string;
  target_type: OverrideLevel;
  target_id: string;
  action: 'set' | 'clear';
  old_value: unknown;
  new_value: unknown;
  changed_by: string;
  changed_at: string;
  old_absent: boolean;
  new_absent: boolean;
}

const OVERRIDE_COLUMNS = 'limit_id, target_type, target_id, value, set_by, set_at';

function storedOverride(row: OverrideRow): StoredOverride {
  return {
    limitId: row.limit_id,
    targetType: row.target_type,
    targetId: row.target_id,
    value: row.value,
    setBy: row.set_by,
    setAt: row.set_at,
  };
}

// pg parses both SQL NULL and the jsonb value null to JS null; the history columns need them told
// apart (no override vs. the value null), so they are read with `IS NULL` flags beside the value.
const CHANGE_SELECT = `id, limit_id, target_type, target_id, action, old_value, new_value, changed_by, changed_at,
  old_value IS NULL AS old_absent, new_value IS NULL AS new_absent`;

function changeFromRow(row: ChangeRow): OverrideChange {
  return {
    id: String(row.id),
    limitId: row.limit_id,
    targetType: row.target_type,
    targetId: row.target_id,
    action: row.action,
    oldValue: row.old_absent ? undefined : row.old_value,
    newValue: row.new_absent ? undefined : row.new_value,
    changedBy: row.changed_by,
    changedAt: row.changed_at,
  };
}

async function currentOverride(
  tx: Tx,
  limitId: string,
  targetType: OverrideLevel,
  targetId: string,
): Promise<StoredOverride | null> {
  const { rows } = await tx.query<OverrideRow>(
    `SELECT ${OVERRIDE_COLUMNS} FROM limit_overrides
      WHERE target_type = $1::text AND target_id = $2::uuid AND limit_id = $3::text`,
    [targetType, targetId, limitId],
  );
  return rows[0] ? storedOverride(rows[0]) : null;
}

async function recordChange(
  tx: Tx,
  input: {
    limitId: string;
    targetType: OverrideLevel;
    targetId: string;
    action: 'set' | 'clear';
    oldValue: StoredOverride | null;
    newValue: unknown;
    actor: string;
  },
): Promise<OverrideChange> {
  // JSON text, so JSON null is stored as the jsonb value null; SQL NULL stands for "no override".
  const oldJson = input.oldValue === null ? null : JSON.stringify(input.oldValue.value);
  const newJson = input.action === 'clear' ? null : JSON.stringify(input.newValue);
  const { rows } = await tx.query<ChangeRow>(
    `INSERT INTO limit_override_changes (limit_id, target_type, target_id, action, old_value, new_value, changed_by)
     VALUES ($1::text, $2::text, $3::uuid, $4::text, $5::jsonb, $6::jsonb, $7::text)
     RETURNING ${CHANGE_SELECT}`,
    [input.limitId, input.targetType, input.targetId, input.action, oldJson, newJson, input.actor],
  );
  return changeFromRow(rows[0]!);
}

function notFound(targetType: OverrideLevel, ref: string): OverrideWriteResult {
  return {
    ok: false,
    code: 'not_found',
    message: `No ${WHAT[targetType]} has the id or alias ${JSON.stringify(ref)}.`,
  };
}

/**
 * Sets an override (ops API `setLimitOverride`): validates it with `validateOverride` (unknown
 * limit, fixed, level outside Set on, wrong type, past the most permissive value), finds the
 * target by id or alias and locks its row, then upserts the override and records the change with
 * the value it replaced, all in the caller's transaction. Every set is recorded, one that repeats
 * the stored value included: the history says who confirmed it and when.
 */
export async function setLimitOverride(tx: Tx, input: SetOverrideInput): Promise<OverrideWriteResult> {
  const check = validateOverride(input.limitId, input.targetType, input.value);
  if (!check.ok) return check;
  const targetType = check.level;
  const target = await findOverrideTarget(tx, targetType, input.targetId, true);
  if (!target) return notFound(targetType, input.targetId);
  const previous = await currentOverride(tx, check.id, targetType, target.id);
  const { rows } = await tx.query<OverrideRow>(
    `INSERT INTO limit_overrides (limit_id, target_type, target_id, value, set_by)
     VALUES ($1::text, $2::text, $3::uuid, $4::jsonb, $5::text)
     ON CONFLICT (target_type, target_id, limit_id)
     DO UPDATE SET value = EXCLUDED.value, set_by = EXCLUDED.set_by, set_at = now()
     RETURNING ${OVERRIDE_COLUMNS}`,
    [check.id, targetType, target.id, JSON.stringify(check.value), input.actor],
  );
  const change = await recordChange(tx, {
    limitId: check.id,
    targetType,
    targetId: target.id,
    action: 'set',
    oldValue: previous,
    newValue: check.value,
    actor: input.actor,
  });
  return { ok: true, override: storedOverride(rows[0]!), previous, change };
}

/**
 * Clears an override (ops API `clearLimitOverride`) and records the change with the value removed.
 * A stored override is removed whatever it is, even one that would be refused today (a limit made
 * fixed or removed by a later catalog): clearing is how an operator gets rid of it. When nothing is
 * stored, the limit and level are checked as for a set, so a typo is reported rather than answered
 * with "nothing to clear"; a valid clear of nothing changes nothing and records nothing.
 */
export async function clearLimitOverride(tx: Tx, input: ClearOverrideInput): Promise<OverrideWriteResult> {
  if (!isOverrideLevel(input.targetType)) return levelRefusal(input.limitId, input.targetType)!;
  const targetType = input.targetType;
  const target = await findOverrideTarget(tx, targetType, input.targetId, true);
  if (!target) {
    const refusal = levelRefusal(input.limitId, targetType);
    return refusal ?? notFound(targetType, input.targetId);
  }
  const { rows } = await tx.query<OverrideRow>(
    `DELETE FROM limit_overrides
      WHERE target_type = $1::text AND target_id = $2::uuid AND limit_id = $3::text
      RETURNING ${OVERRIDE_COLUMNS}`,
    [targetType, target.id, input.limitId],
  );
  const removed = rows[0] ? storedOverride(rows[0]) : null;
  if (!removed) {
    const refusal = levelRefusal(input.limitId, targetType);
    if (refusal) return refusal;
    return { ok: true, override: null, previous: null, change: null };
  }
  const change = await recordChange(tx, {
    limitId: input.limitId,
    targetType,
    targetId: target.id,
    action: 'clear',
    oldValue: removed,
    newValue: undefined,
    actor: input.actor,
  });
  return { ok: true, override: null, previous: removed, change };
}

/** The refusal of an override of `limitId` on `level` whatever its value, or null when one could be set. */
function levelRefusal(limitId: string, level: string): OverrideWriteResult | null {
  const limit = limitById(limitId);
  // The limit's own default always has the right type and is never past its bound, so only the
  // limit and level checks can refuse it.
  const check = validateOverride(limitId, level, limit ? limit.default : null);
  return check.ok ? null : check;
}

/** Filters of `listOverrides` and `listOverrideChanges`; targets by UUID. */
export interface OverrideFilter {
  limitId?: string;
  targetType?: OverrideLevel;
  targetId?: string;
}

/** Stored overrides matching `filter`, most recently set first, at most `limit`. */
export async function listOverrides(q: Queryable, filter: OverrideFilter, limit: number): Promise<StoredOverride[]> {
  const { rows } = await q.query<OverrideRow>(
    `SELECT ${OVERRIDE_COLUMNS} FROM limit_overrides
      WHERE ($1::text IS NULL OR limit_id = $1::text)
        AND ($2::text IS NULL OR target_type = $2::text)
        AND ($3::uuid IS NULL OR target_id = $3::uuid)
      ORDER BY set_at DESC, target_type, target_id, limit_id
      LIMIT $4::int`,
    [filter.limitId ?? null, filter.targetType ?? null, filter.targetId ?? null, limit],
  );
  return rows.map(storedOverride);
}

/**
 * History rows matching `filter`, newest first, at most `limit`, before the row `beforeId`
 * (exclusive) when given: page on with the last row's id.
 */
export async function listOverrideChanges(
  q: Queryable,
  filter: OverrideFilter & { beforeId?: number },
  limit: number,
): Promise<OverrideChange[]> {
  const { rows } = await q.query<ChangeRow>(
    `SELECT ${CHANGE_SELECT} FROM limit_override_changes
      WHERE ($1::text IS NULL OR limit_id = $1::text)
        AND ($2::text IS NULL OR target_type = $2::text)
        AND ($3::uuid IS NULL OR target_id = $3::uuid)
        AND ($4::bigint IS NULL OR id < $4::bigint)
      ORDER BY id DESC
      LIMIT $5::int`,
    [filter.limitId ?? null, filter.targetType ?? null, filter.targetId ?? null, filter.beforeId ?? null, limit],
  );
  return rows.map(changeFromRow);
}

import {
  LIMIT_CATALOG,
  LIMIT_GROUPS,
  OVERRIDE_LEVELS,
  limitById,
  type CatalogEntry,
  type LimitGroupId,
  type LimitId,
  type LimitKind,
  type LimitUnit,
  type LimitValue,
  type LimitValueOf,
  type OverrideLevel,
  type QuotaIdHeldBy,
  type TypeGroupId,
} from './catalog.ts';
import { validateOverride, type OverrideRefusalCode } from './overrides.ts';

/** One level's overrides: limit id → value, as stored (a value is JSON, so it is `unknown` here). */
export type OverrideMap = Readonly<Record<string, unknown>>;

/**
 * The overrides that bear on one request: the owner's (user), the organization's and the blob's.
 * A level left out has none, and a read of an organization passes no blob level.
 */
export interface OverrideSet {
  readonly user?: OverrideMap;
  readonly org?: OverrideMap;
  readonly blob?: OverrideMap;
}

/** Where a value in force came from. */
type LimitSource = 'default' | OverrideLevel;

/** Any limit's value in force for one request and where it came from. */
export interface LimitInForce {
  readonly id: LimitId;
  readonly value: LimitValue;
  readonly source: LimitSource;
}

/** The value in force of limit `I`, typed by its kind (a `ResolvedLimit<I>` is a `LimitInForce`). */
export interface ResolvedLimit<I extends LimitId = LimitId> extends LimitInForce {
  readonly id: I;
  readonly value: LimitValueOf<I>;
}

/** The value in force of every limit for one request. */
export type ResolvedLimits = { readonly [I in LimitId]: ResolvedLimit<I> };

/** A stored override that resolution did not apply as stored (see `ResolveOptions.onIgnored`). */
export interface IgnoredOverride {
  readonly id: LimitId;
  readonly level: OverrideLevel;
  readonly value: unknown;
  readonly code: OverrideRefusalCode;
  /** `clamped`: the most permissive value was applied instead; `skipped`: the next farther level was. */
  readonly action: 'clamped' | 'skipped';
}

export interface ResolveOptions {
  /**
   * Called for each stored override that would not pass `validateOverride` today (written before
   * a catalog change, or by hand in SQL), so the caller can log it. Resolution never throws on one.
   */
  readonly onIgnored?: (ignored: IgnoredOverride) => void;
}

/**
 * The value in force of one limit: the nearest valid override (blob, then organization, then
 * owner), else the catalog default.
 *
 * Overrides are validated on write, so every stored one should apply as is. As defence in depth,
 * each is checked again here with the same rules: one past the most permissive value is clamped
 * to that value (the operator meant "as permissive as allowed", and it keeps its level as source);
 * any other invalid one (fixed limit, level outside Set on, wrong type) is skipped as though it
 * were absent, so the next farther level or the default applies. Either way `onIgnored` hears of it.
 */
export function resolveLimit<I extends LimitId>(
  id: I,
  overrides: OverrideSet,
  options: ResolveOptions = {},
): ResolvedLimit<I> {
  const limit: CatalogEntry = limitById(id);
  for (let i = OVERRIDE_LEVELS.length - 1; i >= 0; i--) {
    const level = OVERRIDE_LEVELS[i] as OverrideLevel;
    const map = overrides[level];
    if (!map || !Object.hasOwn(map, id)) continue;
    const value = map[id];
    const check = validateOverride(id, level, value);
    if (check.ok) return { id, value: check.value as LimitValueOf<I>, source: level };
    if (check.code === 'past_most_permissive') {
      options.onIgnored?.({ id, level, value, code: check.code, action: 'clamped' });
      return { id, value: limit.most_permissive as LimitValueOf<I>, source: level };
    }
    options.onIgnored?.({ id, level, value, code: check.code, action: 'skipped' });
  }
  return { id, value: limit.default as LimitValueOf<I>, source: 'default' };
}

/** The value in force of every limit of the catalog for one set of overrides. */
export function resolveLimits(overrides: OverrideSet, options: ResolveOptions = {}): ResolvedLimits {
  const all: Record<string, ResolvedLimit> = {};
  for (const limit of LIMIT_CATALOG) all[limit.id] = resolveLimit(limit.id, overrides, options);
  return all as unknown as ResolvedLimits;
}

/** One entry of a limits-route reply (docs/limits.md, "Limits reads"). */
export interface LimitEntry {
  id: LimitId;
  kind: LimitKind;
  unit: LimitUnit;
  per: string;
  default: LimitValue;
  value: LimitValue;
  source: LimitSource;
  most_permissive: number | null;
  /** Empty for a fixed limit. */
  set_on: OverrideLevel[];
  /** Quotas whose holder is the target being read: how many it holds now. */
  held?: number;
}

/** One group of a limits-route reply. */
export interface LimitGroupReply {
  id: LimitGroupId;
  label: string;
  family: string;
  limits: LimitEntry[];
}

/** Which entries a limits read shows, and which record is being read (the holder of its quotas). */
export interface LimitsSelection {
  readonly groups: readonly LimitGroupId[];
  /** Filters entries inside the chosen groups; all of them when left out. */
  readonly include?: (limit: CatalogEntry) => boolean;
  /** The record read: each shown quota it holds (`per` equal to it) must come with `held`. */
  readonly holder: 'user' | 'org' | 'blob';
}

const ALL_GROUPS: readonly LimitGroupId[] = LIMIT_GROUPS.map((group) => group.id);

/** The three limits reads (docs/limits.md, "Limits reads"). */
export const LIMIT_READS = {
  /** Get User Limits: `platform` and every type group, as a new organization of this user starts. */
  user: { groups: ALL_GROUPS, holder: 'user' },
  /** Get Organization Limits: `platform` without `platform.orgs_per_user`, and every type group. */
  org: { groups: ALL_GROUPS, include: (limit) => limit.id !== 'platform.orgs_per_user', holder: 'org' },
  /** Get Blob Limits: `platform.revisions_per_blob` and the blob's own type group. */
  blob: (type: TypeGroupId): LimitsSelection => ({
    groups: ['platform', type],
    include: (limit) => limit.group !== 'platform' || limit.id === 'platform.revisions_per_blob',
    holder: 'blob',
  }),
} as const satisfies { user: LimitsSelection; org: LimitsSelection; blob: (type: TypeGroupId) => LimitsSelection };

/**
 * Shapes a limits-route reply: the selected groups and entries in catalog order, each entry with
 * its value in force and source, and `held` on the quotas the target holds. Throws (a programming
 * error, not a client one) when `held` misses such a quota or names anything else.
 */
export function shapeLimitGroups(
  overrides: OverrideSet,
  selection: LimitsSelection,
  held: Readonly<Partial<Record<LimitId, number>>> = {},
  options: ResolveOptions = {},
): LimitGroupReply[] {
  const unused = new Set(Object.keys(held));
  const groups: LimitGroupReply[] = [];
  for (const group of LIMIT_GROUPS) {
    if (!selection.groups.includes(group.id)) continue;
    const limits: LimitEntry[] = [];
    for (const limit of LIMIT_CATALOG) {
      if (limit.group !== group.id || (selection.include && !selection.include(limit))) continue;
      const resolved = resolveLimit(limit.id, overrides, options);
      const entry: LimitEntry = {
        id: limit.id,
        kind: limit.kind,
        unit: limit.unit,
        per: limit.per,
        default: limit.default,
        value: resolved.value,
        source: resolved.source,
        most_permissive: limit.most_permissive,
        set_on: [...limit.set_on],
      };
      if (limit.kind === 'quota' && limit.per === selection.holder) {
        const count = held[limit.id];
        if (count === undefined) throw new Error(`limits read of a ${selection.holder} needs held for ${limit.id}`);
        entry.held = count;
        unused.delete(limit.id);
      }
      limits.push(entry);
    }
    if (limits.length > 0) groups.push({ id: group.id, label: group.label, family: group.family, limits });
  }
  if (unused.size > 0)
    throw new Error(`held given for limits this read does not show as held: ${[...unused].join(', ')}`);
  return groups;
}

/** Get User Limits (`GET /v1/users/:user_id/limits`): pass the user's overrides only. */
export function userLimitsReply(
  overrides: OverrideSet,
  held: Record<QuotaIdHeldBy<'user'>, number>,
  options?: ResolveOptions,
): LimitGroupReply[] {
  return shapeLimitGroups(overrides, LIMIT_READS.user, held, options);
}

/** Get Organization Limits (`GET /v1/orgs/:id/limits`): pass the owner's and the organization's overrides. */
export function orgLimitsReply(
  overrides: OverrideSet,
  held: Record<QuotaIdHeldBy<'org'>, number>,
  options?: ResolveOptions,
): LimitGroupReply[] {
  return shapeLimitGroups(overrides, LIMIT_READS.org, held, options);
}

/** Get Blob Limits (`GET /v1/blobs/:org_id/:blob_id/limits`): pass all three levels. */
export function blobLimitsReply(
  type: TypeGroupId,
  overrides: OverrideSet,
  held: Record<QuotaIdHeldBy<'blob'>, number>,
  options?: ResolveOptions,
): LimitGroupReply[] {
  return shapeLimitGroups(overrides, LIMIT_READS.blob(type), held, options);
}

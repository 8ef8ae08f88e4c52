import { limitById, type CatalogEntry, type LimitId, type LimitValue, type OverrideLevel } from './catalog.ts';

/**
 * Why an override is refused. The ops API answers each as a GraphQL error with this string as
 * `extensions.code` (docs/limits.md, "Setting and clearing"), and resolution uses the same checks to ignore a stored value
 * that should never have been written.
 */
export const OVERRIDE_REFUSALS = {
  unknown_limit: 'No limit of the catalog has this id.',
  fixed_limit: 'This limit is fixed: it is the same for every account.',
  level_not_allowed: 'This limit cannot be set on this level.',
  invalid_value_type: 'The value does not have the type this limit takes.',
  past_most_permissive: 'The value is past the most permissive value of this limit.',
} as const;

export type OverrideRefusalCode = keyof typeof OVERRIDE_REFUSALS;

/** The outcome of `validateOverride`: the accepted value, or the reason and a message. */
export type OverrideCheck =
  | { ok: true; id: LimitId; level: OverrideLevel; value: LimitValue }
  | { ok: false; code: OverrideRefusalCode; message: string };

// npm package names (lower case, optional scope, at most 214 characters): what `logic.code` imports
// by bare specifier. Subpaths, `node:` built-ins and relative paths are not module names.
const MODULE_NAME_RE = /^(?:@[a-z0-9][a-z0-9._~-]*\/)?[a-z0-9][a-z0-9._~-]*$/;
const MODULE_NAME_MAX = 214;

function refuse(code: OverrideRefusalCode, detail: string): OverrideCheck {
  return { ok: false, code, message: `${OVERRIDE_REFUSALS[code]} ${detail}` };
}

// Messages quote what was sent, cut short: a value may be a long list or not JSON at all.
function describe(value: unknown): string {
  let text: string;
  try {
    text = JSON.stringify(value) ?? String(value);
  } catch {
    text = typeof value;
  }
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}

/** Checks the type of `value` for `limit`; returns a description of what was expected, or null. */
function typeProblem(limit: CatalogEntry, value: unknown): string | null {
  switch (limit.kind) {
    case 'quota':
    case 'ceiling':
      return Number.isSafeInteger(value) && (value as number) >= 0 ? null : 'a non-negative integer';
    case 'retention':
      return value === null || (Number.isSafeInteger(value) && (value as number) >= 0)
        ? null
        : 'a non-negative integer of days, or null (kept forever)';
    case 'entitlement':
      if (limit.unit === 'flag') return typeof value === 'boolean' ? null : 'true or false';
      if (!Array.isArray(value)) return 'a list of module names';
      for (const name of value) {
        if (typeof name !== 'string' || name.length > MODULE_NAME_MAX || !MODULE_NAME_RE.test(name)) {
          return `a list of module names (npm package names); ${describe(name)} is not one`;
        }
      }
      return new Set(value).size === value.length ? null : 'a list of module names without duplicates';
  }
}

/** True when `value` is past `limit`'s most permissive value, in the limit's direction. */
function isPastMostPermissive(limit: CatalogEntry, value: unknown): boolean {
  if (limit.most_permissive === null || typeof value !== 'number') return false;
  return limit.more_permissive === 'lower' ? value < limit.most_permissive : value > limit.most_permissive;
}

/**
 * Validates an override before it is written: the limit exists, is not fixed, may be set on
 * `level`, `value` has the limit's type, and it does not pass the most permissive value
 * (for `scheduler.min_interval_seconds`, lower is more permissive). Checks run in that order and
 * the first failure is reported. An accepted list is returned as a fresh copy.
 */
export function validateOverride(limitId: string, level: string, value: unknown): OverrideCheck {
  const limit = limitById(limitId);
  if (!limit) return refuse('unknown_limit', `Got ${describe(limitId)}.`);
  if (limit.set_on.length === 0) return refuse('fixed_limit', `${limit.id} cannot be overridden.`);
  if (!(limit.set_on as readonly string[]).includes(level)) {
    return refuse('level_not_allowed', `${limit.id} can be set on ${limit.set_on.join(', ')}; got ${describe(level)}.`);
  }
  const problem = typeProblem(limit, value);
  if (problem) return refuse('invalid_value_type', `${limit.id} takes ${problem}; got ${describe(value)}.`);
  if (isPastMostPermissive(limit, value)) {
    const bound = limit.more_permissive === 'lower' ? 'at least' : 'at most';
    return refuse(
      'past_most_permissive',
      `${limit.id} can be ${bound} ${limit.most_permissive}; got ${describe(value)}.`,
    );
  }
  return {
    ok: true,
    id: limit.id,
    level: level as OverrideLevel,
    value: Array.isArray(value) ? Object.freeze([...value] as string[]) : (value as LimitValue),
  };
}

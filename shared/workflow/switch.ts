/**
 * How `logic.switch` chooses its route: the first case whose conditions all hold on the node's
 * input, else the default route. Pure and synchronous, so the runner and the tests share it.
 */
import { SWITCH_DEFAULT_ROUTE, type SwitchCondition, type SwitchConfig } from './processors.ts';

const MISSING = Symbol('missing');
type Found = unknown | typeof MISSING;

/** The value at `path` in `input`, or MISSING. A dotted string splits on `.`; `""` is the input itself. */
export function valueAt(input: unknown, path: string | ReadonlyArray<string | number>): Found {
  const segments = typeof path === 'string' ? (path === '' ? [] : path.split('.')) : path;
  let current: unknown = input;
  for (const segment of segments) {
    if (Array.isArray(current)) {
      const index = typeof segment === 'number' ? segment : /^(0|[1-9][0-9]*)$/.test(segment) ? Number(segment) : -1;
      if (index < 0 || index >= current.length) return MISSING;
      current = current[index];
    } else if (typeof current === 'object' && current !== null && Object.hasOwn(current, String(segment))) {
      current = (current as Record<string, unknown>)[String(segment)];
    } else {
      return MISSING;
    }
  }
  return current;
}

/** Equality of JSON values: same type, same elements in order, same keys in any order. */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const other = b as unknown[];
    return a.length === other.length && a.every((item, i) => jsonEqual(item, other[i]));
  }
  const keysA = Object.keys(a);
  const recordB = b as Record<string, unknown>;
  return (
    keysA.length === Object.keys(recordB).length &&
    keysA.every((key) => Object.hasOwn(recordB, key) && jsonEqual((a as Record<string, unknown>)[key], recordB[key]))
  );
}

/**
 * Whether one condition holds. A missing value satisfies only `exists: false` and `not_equals`;
 * the ordering operators hold only for numbers.
 */
export function conditionHolds(condition: SwitchCondition, input: unknown): boolean {
  const value = valueAt(input, condition.path);
  const present = value !== MISSING;
  if (Object.hasOwn(condition, 'exists')) return condition.exists === present;
  if (Object.hasOwn(condition, 'equals')) return present && jsonEqual(value, condition.equals);
  if (Object.hasOwn(condition, 'not_equals')) return !present || !jsonEqual(value, condition.not_equals);
  if (condition.in !== undefined) return present && condition.in.some((candidate) => jsonEqual(value, candidate));
  if (typeof value !== 'number') return false;
  if (condition.gt !== undefined) return value > condition.gt;
  if (condition.gte !== undefined) return value >= condition.gte;
  if (condition.lt !== undefined) return value < condition.lt;
  if (condition.lte !== undefined) return value <= condition.lte;
  return false;
}

/** The route a `logic.switch` with `config` takes on `input`. */
export function switchRoute(config: SwitchConfig, input: unknown): string {
  for (const entry of config.cases) {
    const conditions = Array.isArray(entry.when) ? entry.when : [entry.when];
    if (conditions.every((condition) => conditionHolds(condition, input))) return entry.route;
  }
  return config.default ?? SWITCH_DEFAULT_ROUTE;
}

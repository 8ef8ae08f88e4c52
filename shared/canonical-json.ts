/**
 * JSON with every object's keys sorted (UTF-16 order), recursively, and `undefined` members left
 * out as JSON.stringify does: two values that differ only in key order give the same text, so a
 * MAC over it (a cursor's filters, an idempotent request's fingerprint) does not depend on it.
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`);
  return `{${entries.join(',')}}`;
}

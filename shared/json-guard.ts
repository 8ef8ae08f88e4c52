/**
 * What the API accepts as JSON, checked once where a body or message is parsed (docs/api.md
 * "JSON bodies"): nesting at most MAX_JSON_DEPTH levels, and no text PostgreSQL cannot store —
 * U+0000 or an unpaired UTF-16 surrogate — in any string or key. Checked iteratively, so a
 * 100,000-level document costs a loop, not a stack overflow; the first problem is named by its path.
 */

/** Objects and arrays inside one another, at most. */
export const MAX_JSON_DEPTH = 64;

// U+0000, a high surrogate not followed by a low one, or a low one not preceded by a high one.
const UNSTORABLE = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** True when PostgreSQL can store `text` (no U+0000, no unpaired surrogate). */
export function storableText(text: string): boolean {
  return !UNSTORABLE.test(text);
}

function pathOf(path: readonly (string | number)[]): string {
  return path.length === 0 ? '(the body)' : path.map((p) => (typeof p === 'number' ? `[${p}]` : `.${p}`)).join('').replace(/^\./, '');
}

/** The first problem of `value` as `path: what`, or null when it is acceptable. */
export function jsonProblem(value: unknown): string | null {
  const stack: Array<{ value: unknown; path: (string | number)[] }> = [{ value, path: [] }];
  while (stack.length > 0) {
    const { value: current, path } = stack.pop()!;
    if (typeof current === 'string') {
      if (!storableText(current)) return `${pathOf(path)}: text holds U+0000 or an unpaired surrogate, which cannot be stored`;
      continue;
    }
    if (typeof current !== 'object' || current === null) continue;
    if (path.length >= MAX_JSON_DEPTH) return `${pathOf(path.slice(0, 8))}…: nested deeper than ${MAX_JSON_DEPTH} levels`;
    if (Array.isArray(current)) {
      for (let i = current.length - 1; i >= 0; i--) stack.push({ value: current[i], path: [...path, i] });
      continue;
    }
    for (const key of Object.keys(current)) {
      if (!storableText(key)) return `${pathOf(path)}: a key holds U+0000 or an unpaired surrogate`;
      stack.push({ value: (current as Record<string, unknown>)[key], path: [...path, key] });
    }
  }
  return null;
}

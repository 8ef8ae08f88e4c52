/**
 * What the API accepts as JSON, checked once where a body or message is parsed (docs/api.md
 * "JSON bodies"): nesting at most MAX_JSON_DEPTH levels, and no text PostgreSQL cannot store —
 * U+0000 or an unpaired UTF-16 surrogate — in any string or key. Checked iteratively, so a
 * 100,000-level document costs a loop, not a stack overflow; the first problem is named by its path.
 */

/** Objects and arrays inside one another, at most. */
const MAX_JSON_DEPTH = 64;

// U+0000, a high surrogate not followed by a low one, or a low one not preceded by a high one.
// eslint-disable-next-line no-control-regex -- U+0000 is what it finds
const UNSTORABLE = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** True when PostgreSQL can store `text` (no U+0000, no unpaired surrogate). */
export function storableText(text: string): boolean {
  return !UNSTORABLE.test(text);
}

const UNSTORABLE_ALL = new RegExp(UNSTORABLE.source, 'g');

/**
 * `text` with each U+0000 and unpaired surrogate replaced by U+FFFD: for free text the service
 * itself keeps (a run's log lines and error messages), where refusing would lose the rest.
 */
export function storableCopy(text: string): string {
  return storableText(text) ? text : text.replace(UNSTORABLE_ALL, '\uFFFD');
}

/** Where a value sits: its key or index and its parent's place (null at the top), depth counted. */
interface Place {
  key: string | number;
  parent: Place | null;
  depth: number;
}

// Built only for a refusal: every element links to its parent instead of copying a path.
function pathOf(place: Place | null, limit = Infinity): string {
  const keys: Array<string | number> = [];
  for (let at = place; at !== null; at = at.parent) keys.unshift(at.key);
  if (keys.length === 0) return '(the body)';
  const shown = keys
    .slice(0, limit)
    .map((p) => (typeof p === 'number' ? `[${p}]` : `.${p}`))
    .join('')
    .replace(/^\./, '');
  return keys.length > limit ? `${shown}…` : shown;
}

/** The first problem of `value` as `path: what`, or null when it is acceptable. */
export function jsonProblem(value: unknown): string | null {
  const stack: Array<{ value: unknown; place: Place | null }> = [{ value, place: null }];
  while (stack.length > 0) {
    const { value: current, place } = stack.pop()!;
    if (typeof current === 'string') {
      if (!storableText(current))
        return `${pathOf(place)}: text holds U+0000 or an unpaired surrogate, which cannot be stored`;
      continue;
    }
    if (typeof current !== 'object' || current === null) continue;
    const depth = place === null ? 0 : place.depth;
    if (depth >= MAX_JSON_DEPTH) return `${pathOf(place, 8)}: nested deeper than ${MAX_JSON_DEPTH} levels`;
    if (Array.isArray(current)) {
      for (let i = current.length - 1; i >= 0; i--)
        stack.push({ value: current[i], place: { key: i, parent: place, depth: depth + 1 } });
      continue;
    }
    for (const key of Object.keys(current)) {
      if (!storableText(key)) return `${pathOf(place)}: a key holds U+0000 or an unpaired surrogate`;
      stack.push({ value: (current as Record<string, unknown>)[key], place: { key, parent: place, depth: depth + 1 } });
    }
  }
  return null;
}

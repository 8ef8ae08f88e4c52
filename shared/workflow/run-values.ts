/**
 * A node run's input and output as its ending event keeps them (docs/architecture.md, "Execution
 * events"): whole up to NODE_RUN_VALUE_BYTES of serialized JSON, else the first bytes of the JSON
 * and its size. Every node run of an execution is recorded, so the bound keeps an execution of a
 * thousand runs from holding a thousand copies of a 5 MiB output in its events.
 */

/** NODE_RUN_VALUE_BYTES's default: 16 KiB per value. */
export const DEFAULT_NODE_RUN_VALUE_BYTES = 16_384;

/**
 * The attributes that record `value` as `name` (`input` or `output`): `{[name]: value}` when its
 * JSON fits in `maxBytes`, else `{[name_bytes]: size, [name_preview]: the first maxBytes bytes of
 * the JSON}` (a character cut in two at the end becomes U+FFFD). Nothing when `maxBytes` is 0 or
 * the value is absent.
 */
export function runValue(name: 'input' | 'output', value: unknown, maxBytes: number): Record<string, unknown> {
  if (maxBytes <= 0 || value === undefined) return {};
  const text = JSON.stringify(value);
  const bytes = Buffer.byteLength(text);
  if (bytes <= maxBytes) return { [name]: value };
  return {
    [`${name}_bytes`]: bytes,
    // Only the head is encoded: a character is at least one byte, so the first maxBytes characters
    // hold the first maxBytes bytes (a run's output may be megabytes; this is every node run).
    [`${name}_preview`]: Buffer.from(text.slice(0, maxBytes)).subarray(0, maxBytes).toString('utf8'),
  };
}

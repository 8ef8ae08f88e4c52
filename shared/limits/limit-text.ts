/**
 * A limit's value in words, the one way refusal messages (limit-object.ts) and the web console
 * write it: `unbounded` for null (a retention kept forever), a list in brackets, a number as
 * `number` writes it (messages: digits alone; the console groups thousands). No Node API: the
 * console's bundle imports it too.
 */
export function limitValueText(value: unknown, number: (n: number) => string = String): string {
  if (value === null) return 'unbounded';
  if (typeof value === 'number') return number(value);
  if (Array.isArray(value)) return `[${value.join(', ')}]`;
  return String(value);
}

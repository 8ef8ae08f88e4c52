// Columns of several tables in one row, told apart by a prefix, so the pool's type parsers
// (ISO timestamps) still apply to each of them.

/** The select list of `fields` of the table aliased `alias`, each named `"<alias>.<field>"`. */
export function prefixed(alias: string, fields: readonly string[]): string {
  return fields.map((f) => `${alias}.${f} AS "${alias}.${f}"`).join(', ');
}

/** The row of the table aliased `alias` out of a row selected with `prefixed(alias, fields)`. */
export function pick<T>(row: Record<string, unknown>, alias: string, fields: readonly string[]): T {
  return Object.fromEntries(fields.map((f) => [f, row[`${alias}.${f}`]])) as T;
}

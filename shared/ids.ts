import { z } from 'zod';

/** A path value is a UUID if and only if it matches this, lower case only (docs/resources.md, "Common rules"). */
export const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** 3–64 characters of a-z 0-9 . _ -, starting with a letter or digit (docs/resources.md, "Common rules"). */
const ALIAS_RE = /^[a-z0-9][a-z0-9._-]{2,63}$/;

/** Aliases no resource may take. */
const RESERVED_ALIASES: ReadonlySet<string> = new Set(['me']);

export function isUuid(value: string): boolean {
  return UUID_RE.test(value);
}

/**
 * The alias grammar, applied only where an alias is set (create, rename), never on reads.
 * A UUID-shaped alias would make `/orgs/<that string>` ambiguous, so it is refused (rule 2).
 */
export const aliasSchema = z
  .string()
  .regex(ALIAS_RE, 'alias must be 3-64 characters of a-z 0-9 . _ - starting with a letter or digit')
  .refine((v) => !isUuid(v), 'alias must not have the shape of a UUID')
  .refine((v) => !RESERVED_ALIASES.has(v), 'alias is reserved');

/** A path parameter that names a resource by id or alias; resolution happens in SQL. */
export const refSchema = z.string().min(1).max(200);

/** The column to match a reference against: `id` for a canonical UUID, `alias` otherwise. */
export function refColumn(ref: string): 'id' | 'alias' {
  return isUuid(ref) ? 'id' : 'alias';
}

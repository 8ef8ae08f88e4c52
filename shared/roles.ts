/** Roles in increasing order of power (docs/access.md, "Standing"). */
export const ROLES = ['read', 'write', 'admin'] as const;
export type Role = (typeof ROLES)[number];

const RANK: Record<Role, number> = { read: 1, write: 2, admin: 3 };

/** True when `held` is at least `needed`. */
export function roleAtLeast(held: Role | null | undefined, needed: Role): boolean {
  return held != null && RANK[held] >= RANK[needed];
}

/** The lesser of two roles (the role cap); null when either is null. */
export function minRole(a: Role | null, b: Role | null): Role | null {
  if (a === null || b === null) return null;
  return RANK[a] <= RANK[b] ? a : b;
}

/** The greater of two roles; null only when both are null. */
export function maxRole(a: Role | null, b: Role | null): Role | null {
  if (a === null) return b;
  if (b === null) return a;
  return RANK[a] >= RANK[b] ? a : b;
}

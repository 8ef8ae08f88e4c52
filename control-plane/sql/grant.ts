import type { Role } from '../../shared/roles.ts';

/**
 * Where a row carries the membership role its query computed for one caller. A symbol key is
 * copied by object spread but skipped by `JSON.stringify`, so it never reaches a response body.
 */
export const GRANT: unique symbol = Symbol('grant');

/** The caller's membership role on the row's organization or blob, as its query found it. */
export interface Grant {
  userId: string;
  role: Role | null;
}

/**
 * What an API key, a credential or a membership is on (docs/access.md, "Memberships"): an
 * organization, a blob or a user.
 */
export type Target = 'organization' | 'blob' | 'user';

/** The column naming a target of each kind in `memberships`, `api_keys` and `credentials`. */
export const TARGET_COLUMN = {
  organization: 'org_id',
  blob: 'blob_id',
  user: 'target_user_id',
} as const satisfies Record<Target, string>;

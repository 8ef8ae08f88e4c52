import type { BaseContext } from '../base-context.ts';
import { ServiceError } from '../../shared/errors.ts';
import { findApiKeyForAuth, touchApiKey } from '../sql/api-keys.ts';
import { apiKeyMatches, apiKeyPublicId } from '../../shared/api-key-format.ts';
import type { Principal } from './principal.ts';

/**
 * Authenticates an `X-API-Key` (docs/access.md, "Using a key: role cap and confinement"). The key authenticates as its `user_id`: the
 * target account of a `user` key, the minter of an organization or blob key. A human behind it
 * is that account when it is human; a service account's key has nobody behind it. The key's
 * target and role travel on the principal, where the standing functions confine and cap it.
 * Every refusal is the same 401 and never repeats the key.
 */
export async function authenticateApiKey(ctx: BaseContext, key: string): Promise<Principal> {
  const publicId = apiKeyPublicId(key);
  const row = publicId === undefined ? undefined : await findApiKeyForAuth(ctx.db, publicId);
  if (!row || !apiKeyMatches(key, row.secret_hash))
    throw new ServiceError('unauthorized', 'Unknown or revoked API key.');
  // Awaited rather than fired and forgotten, so a use is recorded before its response is seen;
  // it writes at most once a minute per key, so the cost is one read on most requests.
  if (row.stale) await touchApiKey(ctx.db, row.id);
  return {
    userId: row.user_id,
    kind: row.kind,
    credential: 'api_key',
    humanId: row.kind === 'human' ? row.user_id : null,
    key: { id: row.id, target: row.target, targetId: row.target_id, role: row.role },
  };
}

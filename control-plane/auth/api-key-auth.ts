import type { AppContext } from '../context.ts';
import { ServiceError } from '../../shared/errors.ts';
import type { Principal } from './principal.ts';

/**
 * Authenticates an `X-API-Key`. API keys arrive with the access issue; until then every key is
 * refused as unknown.
 */
export async function authenticateApiKey(_ctx: AppContext, _key: string): Promise<Principal> {
  throw new ServiceError('unauthorized', 'Unknown API key.');
}

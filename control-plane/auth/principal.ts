import type { Role } from '../../shared/roles.ts';

import type { Target } from '../sql/targets.ts';

/** Who a request authenticates as, by which credential, and which human stands behind it. */
export interface Principal {
  /** The account the request acts as. */
  userId: string;
  kind: 'human' | 'service';
  credential: 'bearer' | 'acting' | 'api_key';
  /**
   * The human behind the request: the bearer's user, the acting token's minter, an ordinary
   * key's human minter, or null for a service account using its own key.
   */
  humanId: string | null;
  /** Present when an API key authenticated the request. */
  key?: { id: string; target: Target; targetId: string; role: Role };
}

/**
 * The one test of the access perimeter: is a human behind this request? A service account using
 * its own key is the only credential without one.
 */
export function hasHumanBehind(principal: Principal): boolean {
  return principal.humanId !== null;
}

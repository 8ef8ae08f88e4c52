import { ServiceError } from '../../shared/errors.ts';
import { hasHumanBehind, type Principal } from '../auth/principal.ts';

/**
 * The access perimeter (docs/access.md, "The access perimeter"): operations that change who can
 * access what need a human behind the request. A bearer token is the human, an acting token names
 * the human who minted it, an ordinary key resolves to its human; a service account using its own
 * key has nobody behind it and is refused with 403 `forbidden` whatever role the key carries.
 * Every perimeter operation calls this first thing after authentication, before reading the
 * body, so the refusal does not depend on what was asked.
 *
 * @param operation what was refused, for the message, e.g. `'mint an API key'`.
 */
export function requireHumanBehind(principal: Principal, operation: string): void {
  if (!hasHumanBehind(principal)) {
    throw new ServiceError('forbidden', `A service account using its own API key may not ${operation}.`);
  }
}

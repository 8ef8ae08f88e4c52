/** The operator's credential (held in the page's memory only), given to every page through context. */
import { createContext, useContext } from 'react';
import { opsQuery, type OpsCredential } from './graphql.ts';

export const OpsCredentialContext = createContext<OpsCredential | null>(null);

/** `query(text, variables)` with the signed-in operator's token. */
export function useOps(): <T>(query: string, variables?: Record<string, unknown>) => Promise<T> {
  const credential = useContext(OpsCredentialContext);
  if (!credential) throw new Error('outside the operator console');
  return (query, variables) => opsQuery(credential, query, variables);
}

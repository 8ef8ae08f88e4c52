/** The page's service and credential store, given to every component through React context. */
import { createContext, useContext, useSyncExternalStore } from 'react';
import type { Service } from './api/service.ts';
import type { CredentialStore, StoredCredential } from './auth/credential-store.ts';

export interface ConsoleContext {
  service: Service;
  store: CredentialStore;
}

export const Console = createContext<ConsoleContext | null>(null);

export function useConsole(): ConsoleContext {
  const value = useContext(Console);
  if (!value) throw new Error('outside the console');
  return value;
}

export function useService(): Service {
  return useConsole().service;
}

/** The stored credential, re-rendering on sign-in, refresh and sign-out. */
export function useCredential(): StoredCredential | null {
  const { store } = useConsole();
  return useSyncExternalStore(store.subscribe, store.snapshot);
}

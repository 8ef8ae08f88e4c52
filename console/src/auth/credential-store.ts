/**
 * The signed-in credential: where it is kept and how an access token is renewed. Kept in memory
 * and sessionStorage (gone with the tab), or in localStorage only when the user ticked "remember
 * me"; never in a URL. Tokens are refreshed as the typed client's users do (cli/context.ts): a
 * token provider that refreshes shortly before expiry, one refresh at a time, since a refresh
 * token works once and a replay revokes its family.
 */
import { createRestClient, ok, type Credential } from '../../../client/src/index.ts';

const KEY = 'workspace-console.credential';
const REFRESH_MARGIN_MS = 60_000;

/** What is kept of a sign-in. */
export type StoredCredential =
  | { kind: 'token'; access_token: string; refresh_token: string; expires_at: number; user_id: string }
  | { kind: 'api_key'; api_key: string };

/** A sign-in or refresh answer, as the service gives it. */
interface TokenAnswer {
  access_token: string;
  refresh_token: string;
  expires_in: number;
  user: { id: string };
}

type Listener = () => void;

/** The one credential of the page, observable by React (useSyncExternalStore). */
export class CredentialStore {
  #stored: StoredCredential | null;
  #remember: boolean;
  #refreshing: Promise<string> | null = null;
  readonly #listeners = new Set<Listener>();
  readonly #origin: string;

  constructor(origin: string) {
    this.#origin = origin;
    const fromSession = read(sessionStorage);
    const fromLocal = fromSession ? null : read(localStorage);
    this.#stored = fromSession ?? fromLocal;
    this.#remember = fromLocal !== null;
  }

  get current(): StoredCredential | null {
    return this.#stored;
  }

  subscribe = (listener: Listener): (() => void) => {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  };

  snapshot = (): StoredCredential | null => this.#stored;

  /** Keeps a token sign-in's answer. */
  signedIn(answer: TokenAnswer, remember: boolean): void {
    this.#set(tokenOf(answer), remember);
  }

  /** Keeps an API key (checked by the caller first). */
  usingApiKey(apiKey: string, remember: boolean): void {
    this.#set({ kind: 'api_key', api_key: apiKey }, remember);
  }

  signOut(): void {
    this.#set(null, false);
  }

  /** The credential for the typed client: an API key, or a provider that refreshes. */
  credential(): Credential | null {
    const stored = this.#stored;
    if (!stored) return null;
    if (stored.kind === 'api_key') return { apiKey: stored.api_key };
    return { token: () => this.#token() };
  }

  async #token(): Promise<string> {
    const stored = this.#stored;
    if (!stored || stored.kind !== 'token') throw new Error('Signed out.');
    if (stored.expires_at - Date.now() > REFRESH_MARGIN_MS) return stored.access_token;
    this.#refreshing ??= this.#refresh(stored).finally(() => (this.#refreshing = null));
    return this.#refreshing;
  }

  async #refresh(stored: Extract<StoredCredential, { kind: 'token' }>): Promise<string> {
    const rest = createRestClient({ baseUrl: this.#origin });
    try {
      const answer = await ok(rest.POST('/v1/auth/refresh', { body: { refresh_token: stored.refresh_token } }));
      this.#set(tokenOf(answer), this.#remember);
      return answer.access_token;
    } catch (error) {
      // A refused refresh (expired, revoked family) signs the page out; the sign-in page shows.
      this.signOut();
      throw error;
    }
  }

  #set(stored: StoredCredential | null, remember: boolean): void {
    this.#stored = stored;
    this.#remember = remember;
    sessionStorage.removeItem(KEY);
    localStorage.removeItem(KEY);
    if (stored) (remember ? localStorage : sessionStorage).setItem(KEY, JSON.stringify(stored));
    for (const listener of this.#listeners) listener();
  }
}

function tokenOf(answer: TokenAnswer): StoredCredential {
  return {
    kind: 'token',
    access_token: answer.access_token,
    refresh_token: answer.refresh_token,
    expires_at: Date.now() + answer.expires_in * 1000,
    user_id: answer.user.id,
  };
}

function read(storage: Storage): StoredCredential | null {
  try {
    const text = storage.getItem(KEY);
    return text ? (JSON.parse(text) as StoredCredential) : null;
  } catch {
    return null;
  }
}

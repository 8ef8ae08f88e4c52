/**
 * The console's one way to the service: the typed client of client/ (REST through openapi-fetch,
 * JSON-RPC over one shared WebSocket for subscriptions), with the signed-in credential.
 */
import {
  createRestClient,
  ok,
  RpcClient,
  socketUrlOf,
  type CommandName,
  type CommandResult,
  type RestClient,
  type RpcParams,
} from '../../../client/src/index.ts';
import type { CredentialStore } from '../auth/credential-store.ts';

/** Omit over each member of a union (a command whose params are one of several shapes). */
type ParamsOf<M extends CommandName> =
  RpcParams<M> extends infer P ? (P extends unknown ? Omit<P, 'revision_id'> : never) : never;

export class Service {
  readonly origin: string;
  readonly rest: RestClient;
  /** Without a credential: the sign-in routes. */
  readonly anonymous: RestClient;
  readonly #store: CredentialStore;
  #rpc: Promise<RpcClient> | null = null;

  constructor(origin: string, store: CredentialStore) {
    this.origin = origin;
    this.#store = store;
    this.anonymous = createRestClient({ baseUrl: origin });
    // The credential is read for every request, so a refresh or a sign-out applies at once.
    this.rest = createRestClient({
      baseUrl: origin,
      credential: {
        token: async () => {
          const credential = store.credential();
          if (!credential) throw new Error('Signed out.');
          return 'apiKey' in credential
            ? credential.apiKey
            : typeof credential.token === 'function'
              ? credential.token()
              : credential.token;
        },
      },
      fetch: (request) => {
        // An API key travels as X-API-Key, not as a bearer token.
        const stored = store.current;
        if (stored?.kind === 'api_key') {
          request.headers.delete('authorization');
          request.headers.set('x-api-key', stored.api_key);
        }
        return fetch(request);
      },
    });
  }

  /** The shared WebSocket, opened on first use with the current credential. */
  rpc(): Promise<RpcClient> {
    if (!this.#rpc) {
      const credential = this.#store.credential();
      if (!credential) return Promise.reject(new Error('Signed out.'));
      this.#rpc = RpcClient.connect({ url: socketUrlOf(this.origin), credential });
      this.#rpc.catch(() => (this.#rpc = null));
    }
    return this.#rpc;
  }

  /** A revision command over the shared WebSocket, typed: `command("list_sessions", revisionId, {})`. */
  command<M extends CommandName>(name: M, revisionId: string, params: ParamsOf<M>): Promise<CommandResult<M>> {
    return this.rpc().then((rpc) => rpc.call(name, { ...params, revision_id: revisionId } as RpcParams<M>));
  }

  /** Closes the socket (sign-out). */
  async close(): Promise<void> {
    const pending = this.#rpc;
    this.#rpc = null;
    if (pending) await (await pending.catch(() => null))?.close();
  }
}

export { ok };

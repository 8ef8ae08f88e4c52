/**
 * The console's one way to the service: the typed client of client/ (REST through openapi-fetch,
 * JSON-RPC over one shared WebSocket for subscriptions), with the signed-in credential.
 */
import {
  ApiError,
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

  /** The headers that carry the signed-in credential (an API key, or a fresh access token). */
  async authHeaders(): Promise<Record<string, string>> {
    const stored = this.#store.current;
    if (stored?.kind === 'api_key') return { 'x-api-key': stored.api_key };
    const credential = this.#store.credential();
    if (!credential || 'apiKey' in credential) throw new Error('Signed out.');
    const token = typeof credential.token === 'function' ? await credential.token() : credential.token;
    return { authorization: `Bearer ${token}` };
  }

  /**
   * PUT `bytes` to `path` as a binary transfer (`X-Request-Body: {"size"}`), reporting the bytes
   * sent as they go: XMLHttpRequest, since fetch tells nothing of an upload's progress. Resolves
   * with the JSON answer; a refusal rejects with its ApiError.
   */
  async upload(path: string, bytes: Blob, onProgress: (sent: number, total: number) => void): Promise<unknown> {
    const headers = await this.authHeaders();
    return new Promise((resolve, reject) => {
      const request = new XMLHttpRequest();
      request.open('PUT', this.origin + path);
      for (const [name, value] of Object.entries(headers)) request.setRequestHeader(name, value);
      request.setRequestHeader('content-type', 'application/octet-stream');
      request.setRequestHeader('x-request-body', JSON.stringify({ size: bytes.size }));
      request.upload.onprogress = (event) => onProgress(event.loaded, bytes.size);
      request.onload = () => {
        let body: unknown = null;
        try {
          body = JSON.parse(request.responseText);
        } catch {
          // Not JSON: said below with the status.
        }
        if (request.status >= 200 && request.status < 300) {
          // Answered: every byte was sent, whatever the last progress event said.
          onProgress(bytes.size, bytes.size);
          return resolve(body);
        }
        const fields = body as { error?: string; message?: string } | null;
        if (fields && typeof fields.error === 'string')
          return reject(new ApiError(fields as ConstructorParameters<typeof ApiError>[0], request.status));
        reject(new Error(`The upload was answered ${request.status}.`));
      };
      // The service closes the connection on a refusal before the body is read: the browser may
      // then report a network error without the answer.
      request.onerror = () =>
        reject(new Error('The upload was cut off (the service refused it or the connection failed).'));
      request.send(bytes);
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

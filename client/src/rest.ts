/**
 * The REST client: openapi-fetch over the types openapi-typescript generated from the service's
 * own `GET /v1/openapi.json` (rest-types.ts; `npm run client:types` regenerates it and
 * test/client.test.ts fails when it drifts). Adds the credential, an idempotency key on creates,
 * and retries of what is safe to retry (reads, and creates with their key) on 503 and network
 * failures.
 */
import createClient, { type Client, type Middleware } from 'openapi-fetch';
import { credentialHeaders, type Credential } from './credentials.ts';
import { restError } from './errors.ts';
import { IDEMPOTENCY_HEADER, isCreatingRequest, newIdempotencyKey } from './idempotency.ts';
import type { paths } from './rest-types.ts';

export type { paths } from './rest-types.ts';

/** The typed openapi-fetch client: `rest.GET('/v1/orgs/{id}', {params: {path: {id}}})`. */
export type RestClient = Client<paths>;

export interface RestOptions {
  /** The service's origin, `http://127.0.0.1:8080` (paths start with `/v1`). */
  baseUrl: string;
  /** Omitted for the sign-in routes; a token provider is called for every request. */
  credential?: Credential | null;
  /** Defaults to the platform's fetch. */
  fetch?: (request: Request) => Promise<Response>;
  /** Extra attempts after a 503 or a network failure, for reads and keyed creates (default 2). */
  retries?: number;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Whether sending the request again cannot do a thing twice. */
function repeatable(request: Request): boolean {
  return request.method === 'GET' || request.method === 'HEAD' || request.headers.has(IDEMPOTENCY_HEADER);
}

/** fetch with retries: each attempt sends a clone of the same request, so a create keeps its key. */
function retryingFetch(
  send: (request: Request) => Promise<Response>,
  retries: number,
): (request: Request) => Promise<Response> {
  return async (request) => {
    for (let attempt = 0; ; attempt++) {
      const last = attempt >= retries || !repeatable(request);
      try {
        const response = await send(last ? request : request.clone());
        if (response.status !== 503 || last) return response;
        const after = Number(response.headers.get('retry-after'));
        await sleep(Math.min(Number.isFinite(after) && after > 0 ? after * 1000 : 1000, 5_000));
      } catch (error) {
        if (last || !(error instanceof TypeError)) throw error;
        await sleep(500 * (attempt + 1));
      }
    }
  };
}

/** Creates the typed REST client. */
export function createRestClient(options: RestOptions): RestClient {
  const send = options.fetch ?? ((request: Request) => globalThis.fetch(request));
  const client = createClient<paths>({
    baseUrl: options.baseUrl.replace(/\/+$/, ''),
    fetch: retryingFetch(send, options.retries ?? 2),
  });
  const middleware: Middleware = {
    async onRequest({ request, schemaPath }) {
      if (options.credential && !request.headers.has('authorization') && !request.headers.has('x-api-key')) {
        for (const [name, value] of Object.entries(await credentialHeaders(options.credential)))
          request.headers.set(name, value);
      }
      if (!request.headers.has(IDEMPOTENCY_HEADER) && isCreatingRequest(request.method, schemaPath)) {
        request.headers.set(IDEMPOTENCY_HEADER, newIdempotencyKey());
      }
      return request;
    },
  };
  client.use(middleware);
  return client;
}

/**
 * The data of a successful answer, or the failure envelope thrown as ApiError:
 * `const { org } = await ok(rest.POST('/v1/orgs', {body: {alias}}))`.
 */
export async function ok<T>(
  pending: Promise<{ data?: T; error?: unknown; response: Response }>,
): Promise<NonNullable<T>> {
  const { data, error, response } = await pending;
  if (!response.ok || error !== undefined) throw restError(error, response);
  return data as NonNullable<T>;
}

/** The WebSocket endpoint of a REST origin: `http://h:p` → `ws://h:p/v1`. */
export function socketUrlOf(baseUrl: string): string {
  const url = new URL(baseUrl);
  url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
  url.pathname = '/v1';
  return url.toString().replace(/\/$/, '');
}

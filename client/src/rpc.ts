/**
 * The WebSocket JSON-RPC 2.0 client (docs/commands.md): typed commands, batches, `subscribe` as an
 * async iterator, and reconnects that resend what is safe to resend and resubscribe, filling the
 * gap from the event listings so a subscriber misses nothing and sees nothing twice.
 */
import type { CommandName, CommandResult, EventRecord, RpcParams, SubscribeParams } from './commands.ts';
import {
  credentialHeaders,
  credentialProtocols,
  isRenewable,
  type Credential,
  type SocketCredentialForm,
} from './credentials.ts';
import { ApiError, ConnectionError, isFailureFields, restError, rpcError } from './errors.ts';
import { IDEMPOTENCY_PARAM, withIdempotencyParam } from './idempotency.ts';
import { Subscription } from './subscription.ts';

/** What the client needs of a WebSocket: a browser's, Node's global one (undici), or `ws`'s. */
export interface SocketLike {
  readonly protocol: string;
  send(data: string): void;
  close(code?: number, reason?: string): void;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the DOM's and Node's WebSocket events differ; each listener reads what it needs
  addEventListener(type: 'open' | 'message' | 'close' | 'error', listener: (event: any) => void): void;
}

/** Opens a socket: `protocols` carries a sub-protocol credential, `headers` a header one. */
export type SocketFactory = (
  url: string,
  protocols: string[],
  headers: Record<string, string> | undefined,
) => SocketLike | Promise<SocketLike>;

export interface ReconnectOptions {
  /** Attempts per outage before giving up (default 10). */
  attempts?: number;
  /** First delay, doubled per attempt up to `maxDelayMs` (defaults 250 and 5000). */
  delayMs?: number;
  maxDelayMs?: number;
}

export interface RpcOptions {
  /** `ws://host:port/v1` or `wss://…/v1`. */
  url: string;
  credential: Credential;
  /** `subprotocol` (default; the only form a browser can send) or `header` (Node). */
  form?: SocketCredentialForm;
  /**
   * Defaults to the platform's `WebSocket` (`new WebSocket(url, {protocols, headers})` for
   * headers), or, where there is none (Node 20), the `ws` package's.
   */
  createSocket?: SocketFactory;
  /** `false`: a dropped socket fails what is in flight and ends subscriptions. */
  reconnect?: ReconnectOptions | false;
  /** Send `idempotency_key` on creating commands (default true; see idempotency.ts). */
  idempotencyParam?: boolean;
  /** Told when the socket drops (`reconnecting`) and comes back (`open`). */
  onStateChange?: (state: 'open' | 'reconnecting' | 'closed') => void;
}

/** One entry of a batch; `notify: true` sends it without an id (no answer). */
export interface BatchCall {
  method: string;
  params?: Record<string, unknown>;
  notify?: boolean;
}

/** A batch entry's outcome, in the order of the calls that expect one. */
export type BatchOutcome = { ok: true; result: unknown } | { ok: false; error: ApiError };

type Frame = Record<string, unknown> | Record<string, unknown>[];

interface Pending {
  frame: Frame;
  resolve(value: unknown): void;
  reject(error: unknown): void;
  /** Safe to send again after a reconnect: a read, or a create carrying an idempotency key. */
  retry: boolean;
  sent: boolean;
}

const READS = /^(get_|list_|check_|query_|download_)|^subscribe$|^unsubscribe$/;

// A variable, so a browser bundler does not try to resolve a Node package it never needs.
const WS_PACKAGE = 'ws';

const defaultSocket: SocketFactory = (url, protocols, headers) => {
  const Ctor = (globalThis as { WebSocket?: new (url: string, init?: unknown) => SocketLike }).WebSocket;
  if (Ctor) {
    // Node's WebSocket (undici) takes {protocols, headers}; browsers take the protocol list.
    return headers ? new Ctor(url, { protocols, headers }) : new Ctor(url, protocols);
  }
  return wsPackageSocket(url, protocols, headers);
};

/** Node before 22 has no global WebSocket: `ws` (a dependency of this package) has the same events. */
async function wsPackageSocket(
  url: string,
  protocols: string[],
  headers: Record<string, string> | undefined,
): Promise<SocketLike> {
  let ws: { WebSocket: new (url: string, protocols: string[], options: unknown) => SocketLike };
  try {
    ws = (await import(WS_PACKAGE)) as typeof ws;
  } catch {
    throw new ConnectionError(
      'This platform has no global WebSocket and the ws package is not installed: pass createSocket.',
    );
  }
  return new ws.WebSocket(url, protocols, headers ? { headers } : {});
}

/**
 * A WebSocket shows nothing of a refused upgrade (no status, no body: browsers do not even say it
 * was refused). The same credential on `GET /v1/users/me` answers the envelope the upgrade got;
 * when that read succeeds, or cannot be made (no CORS for this page), the original error stands.
 */
async function explainRefusal(options: RpcOptions, error: unknown): Promise<unknown> {
  try {
    const url = new URL(options.url);
    url.protocol = url.protocol === 'wss:' ? 'https:' : 'http:';
    url.pathname = '/v1/users/me';
    const response = await fetch(url, { headers: await credentialHeaders(options.credential) });
    if (response.ok) return error;
    const body: unknown = await response.json().catch(() => null);
    return isFailureFields(body) ? restError(body, response) : error;
  } catch {
    return error;
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export class RpcClient {
  readonly #options: RpcOptions;
  #socket: SocketLike | null = null;
  #nextId = 1;
  readonly #pending = new Map<number, Pending>();
  readonly #subs = new Set<Subscription>();
  readonly #byServerId = new Map<string, Subscription>();
  /** Pushes that reached the socket before their `subscribe` answer (docs: "rarely"). */
  readonly #early = new Map<string, EventRecord[]>();
  #subscribing = 0;
  #closing = false;
  #closed: Promise<void> = Promise.resolve();
  #reconnects = 0;
  /** Counts outages, so a reconnect overtaken by the next outage stops resubscribing. */
  #outage = 0;

  private constructor(options: RpcOptions) {
    this.#options = options;
  }

  /**
   * Opens the socket. A refused upgrade rejects with the service's ApiError (`unauthorized`, …)
   * when a REST read with the same credential shows it, else with ConnectionError.
   */
  static async connect(options: RpcOptions): Promise<RpcClient> {
    const client = new RpcClient(options);
    try {
      await client.#open();
    } catch (error) {
      throw await explainRefusal(options, error);
    }
    return client;
  }

  /** The sub-protocol the server answered (`authorization.bearer.base64`, …; '' for headers). */
  get protocol(): string {
    return this.#socket?.protocol ?? '';
  }

  /** How many times the socket was opened again after dropping. */
  get reconnects(): number {
    return this.#reconnects;
  }

  /** Drops the socket as a network failure would (tests, and callers that know the link died). */
  drop(): void {
    this.#socket?.close(4000, 'dropped by the client');
  }

  /** A typed command. Rejects with ApiError for a refusal, ConnectionError when the link fails. */
  call<M extends CommandName>(method: M, params: RpcParams<M>): Promise<CommandResult<M>> {
    return this.request(method, params as Record<string, unknown>) as Promise<CommandResult<M>>;
  }

  /** Any method, untyped. */
  request(method: string, params?: Record<string, unknown>): Promise<unknown> {
    if (this.#closing) return Promise.reject(new ConnectionError('The client was closed.'));
    const sent = this.#options.idempotencyParam !== false ? withIdempotencyParam(method, params) : params;
    const frame: Record<string, unknown> = { jsonrpc: '2.0', id: this.#nextId++, method };
    if (sent !== undefined) frame.params = sent;
    const retry = READS.test(method) || (sent !== undefined && IDEMPOTENCY_PARAM in sent);
    return this.#enqueue(frame.id as number, frame, retry);
  }

  /** A notification: runs on the server, nothing comes back. */
  notify(method: string, params?: Record<string, unknown>): void {
    this.#socket?.send(
      JSON.stringify(params === undefined ? { jsonrpc: '2.0', method } : { jsonrpc: '2.0', method, params }),
    );
  }

  /**
   * One batch frame: the entries run one after another on the server. Resolves with an outcome
   * per entry that is not a notification, in order; a refused entry does not stop the others.
   */
  async batch(calls: BatchCall[]): Promise<BatchOutcome[]> {
    if (this.#closing) throw new ConnectionError('The client was closed.');
    const ids: number[] = [];
    let retry = true;
    const frame = calls.map((entry) => {
      const params =
        this.#options.idempotencyParam !== false ? withIdempotencyParam(entry.method, entry.params) : entry.params;
      const message: Record<string, unknown> = { jsonrpc: '2.0', method: entry.method };
      if (params !== undefined) message.params = params;
      if (!entry.notify) {
        message.id = this.#nextId++;
        ids.push(message.id as number);
      }
      retry &&= READS.test(entry.method) || (params !== undefined && IDEMPOTENCY_PARAM in params);
      return message;
    });
    if (ids.length === 0) {
      this.#socket?.send(JSON.stringify(frame));
      return [];
    }
    const replies = (await this.#enqueue(ids[0]!, frame, retry)) as Array<{
      id: number;
      result?: unknown;
      error?: { code: number; message: string; data?: unknown };
    }>;
    const byId = new Map(replies.map((reply) => [reply.id, reply]));
    return ids.map((id) => {
      const reply = byId.get(id);
      if (!reply)
        return {
          ok: false,
          error: new ApiError({ error: 'internal_error', message: `no answer for batch entry ${id}` }, 500),
        };
      return reply.error ? { ok: false, error: rpcError(reply.error) } : { ok: true, result: reply.result };
    });
  }

  /**
   * Subscribes to a session's or an execution's events. `replay: true` first delivers the events
   * already written (read from the listing), then the live ones, each once. Iterate with
   * `for await`; `break` (or `unsubscribe()`) ends the subscription.
   */
  async subscribe(params: SubscribeParams, options: { replay?: boolean } = {}): Promise<Subscription> {
    const sub = new Subscription('', params, (s) => this.#unsubscribeOnServer(s));
    if (options.replay) sub.hold();
    this.#subscribing++;
    let answer: { subscription: string };
    try {
      answer = (await this.request('subscribe', params as Record<string, unknown>)) as { subscription: string };
    } finally {
      this.#subscribing--;
    }
    this.#attach(sub, answer.subscription);
    if (options.replay) await this.#fillGap(sub);
    return sub;
  }

  /** Closes the socket; calls in flight reject and subscriptions end. */
  async close(): Promise<void> {
    this.#closing = true;
    for (const sub of this.#subs) sub.end();
    this.#subs.clear();
    this.#failPending(new ConnectionError('The client was closed.'), () => true);
    this.#socket?.close(1000, 'client closed');
    await this.#closed;
  }

  async #open(): Promise<void> {
    const { url, credential } = this.#options;
    const form = this.#options.form ?? 'subprotocol';
    const headers = form === 'header' ? await credentialHeaders(credential) : undefined;
    const protocols = form === 'subprotocol' ? await credentialProtocols(credential) : [];
    const made = (this.#options.createSocket ?? defaultSocket)(url, protocols, headers);
    // A socket made synchronously gets its listeners in the same tick: an await here would let a
    // connection that fails at once (undici refuses some ports before any I/O) fire unheard.
    const socket = made instanceof Promise ? await made : made;
    let markClosed!: () => void;
    const closed = new Promise<void>((resolve) => (markClosed = resolve));
    await new Promise<void>((resolve, reject) => {
      let opened = false;
      socket.addEventListener('open', () => {
        opened = true;
        resolve();
      });
      socket.addEventListener('error', () => {
        // Browsers do not show why an upgrade failed; the service answers a refused one 401.
        if (!opened)
          reject(new ConnectionError(`The WebSocket to ${url} did not open (refused credential, or unreachable).`));
      });
      socket.addEventListener('close', (event: { code: number; reason: string }) => {
        markClosed();
        if (!opened)
          reject(new ConnectionError(`The WebSocket to ${url} closed before opening (${event.code}).`, event.code));
        else this.#onClose(socket, event);
      });
      socket.addEventListener('message', (event: { data: unknown }) => this.#onMessage(event.data));
    });
    this.#socket = socket;
    this.#closed = closed;
  }

  #enqueue(id: number, frame: Frame, retry: boolean): Promise<unknown> {
    return new Promise((resolve, reject) => {
      const pending: Pending = { frame, resolve, reject, retry, sent: false };
      this.#pending.set(id, pending);
      if (this.#socket) {
        this.#socket.send(JSON.stringify(frame));
        pending.sent = true;
      }
      // Otherwise a reconnect is under way: it sends the frame once the socket is back.
    });
  }

  #onMessage(data: unknown): void {
    if (typeof data !== 'string') return;
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- a frame off the wire, narrowed field by field below
    let message: any;
    try {
      message = JSON.parse(data);
    } catch {
      return;
    }
    if (Array.isArray(message)) {
      const first = message.find((reply) => reply && this.#pending.has(reply.id));
      if (first) this.#settle(first.id, message, null);
      return;
    }
    if (message === null || typeof message !== 'object') return;
    if (!('id' in message)) {
      if (message.method !== 'event') return;
      const { subscription, event } = message.params as { subscription: string; event: EventRecord };
      const sub = this.#byServerId.get(subscription);
      if (sub) sub.push(event);
      else if (this.#subscribing > 0) this.#early.set(subscription, [...(this.#early.get(subscription) ?? []), event]);
      return;
    }
    this.#settle(message.id, message.result, message.error ?? null);
  }

  #settle(id: number, result: unknown, error: { code: number; message: string; data?: unknown } | null): void {
    const pending = this.#pending.get(id);
    if (!pending) return;
    this.#pending.delete(id);
    if (error) pending.reject(rpcError(error));
    else pending.resolve(result);
  }

  #attach(sub: Subscription, serverId: string): void {
    sub.id = serverId;
    this.#byServerId.set(serverId, sub);
    this.#subs.add(sub);
    for (const event of this.#early.get(serverId) ?? []) sub.push(event);
    this.#early.delete(serverId);
  }

  /** Reads the subscription's listing and delivers what is newer than its last event, then the held pushes. */
  async #fillGap(sub: Subscription): Promise<void> {
    sub.hold();
    try {
      const { revision_id, session_id, execution_id } = sub.params;
      let cursor: string | undefined;
      do {
        const page: Record<string, unknown> = { revision_id, limit: 200 };
        if (cursor !== undefined) page.cursor = cursor;
        const { events, cursor: next } = (await (session_id !== undefined
          ? this.request('list_session_events', { ...page, session_id })
          : this.request('list_execution_events', { ...page, execution_id }))) as {
          events: EventRecord[];
          cursor: string | null;
        };
        for (const event of events) sub.deliver(event);
        cursor = next ?? undefined;
      } while (cursor !== undefined);
    } finally {
      sub.release();
    }
  }

  async #unsubscribeOnServer(sub: Subscription): Promise<void> {
    this.#subs.delete(sub);
    this.#byServerId.delete(sub.id);
    if (!this.#socket || this.#closing) return;
    try {
      await this.request('unsubscribe', { revision_id: sub.params.revision_id, subscription: sub.id });
    } catch (error) {
      // Gone already (the socket it was made on dropped): nothing to undo.
      if (!(error instanceof ApiError && error.error === 'not_found') && !(error instanceof ConnectionError))
        throw error;
    }
  }

  #failPending(error: unknown, which: (pending: Pending) => boolean): void {
    for (const [id, pending] of this.#pending) {
      if (!which(pending)) continue;
      this.#pending.delete(id);
      pending.reject(error);
    }
  }

  #failAll(error: unknown): void {
    this.#failPending(error, () => true);
    for (const sub of this.#subs) sub.end(error);
    this.#subs.clear();
    this.#byServerId.clear();
    this.#options.onStateChange?.('closed');
  }

  #onClose(socket: SocketLike, event: { code: number; reason: string }): void {
    if (socket !== this.#socket) return;
    this.#socket = null;
    if (this.#closing) return;
    const lost = new ConnectionError(
      `The WebSocket closed (${event.code}${event.reason ? ` ${event.reason}` : ''}) before the answer.`,
      event.code,
    );
    if (event.code === 4001 && !isRenewable(this.#options.credential)) {
      // The credential expired or stopped authenticating: reconnecting with it cannot help.
      this.#failAll(
        new ApiError({ error: 'unauthorized', message: event.reason || 'The credential stopped authenticating.' }, 401),
      );
      return;
    }
    if (this.#options.reconnect === false) {
      this.#failAll(lost);
      return;
    }
    // A call that was sent and is not safe to repeat may or may not have run: its caller decides.
    this.#failPending(lost, (pending) => pending.sent && !pending.retry);
    for (const pending of this.#pending.values()) pending.sent = false;
    for (const sub of this.#subs) sub.hold();
    this.#byServerId.clear();
    this.#outage++;
    this.#options.onStateChange?.('reconnecting');
    void this.#reconnect(lost);
  }

  // The delay doubles up to a bound like shared/backoff.ts's, written here again because this
  // package is built from client/src alone (rootDir) and ships to browsers and other programs:
  // it imports nothing of the service.
  async #reconnect(lost: ConnectionError): Promise<void> {
    const outage = this.#outage;
    const options = this.#options.reconnect || {};
    const attempts = options.attempts ?? 10;
    let delay = options.delayMs ?? 250;
    let lastError: unknown = lost;
    for (let attempt = 0; attempt < attempts && !this.#closing; attempt++) {
      await sleep(delay);
      delay = Math.min(delay * 2, options.maxDelayMs ?? 5_000);
      try {
        await this.#open();
        lastError = null;
        break;
      } catch (error) {
        lastError = error;
      }
    }
    if (this.#closing) {
      // close() was called while this socket was opening: it must not stay open.
      this.#socket?.close(1000, 'client closed');
      return;
    }
    if (lastError !== null) {
      this.#failAll(lastError);
      return;
    }
    this.#reconnects++;
    this.#options.onStateChange?.('open');
    for (const pending of [...this.#pending.values()]) {
      if (pending.sent || !this.#socket) continue;
      this.#socket.send(JSON.stringify(pending.frame));
      pending.sent = true;
    }
    for (const sub of [...this.#subs]) {
      if (outage !== this.#outage) return;
      try {
        this.#subscribing++;
        let answer: { subscription: string };
        try {
          answer = (await this.request('subscribe', sub.params as Record<string, unknown>)) as { subscription: string };
        } finally {
          this.#subscribing--;
        }
        this.#attach(sub, answer.subscription);
        await this.#fillGap(sub);
      } catch (error) {
        // A socket that dropped again resubscribes on the next round; anything else ends it.
        if (error instanceof ConnectionError) continue;
        this.#subs.delete(sub);
        sub.end(error);
      }
    }
  }
}

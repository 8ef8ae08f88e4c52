/**
 * Admission of heavy requests: those whose body is large (docs/operations.md, "What one tenant can
 * do to the others"). Reading, parsing, validating and writing a body of several MiB costs the
 * control plane's event loop tens of milliseconds and its memory several times the body; without
 * a bound, one tenant sending dozens at once delays every other tenant's requests by seconds.
 *
 * A body of at least `bodyBytes` (its `Content-Length`; a body without one counts as the route's
 * whole body limit) takes a slot of its account, a slot of its client address and its size from
 * the bytes in flight of this control plane, before a byte of it is read. Past any of the three
 * it is refused at once with 429 `rate_limited` and `Retry-After: 1`, nothing read and nothing
 * done. The slots are given back when the answer is ready, or when the client goes away before
 * the handler starts. Small requests are never counted nor refused.
 *
 * An admitted request then does its work — the handler, with its database writes — in turns:
 * `atOnce` heavy requests at once on this control plane, one per account, accounts taking turns
 * (shared/fair-queue.ts). A heavy write (10,000 records, a 5 MiB object) keeps a PostgreSQL
 * backend busy for a second or more; two of them at once, admitted for one account, kept both
 * cores of a small host busy and every other tenant's queries waited for CPU. The wait holds no
 * pool connection: the body is already parsed, its bytes counted in `bytesInFlight`.
 *
 * REST routes opt in with `config: { heavyBody: true }` (the command route, session file
 * uploads); WebSocket messages are admitted by control-plane/ws/connection.ts with the same gate.
 * Each setting 0 turns its bound off; `bodyBytes` 0 turns the gate off.
 */
import { setImmediate as yieldToLoop } from 'node:timers/promises';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Config } from '../../shared/config.ts';
import { ServiceError } from '../../shared/errors.ts';
import { FairQueue } from '../../shared/fair-queue.ts';

/** Seconds a refused client is told to wait: slots free as soon as a request of its finishes. */
const HEAVY_RETRY_AFTER_SECONDS = 1;

/** Gives back what `admit` took; calling it again does nothing. */
export type Release = () => void;

/** The gate's bounds (Config['heavyWork']). */
export type HeavyWorkSettings = Config['heavyWork'];

function add(counts: Map<string, number>, key: string, by: number): void {
  const next = (counts.get(key) ?? 0) + by;
  if (next <= 0) counts.delete(key);
  else counts.set(key, next);
}

/** Slots of heavy work per account and per address, and the bytes of heavy bodies in flight. */
export class HeavyWorkGate {
  readonly #settings: HeavyWorkSettings;
  readonly #byAccount = new Map<string, number>();
  readonly #byAddress = new Map<string, number>();
  #bytes = 0;
  readonly #turns: FairQueue | null;

  constructor(settings: HeavyWorkSettings) {
    this.#settings = settings;
    // Waiting per account is already bounded by `perAccount` admissions.
    this.#turns =
      settings.atOnce > 0 ? new FairQueue({ concurrency: settings.atOnce, perKey: 1, maxWaitingPerKey: 1024 }) : null;
  }

  /**
   * Waits for `account`'s turn to do an admitted request's work (at most `atOnce` at once, one
   * per account, accounts in turns); resolves with the function that ends the turn (calling it
   * again does nothing).
   */
  async turn(account: string): Promise<Release> {
    const turns = this.#turns;
    if (turns === null) return () => {};
    let end: Release = () => {};
    const ended = new Promise<void>((resolve) => (end = resolve));
    await new Promise<void>((started, refused) => {
      turns
        .run(account, () => {
          started();
          return ended;
        })
        .catch(refused);
    });
    return end;
  }

  /** Whether a body of `bytes` is heavy work. */
  isHeavy(bytes: number): boolean {
    return this.#settings.bodyBytes > 0 && bytes >= this.#settings.bodyBytes;
  }

  /**
   * Takes a slot of `account` and of `address` and `bytes` of the budget, or returns the 429
   * refusal naming the bound that is full. A body larger than the whole budget is admitted only
   * when nothing else is in flight, so a small budget delays it rather than refusing it forever.
   */
  admit(account: string, address: string, bytes: number): Release | ServiceError {
    const { perAccount, perAddress, bytesInFlight } = this.#settings;
    if (perAccount > 0 && (this.#byAccount.get(account) ?? 0) >= perAccount)
      return refusal(`This account already has ${perAccount} large requests in progress`);
    if (perAddress > 0 && (this.#byAddress.get(address) ?? 0) >= perAddress)
      return refusal(`This address already has ${perAddress} large requests in progress`);
    if (bytesInFlight > 0 && this.#bytes > 0 && this.#bytes + bytes > bytesInFlight)
      return refusal('The service is busy with large requests');
    add(this.#byAccount, account, 1);
    add(this.#byAddress, address, 1);
    this.#bytes += bytes;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      add(this.#byAccount, account, -1);
      add(this.#byAddress, address, -1);
      this.#bytes -= bytes;
    };
  }
}

function refusal(what: string): ServiceError {
  const error = new ServiceError('rate_limited', `${what}; try again in ${HEAVY_RETRY_AFTER_SECONDS} s.`);
  error.retryAfterSeconds = HEAVY_RETRY_AFTER_SECONDS;
  return error;
}

/** The body size a request announces; a body without `Content-Length` (chunked) counts as `limit`. */
function announcedBytes(request: FastifyRequest, limit: number): number {
  const header = request.headers['content-length'];
  if (header !== undefined) {
    const bytes = Number(header);
    return Number.isSafeInteger(bytes) && bytes >= 0 ? bytes : limit;
  }
  return request.headers['transfer-encoding'] !== undefined ? limit : 0;
}

/**
 * Registers the gate's hooks for routes marked `config: { heavyBody: true }`; returns the gate,
 * which the WebSocket endpoint shares. Registered after authentication: the account is known
 * before the body is read.
 */
export function registerHeavyWork(app: FastifyInstance, settings: HeavyWorkSettings): HeavyWorkGate {
  const gate = new HeavyWorkGate(settings);
  const releases = new WeakMap<FastifyRequest, { release: Release; handling: boolean; endTurn?: Release }>();
  const finish = (request: FastifyRequest) => {
    const entry = releases.get(request);
    entry?.endTurn?.();
    entry?.release();
  };

  app.addHook('preParsing', async (request, reply, payload) => {
    if (request.routeOptions.config.heavyBody !== true || request.principal == null) return payload;
    const bytes = announcedBytes(request, request.routeOptions.bodyLimit ?? 0);
    if (!gate.isHeavy(bytes)) return payload;
    const admitted = gate.admit(request.principal.userId, request.ip, bytes);
    if (admitted instanceof ServiceError) {
      // The body is not read: closing the connection after the answer stops the client sending
      // it, where keeping the connection alive would make this process read and drop every byte.
      reply.header('connection', 'close');
      throw admitted;
    }
    const entry: { release: Release; handling: boolean; endTurn?: Release } = { release: admitted, handling: false };
    releases.set(request, entry);
    // A client gone before its handler started frees the slot now; once the handler runs, the
    // slot is held until it answers (onSend), however long the work takes after a disconnect.
    reply.raw.once('close', () => {
      if (!entry.handling) entry.release();
    });
    return payload;
  });
  // The body has been parsed in one synchronous step; the handler waits for its account's turn
  // (which also lets other requests' I/O run before its own synchronous work starts).
  app.addHook('preHandler', async (request) => {
    const entry = releases.get(request);
    if (entry === undefined) return;
    entry.handling = true;
    entry.endTurn = await gate.turn(request.principal!.userId);
    await yieldToLoop();
  });
  app.addHook('onSend', async (request, _reply, payload) => {
    finish(request);
    return payload;
  });
  app.addHook('onResponse', async (request) => {
    finish(request);
  });
  return gate;
}

import { randomUUID } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import { decodeJwt } from 'jose';
import type { RawData, WebSocket } from 'ws';
import { isServiceError } from '../../shared/errors.ts';
import { websocketCalls } from '../metrics.ts';
import { credentialAuthenticator, type Credential } from '../auth/authenticate.ts';
import type { Principal } from '../auth/principal.ts';
import type { CommandConnection } from '../commands/command.ts';
import { runCommand, type CommandRegistry } from '../commands/registry.ts';
import type { AppContext } from '../context.ts';
import { binaryFrameReply, handleRpcMessage, notificationText, refusedFrameReply, type Dispatch } from './json-rpc.ts';
import { ServiceError } from '../../shared/errors.ts';
import type { HeavyWorkGate, Release } from '../plugins/heavy-work.ts';

/** Close code when the credential expires or stops authenticating (revoked key, deleted account). */
const CLOSE_CREDENTIAL = 4001;

/** Past this many frames being answered at once, the socket stops reading until one finishes. */
const MAX_IN_FLIGHT = 16;
/** A client that leaves this much unread is closed (1008) rather than buffered without bound. */
const MAX_BUFFERED_BYTES = 64 * 1024 * 1024;
/** A peer that misses a ping for this long is gone; its socket (and any subscriptions) is dropped. */
const HEARTBEAT_MS = 30_000;
const MAX_TIMER_MS = 2 ** 31 - 1;

export interface ServeOptions {
  ctx: AppContext;
  registry: CommandRegistry;
  socket: WebSocket;
  credential: Credential;
  /** Who the handshake authenticated, for the log and the admission of large messages. */
  principal: Principal;
  /** The client address, for the admission of large messages. */
  address: string;
  /** Admits a large message per account and address; null: every message is served. */
  heavyWork: HeavyWorkGate | null;
  log: FastifyBaseLogger;
}

/** When a bearer token stops being valid, in epoch ms; API keys do not expire. */
function expiryOf(credential: Credential): number | undefined {
  if (credential.type !== 'bearer') return undefined;
  try {
    const { exp } = decodeJwt(credential.token);
    return typeof exp === 'number' ? exp * 1000 : undefined;
  } catch {
    return undefined;
  }
}

function byteLength(data: RawData): number {
  if (Array.isArray(data)) return data.reduce((sum, chunk) => sum + chunk.length, 0);
  return data.byteLength;
}

function textOf(data: RawData): string {
  if (Buffer.isBuffer(data)) return data.toString('utf8');
  if (Array.isArray(data)) return Buffer.concat(data).toString('utf8');
  return Buffer.from(data).toString('utf8');
}

/**
 * Serves JSON-RPC on an authenticated socket until it closes.
 *
 * Every frame authenticates again, as a REST request would, so a revoked key, a deleted account or
 * an expired token stops working at the next message: the frame's calls answer -32001
 * `unauthorized` and the socket closes with 4001. A bearer token's expiry also closes an idle
 * socket with 4001 at the moment it expires, so pushed notifications stop with it.
 */
export function serveConnection(options: ServeOptions): CommandConnection {
  const { ctx, registry, socket, credential } = options;
  const id = randomUUID();
  const log = options.log.child({ connection_id: id, user_id: options.principal.userId });
  const closeListeners: Array<() => void> = [];
  let inFlight = 0;
  let alive = true;
  let expiryTimer: NodeJS.Timeout | undefined;

  function send(text: string): void {
    if (socket.readyState !== socket.OPEN) return;
    if (socket.bufferedAmount > MAX_BUFFERED_BYTES) {
      socket.close(1008, 'The client is not reading its messages.');
      return;
    }
    socket.send(text);
  }

  const connection: CommandConnection = {
    id,
    notify: (method, params) => send(notificationText(method, params)),
    onClose(listener) {
      if (socket.readyState === socket.CLOSED) queueMicrotask(listener);
      else closeListeners.push(listener);
    },
  };

  const expiresAt = expiryOf(credential);
  function armExpiry(at: number): void {
    expiryTimer = setTimeout(
      () => {
        if (Date.now() >= at) socket.close(CLOSE_CREDENTIAL, 'The token expired.');
        else armExpiry(at);
      },
      Math.min(Math.max(at - Date.now(), 0), MAX_TIMER_MS),
    );
    expiryTimer.unref();
  }
  if (expiresAt !== undefined) armExpiry(expiresAt);

  const heartbeat = setInterval(() => {
    if (!alive) {
      socket.terminate();
      return;
    }
    alive = false;
    socket.ping();
  }, HEARTBEAT_MS);
  heartbeat.unref();
  socket.on('pong', () => {
    alive = true;
  });

  const onInternal = (error: unknown) => log.error({ err: error }, 'command failed');
  const authenticateFrame = credentialAuthenticator(ctx, credential);

  async function answer(text: string): Promise<void> {
    // Authenticated once per frame, lazily: a parse error costs no database round trip.
    let principal: Promise<Principal> | undefined;
    let refused = false;
    const dispatch: Dispatch = async (method, params) => {
      const label = registry.get(method) !== undefined ? method : 'unknown';
      try {
        principal ??= authenticateFrame();
        let caller: Principal;
        try {
          caller = await principal;
        } catch (error) {
          if (isServiceError(error) && error.code === 'unauthorized') refused = true;
          throw error;
        }
        const result = await runCommand(registry, ctx, caller, method, params, { connection });
        websocketCalls.inc({ method: label, outcome: 'ok' });
        return result;
      } catch (error) {
        websocketCalls.inc({ method: label, outcome: 'error' });
        throw error;
      }
    };
    const reply = await handleRpcMessage(text, dispatch, onInternal);
    if (reply !== undefined) send(reply);
    if (refused) socket.close(CLOSE_CREDENTIAL, 'The credential is no longer valid.');
  }

  socket.on('message', (data, isBinary) => {
    if (isBinary) {
      send(binaryFrameReply());
      return;
    }
    // A large message is heavy work, admitted like a large REST body before it is parsed; refused,
    // it is answered (id null: it was not read) and dropped.
    let release: Release | undefined;
    const bytes = byteLength(data);
    if (options.heavyWork?.isHeavy(bytes)) {
      const admitted = options.heavyWork.admit(options.principal.userId, options.address, bytes);
      if (admitted instanceof ServiceError) {
        send(refusedFrameReply(admitted));
        return;
      }
      release = admitted;
    }
    inFlight += 1;
    if (inFlight >= MAX_IN_FLIGHT) socket.pause();
    const text = textOf(data);
    // An admitted message is parsed and answered in its account's turn of heavy work.
    const work =
      release === undefined
        ? answer(text)
        : options.heavyWork!.turn(options.principal.userId).then(async (endTurn) => {
            try {
              await answer(text);
            } finally {
              endTurn();
            }
          });
    work.catch(onInternal).finally(() => {
      release?.();
      inFlight -= 1;
      if (socket.isPaused && inFlight < MAX_IN_FLIGHT) socket.resume();
    });
  });

  socket.on('close', () => {
    clearTimeout(expiryTimer);
    clearInterval(heartbeat);
    for (const listener of closeListeners.splice(0)) {
      try {
        listener();
      } catch (error) {
        log.error({ err: error }, 'close listener failed');
      }
    }
  });

  return connection;
}

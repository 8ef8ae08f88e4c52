import { randomUUID } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import type { Db } from '../../shared/db/db.ts';
import { ListenConnection } from '../../shared/db/listen-connection.ts';
import { ServiceError } from '../../shared/errors.ts';
import type { CommandConnection } from './connection.ts';
import { EVENTS_CHANNEL, eventRecord, lastEventId, readEvents, type EventStream } from '../../shared/events/store.ts';

/**
 * Live events: one LISTEN connection per control-plane process on `ws_events`, fanning each
 * announced event out to the WebSocket subscriptions of its session or execution.
 *
 * A NOTIFY (`<stream>:<owner id>:<event id>`, sent by `appendSessionEvent` /
 * `appendExecutionEvent` and delivered only when the writing transaction commits) marks that
 * owner as having news. The owner's subscriptions then read the owner's events above the last
 * id each was sent, in id order, and push them. Reading "everything after the last sent" rather
 * than "the event the NOTIFY names" means a lost connection, a failed read or a burst of
 * notifications costs nothing: the next read catches up, nothing is pushed twice, and events
 * always arrive in id order.
 */

/** Subscriptions one socket may hold at once; past it `subscribe` answers 409 `conflict`. */
export const MAX_SUBSCRIPTIONS_PER_CONNECTION = 100;
/** The LISTEN connection's `application_name`, so an operator can tell it from pool connections. */
export const LISTENER_APPLICATION_NAME = 'workspace-events-listener';
/** Events read per owner per round; an owner with more is read again at once. */
const READ_BATCH = 500;

export interface EventListenerOptions {
  db: Db;
  log: Pick<FastifyBaseLogger, 'warn' | 'error'>;
  /** First wait before reopening a lost LISTEN connection (doubling to 10 s while it fails). Default one second. */
  reconnectMs?: number;
  maxPerConnection?: number;
}

interface SubscribeInput {
  connection: CommandConnection;
  stream: EventStream;
  /** The session or execution id (already resolved and access-checked). */
  ownerId: string;
  /** The revision the subscription was made on; `unsubscribe` must name the same one. */
  revisionId: string;
}

export interface EventListener {
  /**
   * Subscribes the socket to the owner's events from now on and returns the subscription id.
   * Pushes are JSON-RPC notifications `event` with `{subscription, event}`. Ends by itself
   * when the socket closes.
   */
  subscribe(input: SubscribeInput): Promise<string>;
  /** Ends a subscription of this socket made on this revision; false when there is none. */
  unsubscribe(connectionId: string, subscriptionId: string, revisionId: string): boolean;
  /** How many subscriptions are live, on how many sockets (for operators and tests). */
  stats(): { subscriptions: number; connections: number };
  /** Ends every subscription and the LISTEN connection. */
  close(): Promise<void>;
}

interface Subscription {
  id: string;
  stream: EventStream;
  ownerId: string;
  revisionId: string;
  connection: CommandConnection;
  /** The highest event id pushed (at first, the newest id when the subscription began). */
  lastId: number;
}

/** Creates the process's listener. Nothing connects until the first subscription. */
export function createEventListener(options: EventListenerOptions): EventListener {
  const { db, log } = options;
  const reconnectMs = options.reconnectMs ?? 1000;
  const maxPerConnection = options.maxPerConnection ?? MAX_SUBSCRIPTIONS_PER_CONNECTION;

  const subscriptions = new Map<string, Subscription>();
  /** `<stream>:<owner id>` → its subscriptions. */
  const byOwner = new Map<string, Set<Subscription>>();
  /** Connection id → its subscription ids; an entry means its close hook is registered. */
  const byConnection = new Map<string, Set<string>>();

  let closed = false;

  const dirty = new Set<string>();
  let draining: Promise<void> | null = null;

  function ownerKey(stream: EventStream, ownerId: string): string {
    return `${stream}:${ownerId}`;
  }

  async function deliver(key: string): Promise<void> {
    const subs = byOwner.get(key);
    if (!subs || subs.size === 0) return;
    const [first] = subs;
    const from = Math.min(...[...subs].map((s) => s.lastId));
    const rows = await readEvents(db, first!.stream, first!.ownerId, from, READ_BATCH);
    for (const row of rows) {
      const event = eventRecord(row);
      for (const sub of subs) {
        // A subscription made or ended while the read ran: pushes only what it has not been sent.
        if (row.id <= sub.lastId || !subscriptions.has(sub.id)) continue;
        sub.lastId = row.id;
        sub.connection.notify('event', { subscription: sub.id, event });
      }
    }
    if (rows.length === READ_BATCH) dirty.add(key);
  }

  // One drain at a time, so one owner's pushes are never interleaved out of order.
  function kick(): void {
    if (draining || closed) return;
    draining = (async () => {
      while (dirty.size > 0 && !closed) {
        const key = dirty.values().next().value!;
        dirty.delete(key);
        try {
          await deliver(key);
        } catch (error) {
          // The subscriptions keep their lastId, so the owner's next NOTIFY resumes from there.
          log.error({ err: error, owner: key }, 'event push failed');
        }
      }
    })().finally(() => {
      draining = null;
      if (dirty.size > 0) kick();
    });
  }

  function onPayload(payload: string): void {
    const [stream, ownerId] = payload.split(':');
    if ((stream !== 'session' && stream !== 'execution') || ownerId === undefined) return;
    const key = ownerKey(stream, ownerId);
    if (!byOwner.has(key)) return;
    dirty.add(key);
    kick();
  }

  const listen = new ListenConnection({
    connection: db.pool.options,
    applicationName: LISTENER_APPLICATION_NAME,
    channel: EVENTS_CHANNEL,
    onNotification: onPayload,
    onError: (error) => log.warn({ err: error }, 'event listener lost or could not open its connection'),
    // Whatever was announced while disconnected is read now.
    onRestored: () => {
      for (const key of byOwner.keys()) dirty.add(key);
      kick();
    },
    // With nobody subscribed the next subscribe reopens it; nothing would be missed meanwhile.
    wanted: () => subscriptions.size > 0,
    retryMs: { min: reconnectMs, max: Math.max(reconnectMs, 10_000) },
  });

  function remove(sub: Subscription): void {
    subscriptions.delete(sub.id);
    const key = ownerKey(sub.stream, sub.ownerId);
    const subs = byOwner.get(key);
    subs?.delete(sub);
    if (subs?.size === 0) byOwner.delete(key);
    byConnection.get(sub.connection.id)?.delete(sub.id);
  }

  function refuseOverCap(connectionId: string): void {
    if ((byConnection.get(connectionId)?.size ?? 0) >= maxPerConnection) {
      throw new ServiceError(
        'conflict',
        `A socket may hold ${maxPerConnection} subscriptions at once; unsubscribe from one first.`,
      );
    }
  }

  return {
    async subscribe(input) {
      if (closed) throw new Error('the event listener is closed');
      refuseOverCap(input.connection.id);
      // LISTEN is in place before the starting point is read, so no event falls between the two.
      await listen.listening();
      const lastId = await lastEventId(db, input.stream, input.ownerId);
      // Checked again: other subscribes on the same socket may have finished during the awaits.
      refuseOverCap(input.connection.id);
      const sub: Subscription = {
        id: randomUUID(),
        stream: input.stream,
        ownerId: input.ownerId,
        revisionId: input.revisionId,
        connection: input.connection,
        lastId,
      };
      subscriptions.set(sub.id, sub);
      const key = ownerKey(sub.stream, sub.ownerId);
      let owned = byOwner.get(key);
      if (!owned) byOwner.set(key, (owned = new Set()));
      owned.add(sub);
      let mine = byConnection.get(input.connection.id);
      if (!mine) {
        byConnection.set(input.connection.id, (mine = new Set()));
        const connectionId = input.connection.id;
        input.connection.onClose(() => {
          for (const id of byConnection.get(connectionId) ?? []) {
            const gone = subscriptions.get(id);
            if (gone) remove(gone);
          }
          byConnection.delete(connectionId);
        });
      }
      mine.add(sub.id);
      return sub.id;
    },

    unsubscribe(connectionId, subscriptionId, revisionId) {
      const sub = subscriptions.get(subscriptionId);
      if (!sub || sub.connection.id !== connectionId || sub.revisionId !== revisionId) return false;
      remove(sub);
      return true;
    },

    stats() {
      return { subscriptions: subscriptions.size, connections: byConnection.size };
    },

    async close() {
      closed = true;
      subscriptions.clear();
      byOwner.clear();
      byConnection.clear();
      dirty.clear();
      await draining;
      await listen.close();
    },
  };
}

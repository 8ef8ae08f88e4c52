import { randomUUID } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import type { Db } from '../../shared/db/db.ts';
import { ListenConnection } from '../../shared/db/listen-connection.ts';
import { ServiceError } from '../../shared/errors.ts';
import type { CommandConnection } from './connection.ts';
import {
  EVENTS_CHANNEL,
  eventRecord,
  lastEventId,
  parseAnnouncement,
  readEvents,
  type CarriedEvents,
  type EventStream,
} from '../../shared/events/store.ts';

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
 *
 * The runner's announcements also carry the events themselves when they fit in a NOTIFY, with the
 * id of the owner's event before them (shared/events/store.ts, announceExecutionEvents). A
 * subscription that was last sent that event, or one of those carried, is sent the rest from the
 * payload at once: no read, so a push costs the NOTIFY and nothing more. Any other subscription
 * (it lags, or the events before were announced without being carried) is read as above. Pushes
 * are never queued per subscriber: a socket's sends are buffered by the socket (bounded in
 * serveConnection), so a slow reader delays nobody else.
 */

/** Subscriptions one socket may hold at once; past it `subscribe` answers 409 `conflict`. */
export const MAX_SUBSCRIPTIONS_PER_CONNECTION = 100;
/** The LISTEN connection's `application_name`, so an operator can tell it from pool connections. */
export const LISTENER_APPLICATION_NAME = 'workspace-events-listener';
/** Events read per owner per round; an owner with more is read again at once. */
const READ_BATCH = 500;
/**
 * Owners read at once (one read per owner at a time, so its pushes stay in order): a slow read of
 * one owner does not hold back the others, and the reads take at most this many pool connections.
 */
const MAX_READS = 4;

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
  /**
   * How many subscriptions are live, on how many sockets; and since the start, how many reads
   * of an owner's events were made and how many events were pushed from an announcement's
   * payload without one (for operators and tests).
   */
  stats(): { subscriptions: number; connections: number; reads: number; carried: number };
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

  /** Owners with news not yet read, oldest first; and those being read now. */
  const dirty = new Set<string>();
  const reading = new Map<string, Promise<void>>();
  let reads = 0;
  let carried = 0;

  function ownerKey(stream: EventStream, ownerId: string): string {
    return `${stream}:${ownerId}`;
  }

  function push(sub: Subscription, id: number, event: ReturnType<typeof eventRecord>): void {
    sub.lastId = id;
    sub.connection.notify('event', { subscription: sub.id, event });
  }

  async function deliver(key: string): Promise<void> {
    const subs = byOwner.get(key);
    if (!subs || subs.size === 0) return;
    const [first] = subs;
    const from = Math.min(...[...subs].map((s) => s.lastId));
    reads += 1;
    const rows = await readEvents(db, first!.stream, first!.ownerId, from, READ_BATCH);
    for (const row of rows) {
      const event = eventRecord(row);
      for (const sub of subs) {
        // A subscription made or ended while the read ran, or sent events from a payload
        // meanwhile: pushes only what it has not been sent.
        if (row.id <= sub.lastId || !subscriptions.has(sub.id)) continue;
        push(sub, row.id, event);
      }
    }
    if (rows.length === READ_BATCH) dirty.add(key);
  }

  // Starts reads of the owners with news, oldest first, at most MAX_READS at once and one per owner.
  function kick(): void {
    for (const key of dirty) {
      if (closed || reading.size >= MAX_READS) return;
      if (reading.has(key)) continue;
      dirty.delete(key);
      const read = deliver(key)
        .catch((error: unknown) => {
          // The subscriptions keep their lastId, so the owner's next NOTIFY resumes from there.
          log.error({ err: error, owner: key }, 'event push failed');
        })
        .finally(() => {
          reading.delete(key);
          kick();
        });
      reading.set(key, read);
    }
  }

  /**
   * Sends a subscription the carried events after the last one it was sent, when that one is
   * `prev` or among them; false when it needs a read instead.
   */
  function pushCarried(sub: Subscription, announced: CarriedEvents): boolean {
    const { prev, events } = announced;
    let start: number;
    if (sub.lastId === prev) start = 0;
    else {
      start = events.findIndex((event) => Number(event.id) === sub.lastId) + 1;
      if (start === 0) return false;
    }
    for (const event of events.slice(start)) {
      carried += 1;
      push(sub, Number(event.id), event);
    }
    return true;
  }

  function onPayload(payload: string): void {
    const announced = parseAnnouncement(payload);
    if (announced === null) return;
    const key = ownerKey(announced.stream, announced.ownerId);
    const subs = byOwner.get(key);
    if (!subs) return;
    let read = false;
    for (const sub of subs) {
      if (sub.lastId >= announced.newest) continue;
      const carried = announced.carried();
      if (carried && pushCarried(sub, carried)) continue;
      read = true;
    }
    if (read) {
      dirty.add(key);
      kick();
    }
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
      return { subscriptions: subscriptions.size, connections: byConnection.size, reads, carried };
    },

    async close() {
      closed = true;
      subscriptions.clear();
      byOwner.clear();
      byConnection.clear();
      dirty.clear();
      await Promise.all(reading.values());
      await listen.close();
    },
  };
}

/**
 * One PostgreSQL connection LISTENing on one channel, opened on demand and reopened after a loss:
 * the control plane's live events (control-plane/events/listener.ts) and a runner's cancels
 * (runner/engine/cancel-listener.ts). It is a connection of its own, never a pool's: a LISTEN
 * lives as long as its session, and a pooled connection would carry it to whoever takes it next.
 *
 * A NOTIFY sent while the connection is down is lost; `onRestored` says when that may have
 * happened, so the owner can catch up from its own records.
 */
import pg from 'pg';
import { Backoff } from '../backoff.ts';

export interface ListenConnectionOptions {
  /** How to reach the database (a pool's options or a connection string). */
  connection: pg.ClientConfig;
  /** Its `application_name`, so an operator can tell it from pool connections. */
  applicationName: string;
  /** The channel, or the channels, it LISTENs on. */
  channel: string | readonly string[];
  onNotification(payload: string, channel: string): void;
  /** The connection was lost, or opening it failed (the `listening()` that asked also rejects). */
  onError(error: unknown): void;
  /** LISTEN is in place again after a loss or a failed open: notifications of the gap were missed. */
  onRestored?(): void;
  /**
   * Whether to reopen it after a loss or a failed open, asked at that moment (default: always). A
   * listener nobody needs now stays closed until the next `listening()`.
   */
  wanted?(): boolean;
  /** Wait before reopening: `min`, doubled with each further try up to `max`, `min` again once open. */
  retryMs?: { min: number; max: number };
}

const DEFAULT_RETRY_MS = { min: 500, max: 10_000 };

/** A LISTEN connection, reopened with backoff. Nothing connects until the first `listening()`. */
export class ListenConnection {
  readonly #o: ListenConnectionOptions;
  #client: pg.Client | null = null;
  #connecting: Promise<void> | null = null;
  #timer: NodeJS.Timeout | undefined;
  readonly #retry: Backoff;
  #missed = false;
  #closed = false;

  constructor(options: ListenConnectionOptions) {
    this.#o = options;
    const retry = options.retryMs ?? DEFAULT_RETRY_MS;
    this.#retry = new Backoff({ minMs: retry.min, maxMs: retry.max });
  }

  /**
   * Resolves once LISTEN is in place, opening the connection when it is not open. Concurrent
   * callers share one attempt; a failed one rejects, and is tried again later when `wanted()`.
   */
  listening(): Promise<void> {
    if (this.#closed) return Promise.reject(new Error('the listener is closed'));
    this.#connecting ??= this.#open().catch((error: unknown) => {
      this.#connecting = null;
      if (!this.#closed) {
        this.#missed = true;
        this.#o.onError(error);
        this.#retryLater();
      }
      throw error;
    });
    return this.#connecting;
  }

  /** Closes the connection for good; a pending reopen is cancelled. */
  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#timer);
    await this.#connecting?.catch(() => {});
    const client = this.#client;
    this.#client = null;
    await client?.end().catch(() => {});
  }

  async #open(): Promise<void> {
    const client = new pg.Client({ ...this.#o.connection, application_name: this.#o.applicationName });
    const channels = typeof this.#o.channel === 'string' ? [this.#o.channel] : this.#o.channel;
    client.on('notification', (message) => {
      if (channels.includes(message.channel) && message.payload)
        this.#o.onNotification(message.payload, message.channel);
    });
    client.on('error', (error) => this.#lose(client, error));
    client.on('end', () => this.#lose(client, new Error(`the LISTEN connection of ${channels.join(', ')} ended`)));
    try {
      await client.connect();
      for (const channel of channels) await client.query(`LISTEN ${channel}`);
      if (this.#closed) throw new Error('the listener is closed');
    } catch (error) {
      await client.end().catch(() => {});
      throw error;
    }
    this.#client = client;
    this.#retry.reset();
    if (this.#missed) {
      this.#missed = false;
      this.#o.onRestored?.();
    }
  }

  #lose(lost: pg.Client, error: unknown): void {
    // Errors of a connection still opening reject its open instead; a replaced one is past.
    if (this.#client !== lost) return;
    this.#client = null;
    this.#connecting = null;
    this.#missed = true;
    lost.end().catch(() => {});
    if (this.#closed) return;
    this.#o.onError(error);
    this.#retryLater();
  }

  #retryLater(): void {
    if (this.#closed || this.#timer !== undefined || !(this.#o.wanted?.() ?? true)) return;
    const wait = this.#retry.next();
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      // A failure is reported, and scheduled again, by listening() itself.
      this.listening().catch(() => {});
    }, wait);
    this.#timer.unref();
  }
}

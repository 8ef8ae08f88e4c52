/**
 * Hears cancels at once. `cancel_execution` ends the row and announces the execution id on
 * `EXECUTION_CANCELLED_CHANNEL` at commit (shared/workflow/execution-end.ts); every runner listens,
 * and the one working on it stops its code within milliseconds instead of at its next lease
 * renewal (up to `renewSeconds`). The lease keeper still finds every loss by itself: a notification
 * missed while the connection was down costs only that delay.
 */
import pg from 'pg';
import { EXECUTION_CANCELLED_CHANNEL } from '../../shared/workflow/execution-end.ts';

export interface CancelListenerOptions {
  databaseUrl: string;
  onCancelled(executionId: string): void;
  onError(error: unknown): void;
}

const RETRY_MIN_MS = 500;
const RETRY_MAX_MS = 10_000;

/** One LISTEN connection, reconnected with backoff when it drops. Nothing happens until `start()`. */
export class CancelListener {
  readonly #o: CancelListenerOptions;
  #client: pg.Client | undefined;
  #stopped = false;
  #retryMs = RETRY_MIN_MS;
  #timer: NodeJS.Timeout | undefined;

  constructor(options: CancelListenerOptions) {
    this.#o = options;
  }

  start(): void {
    void this.#connect();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    const client = this.#client;
    this.#client = undefined;
    await client?.end().catch(() => {});
  }

  async #connect(): Promise<void> {
    if (this.#stopped) return;
    const client = new pg.Client({
      connectionString: this.#o.databaseUrl,
      application_name: 'workspace-runner-cancels',
    });
    this.#client = client;
    let failed = false;
    const fail = (error: unknown) => {
      if (failed) return;
      failed = true;
      if (this.#client === client) this.#client = undefined;
      client.end().catch(() => {});
      if (this.#stopped) return;
      this.#o.onError(error);
      this.#timer = setTimeout(() => void this.#connect(), this.#retryMs);
      this.#timer.unref();
      this.#retryMs = Math.min(this.#retryMs * 2, RETRY_MAX_MS);
    };
    client.on('error', fail);
    client.on('end', () => fail(new Error('the cancel listener connection ended')));
    client.on('notification', (message) => {
      if (message.channel === EXECUTION_CANCELLED_CHANNEL && message.payload) this.#o.onCancelled(message.payload);
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${EXECUTION_CANCELLED_CHANNEL}`);
      this.#retryMs = RETRY_MIN_MS;
    } catch (error) {
      fail(error);
    }
  }
}

/**
 * Hears cancels at once. `cancel_execution` ends the row and announces the execution id on
 * `EXECUTION_CANCELLED_CHANNEL` at commit (shared/workflow/execution-end.ts); every runner listens,
 * and the one working on it stops its code within milliseconds instead of at its next lease
 * renewal (up to `renewSeconds`). The lease keeper still finds every loss by itself: a notification
 * missed while the connection was down costs only that delay.
 */
import { ListenConnection } from '../../shared/db/listen-connection.ts';
import { EXECUTION_CANCELLED_CHANNEL } from '../../shared/workflow/execution-end.ts';

export interface CancelListenerOptions {
  databaseUrl: string;
  onCancelled(executionId: string): void;
  onError(error: unknown): void;
}

/** One LISTEN connection, reopened with backoff (0.5 s doubling to 10 s) when it drops. Nothing happens until `start()`. */
export class CancelListener {
  readonly #listen: ListenConnection;

  constructor(options: CancelListenerOptions) {
    this.#listen = new ListenConnection({
      connection: { connectionString: options.databaseUrl },
      applicationName: 'workspace-runner-cancels',
      channel: EXECUTION_CANCELLED_CHANNEL,
      onNotification: options.onCancelled,
      onError: options.onError,
    });
  }

  start(): void {
    // A failed open is reported through onError and tried again.
    this.#listen.listening().catch(() => {});
  }

  stop(): Promise<void> {
    return this.#listen.close();
  }
}

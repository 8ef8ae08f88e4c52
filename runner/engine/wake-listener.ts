/**
 * Hears what wakes the runner's intake, on one LISTEN connection of its own:
 *
 * - a create's announcement (`EXECUTION_CREATED_CHANNEL`, the execution's id, sent at commit by the
 *   create statement, shared/workflow/create-execution.ts): an idle runner claims the execution
 *   directly (WorkLoop.announce) instead of first fetching its wake-up job, one statement and one
 *   commit less between a create and its first node;
 * - pg-boss's own notification that a wake-up job was sent to the `executions` queue (the queue has
 *   `notify`): the intake fetches (WorkLoop.queued), after the announcement claim in flight if
 *   there is one. That claim completes the jobs of what it claims, so the fetch that follows a
 *   create's commit finds them done instead of racing the claim for them (a fetch that wins takes
 *   the job with a write and a commit of its own, and the claim then waits for that commit).
 *
 * This is why the runner's pg-boss does not LISTEN itself (shared/queue/queues.ts): its listener
 * would start that racing fetch. Wake-up jobs are sent for every execution all the same, so a
 * notification missed while the connection was down costs at most a poll (`pollSeconds`), and the
 * intake fetches once as soon as LISTEN is back in place.
 */
import { createHash } from 'node:crypto';
import { ListenConnection } from '../../shared/db/listen-connection.ts';
import { EXECUTION_CREATED_CHANNEL } from '../../shared/queue/execution-jobs.ts';
import { QUEUES } from '../../shared/queue/queues.ts';

/**
 * pg-boss's NOTIFY channel for its schema `pgboss`: `'pgboss_' || left(encode(sha224(schema), 'hex'),
 * 24)` (pg-boss plans.notifyChannelSql). test/runner/work-loop.test.ts ("hears pg-boss's
 * notification") fails if it ever differs: the runner would then wake only at its polls.
 */
const PGBOSS_CHANNEL = `pgboss_${createHash('sha224').update('pgboss').digest('hex').slice(0, 24)}`;

export interface WakeListenerOptions {
  databaseUrl: string;
  /** A create announced this execution. */
  onCreated(executionId: string): void;
  /** A wake-up job was sent to the `executions` queue, or notifications may have been missed. */
  onQueued(): void;
  onError(error: unknown): void;
}

/** One LISTEN connection, reopened with backoff when it drops. Nothing happens until `start()`. */
export class WakeListener {
  readonly #listen: ListenConnection;

  constructor(options: WakeListenerOptions) {
    this.#listen = new ListenConnection({
      connection: { connectionString: options.databaseUrl },
      applicationName: 'workspace-runner-wake-ups',
      channel: [EXECUTION_CREATED_CHANNEL, PGBOSS_CHANNEL],
      onNotification: (payload, channel) => {
        if (channel === EXECUTION_CREATED_CHANNEL) options.onCreated(payload);
        else if (payload === QUEUES.executions.name) options.onQueued();
      },
      onRestored: options.onQueued,
      onError: options.onError,
    });
  }

  /** Resolves once LISTEN is in place (or its first attempt failed: it is tried again, reported through onError). */
  start(): Promise<void> {
    return this.#listen.listening().catch(() => {});
  }

  stop(): Promise<void> {
    return this.#listen.close();
  }
}

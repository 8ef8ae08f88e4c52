import { PgBoss, type ConstructorOptions, type Queue } from 'pg-boss';

/**
 * Every pg-boss queue the service uses, with its options. Producers (the control plane) and
 * consumers (runners) both create them at start, so neither depends on the other starting first.
 * `notify` wakes a listening runner the moment a job is sent instead of at its next poll.
 */
export const QUEUES = {
  /** Work on one execution: run its next node runs (workflow engine). */
  executions: { name: 'executions', notify: true },
  /**
   * One fire of a schedule: create the execution in its target session (scheduler). Sent delayed
   * to its due time, which NOTIFY cannot announce (the fire loop polls instead); kept waiting as
   * long as a schedule can go between fires (29 February: 8 years across 2100); a done fire is
   * of no use after an hour (the run is in schedule_runs).
   */
  scheduleFires: {
    name: 'schedule-fires',
    notify: false,
    retentionSeconds: 10 * 366 * 86_400,
    deleteAfterSeconds: 3_600,
    retryLimit: 5,
    retryDelay: 1,
  },
} as const satisfies Record<string, Queue>;

/**
 * Which process a pg-boss instance serves: runners also run pg-boss maintenance and cron; a
 * runner's worker thread only sends (a sleep's wake-up, a hand-back) and touches no schema.
 */
export type BossRole = 'control-plane' | 'runner' | 'sender';

/**
 * A pg-boss instance on `connectionString`; call `start()` then `createQueues()`. pg-boss installs
 * or upgrades its own schema (`pgboss`) at start, under its own advisory lock.
 */
export function createBoss(connectionString: string, role: BossRole): PgBoss {
  const options: Record<BossRole, ConstructorOptions> = {
    // No LISTEN of its own: the runner's wake-up listener hears pg-boss's notifications together with
    // the creates' announcements and orders the fetch after the claim of those (runner/engine/wake-listener.ts).
    runner: { connectionString, application_name: 'workspace-runner-queue', max: 5 },
    // The control plane only sends and reads counts: maintenance and cron stay with the runners.
    'control-plane': {
      connectionString,
      application_name: 'workspace-control-plane-queue',
      max: 5,
      supervise: false,
      schedule: false,
    },
    sender: {
      connectionString,
      application_name: 'workspace-runner-worker-queue',
      max: 1,
      supervise: false,
      schedule: false,
      migrate: false,
    },
  };
  return new PgBoss(options[role]);
}

/** Creates every queue of `QUEUES` that does not exist yet (idempotent). */
export async function createQueues(boss: PgBoss): Promise<void> {
  for (const { name, ...options } of Object.values(QUEUES)) await boss.createQueue(name, options);
}

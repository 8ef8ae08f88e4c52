import { randomUUID } from 'node:crypto';
import type { Queryable } from './db/db.ts';
import { startPeriodic } from './periodic.ts';

/** How often a runner stamps `heartbeat_at`. */
const HEARTBEAT_SECONDS = 5;
/** A runner not heard from for this long is reported dead (three missed heartbeats). */
export const ALIVE_WITHIN_SECONDS = 3 * HEARTBEAT_SECONDS;
/** Rows of runners silent for this long are deleted when another runner registers. */
const FORGET_AFTER_DAYS = 7;

export interface RunnerIdentity {
  host: string;
  pid: number;
  version: string;
}

export interface RunnerRow extends RunnerIdentity {
  id: string;
  started_at: string;
  heartbeat_at: string;
  stopped_at: string | null;
  alive: boolean;
  /** What the runner's sandbox reported with its last heartbeat (runner/messages.ts SandboxSnapshot). */
  sandbox: unknown;
}

export interface Registration {
  readonly id: string;
  /** Stops heartbeating and stamps `stopped_at`: the runner left cleanly. */
  stop(): Promise<void>;
}

/**
 * Registers this runner in `runners` and heartbeats every `HEARTBEAT_SECONDS` until `stop()`.
 * A runner that dies without `stop()` keeps `stopped_at` null and simply stops being `alive`.
 * A failed heartbeat (database restarting) is reported to `onError` and retried on the next beat.
 */
export async function registerRunner(
  db: Queryable,
  identity: RunnerIdentity,
  onError: (error: unknown) => void,
  /** Read at every heartbeat and stored with it: the runner's sandbox snapshot, for the ops API. */
  report: () => unknown = () => null,
): Promise<Registration> {
  const id = randomUUID();
  await db.query(`DELETE FROM runners WHERE heartbeat_at < now() - make_interval(days => $1::int)`, [
    FORGET_AFTER_DAYS,
  ]);
  const insert = () =>
    db.query(
      `INSERT INTO runners (id, host, pid, version) VALUES ($1::uuid, $2::text, $3::int, $4::text)
     ON CONFLICT (id) DO UPDATE SET heartbeat_at = now()`,
      [id, identity.host, identity.pid, identity.version],
    );
  await insert();

  const beat = async () => {
    const { rowCount } = await db.query(
      'UPDATE runners SET heartbeat_at = now(), sandbox = $2::jsonb WHERE id = $1::uuid',
      [id, JSON.stringify(report() ?? null)],
    );
    // The row was removed (an operator cleaning up): put it back rather than run unlisted.
    if (!rowCount) await insert();
  };
  const heartbeat = startPeriodic(beat, { everyMs: HEARTBEAT_SECONDS * 1000, onError });

  return {
    id,
    async stop() {
      await heartbeat.stop();
      await db.query('UPDATE runners SET stopped_at = now(), heartbeat_at = now() WHERE id = $1::uuid', [id]);
    },
  };
}

/** Every registered runner, newest first, with `alive` computed from its heartbeat. */
export async function listRunners(db: Queryable): Promise<RunnerRow[]> {
  const { rows } = await db.query<RunnerRow>(
    `SELECT id, host, pid, version, started_at, heartbeat_at, stopped_at, sandbox,
            stopped_at IS NULL AND heartbeat_at > now() - make_interval(secs => $1::int) AS alive
       FROM runners ORDER BY started_at DESC, id`,
    [ALIVE_WITHIN_SECONDS],
  );
  return rows;
}

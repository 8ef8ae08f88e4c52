import type { Queryable } from '../../shared/db/db.ts';
import { removeOneDeleting, removeSession } from '../sql/sessions.ts';

/**
 * Delete Session frees the session's quota slot in the request (the session enters `deleting`)
 * and removes the rows afterwards, so the request does not wait on the cascade through
 * everything the session holds. Two things do the removing: `createSessionRemoval`, which the app
 * uses right after each Delete Session, and the reaper (`startSessionReaper`), which finishes
 * sessions a crash or a shutdown left in `deleting`.
 */

/** Told about a removal that failed; the session stays `deleting` and the reaper retries it. */
type RemovalErrorHandler = (error: unknown) => void;

/** One reaper pass removes at most this many sessions, so a backlog cannot hold a pass forever. */
const MAX_PER_PASS = 1000;

/**
 * Removes every session left in `deleting` (up to `max`), one per statement so each cascade is
 * its own short transaction. Sessions another removal is working on are skipped. Returns how
 * many it removed.
 */
export async function reapDeletingSessions(db: Queryable, max = MAX_PER_PASS): Promise<number> {
  let removed = 0;
  while (removed < max && (await removeOneDeleting(db)) !== undefined) removed += 1;
  return removed;
}

export interface SessionReaperOptions {
  /** Between passes; the first pass runs at once. Default one minute. */
  intervalMs?: number;
  onError: RemovalErrorHandler;
}

export interface SessionReaper {
  /** Stops the interval and waits for a pass in progress. */
  stop(): Promise<void>;
}

/** Starts reaping sessions left in `deleting`: now, then every `intervalMs`. */
export function startSessionReaper(db: Queryable, options: SessionReaperOptions): SessionReaper {
  let running: Promise<void> = Promise.resolve();
  let stopped = false;
  const pass = () => {
    if (stopped) return;
    // Passes never overlap: a slow pass delays the next rather than racing it.
    running = running.then(() => reapDeletingSessions(db).then(() => undefined, options.onError));
  };
  const timer = setInterval(pass, options.intervalMs ?? 60_000);
  timer.unref();
  pass();
  return {
    async stop() {
      stopped = true;
      clearInterval(timer);
      await running;
    },
  };
}

export interface SessionRemovalOptions {
  /**
   * How long after Delete Session's response the rows go. Live subscribers fetch each event by
   * id after its NOTIFY, so the session's own `session.deleting` event must outlive the
   * response by a moment to reach them. Default one second.
   */
  delayMs?: number;
  onError: RemovalErrorHandler;
}

/** Background removal of the sessions this process moved to `deleting`. */
export interface SessionRemoval {
  /** Removes the session (which must already be `deleting`) shortly after the current request. */
  schedule(sessionId: string): void;
  /** Cancels removals not yet started (the reaper finishes them) and waits for those running. */
  close(): Promise<void>;
}

/** Creates the app's background session removal. */
export function createSessionRemoval(db: Queryable, options: SessionRemovalOptions): SessionRemoval {
  const timers = new Map<string, NodeJS.Timeout>();
  const running = new Set<Promise<void>>();
  let closed = false;
  return {
    schedule(sessionId) {
      if (closed || timers.has(sessionId)) return;
      const timer = setTimeout(() => {
        timers.delete(sessionId);
        const removal = removeSession(db, sessionId).then(() => undefined, options.onError);
        running.add(removal);
        void removal.finally(() => running.delete(removal));
      }, options.delayMs ?? 1000);
      // Never what keeps a process alive: a removal cut short is the reaper's to finish.
      timer.unref();
      timers.set(sessionId, timer);
    },
    async close() {
      closed = true;
      for (const timer of timers.values()) clearTimeout(timer);
      timers.clear();
      await Promise.all(running);
    },
  };
}

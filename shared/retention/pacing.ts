import { setTimeout as sleep } from 'node:timers/promises';

/**
 * The share of time a retention sweep spends in its statements by default (`RETENTION_SWEEP_DUTY_PERCENT`):
 * after each batch it leaves the database to everyone else for as long again.
 */
export const DEFAULT_SWEEP_DUTY_PERCENT = 50;

/** How a sweep runs its batches: their size, its duty cycle, its stop signal. */
export interface Batching {
  batchSize: number;
  dutyPercent: number;
  signal: AbortSignal | undefined;
  onPause: ((ms: number) => void) | undefined;
}

/**
 * The pause after a batch whose statement took `batchMs`, so that batches take `dutyPercent` of
 * the sweep's time: a batch slowed by a busy server (other tenants' work, a cold cache) is
 * followed by a longer pause, so the sweep yields more exactly when the server has less to spare.
 * 100 is no pause.
 */
export function pauseAfterBatch(batchMs: number, dutyPercent: number): number {
  if (!(dutyPercent > 0 && dutyPercent <= 100)) throw new RangeError('the duty must be a percentage in (0, 100]');
  if (!(batchMs > 0)) return 0;
  return (batchMs * (100 - dutyPercent)) / dutyPercent;
}

/**
 * Runs `batch` until it says it was the last, pausing after each as `pauseAfterBatch` says (and
 * telling `onPause`, when given, how long), checking `signal` before each batch and during each
 * pause: an aborted sweep throws the signal's reason, keeping what its batches removed.
 */
export async function pacedBatches(
  batch: () => Promise<{ last: boolean }>,
  options: Pick<Batching, 'dutyPercent' | 'signal' | 'onPause'>,
): Promise<void> {
  for (;;) {
    options.signal?.throwIfAborted();
    const started = performance.now();
    const { last } = await batch();
    if (last) return;
    const pauseMs = pauseAfterBatch(performance.now() - started, options.dutyPercent);
    if (pauseMs <= 0) continue;
    options.onPause?.(pauseMs);
    try {
      await sleep(pauseMs, undefined, options.signal ? { signal: options.signal } : {});
    } catch (error) {
      options.signal?.throwIfAborted();
      throw error;
    }
  }
}

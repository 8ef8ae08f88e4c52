/** A repeating task started by `startPeriodic`. */
export interface Periodic {
  /** Stops scheduling and waits for a run in progress to settle. */
  stop(): Promise<void>;
}

export interface PeriodicOptions {
  /** Delay before each run after the first; a function for jitter. */
  everyMs: number | (() => number);
  /** Delay before the first run; `everyMs` when left out. */
  firstMs?: number;
  /** Where a failed run's error goes; the task keeps running on schedule. */
  onError: (error: unknown) => void;
}

/**
 * Runs `task` repeatedly. Each run is scheduled after the previous one settled, so a slow
 * database never stacks runs, and `stop` never returns while a run is still writing.
 */
export function startPeriodic(task: () => Promise<unknown>, options: PeriodicOptions): Periodic {
  const delay = () => (typeof options.everyMs === 'function' ? options.everyMs() : options.everyMs);
  let running = true;
  let timer: NodeJS.Timeout | undefined;
  let current: Promise<unknown> = Promise.resolve();
  const schedule = (ms: number) => {
    timer = setTimeout(() => {
      current = task()
        .catch(options.onError)
        .finally(() => {
          if (running) schedule(delay());
        });
    }, ms);
  };
  schedule(options.firstMs ?? delay());
  return {
    async stop() {
      running = false;
      clearTimeout(timer);
      await current;
    },
  };
}

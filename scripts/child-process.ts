import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { Backoff } from '../shared/backoff.ts';

/** First restart delay; doubled after each quick death up to `MAX_BACKOFF_MS`. */
const MIN_BACKOFF_MS = 500;
const MAX_BACKOFF_MS = 30_000;
/** A child that ran this long before dying is restarted at once again (backoff reset). */
const STABLE_AFTER_MS = 30_000;

export interface ChildSpec {
  /** Shown in the supervisor's log lines. */
  name: string;
  /** Arguments to `process.execPath`: the children run on the same Node as the supervisor. */
  args: string[];
  env: NodeJS.ProcessEnv;
  log: (message: string, fields?: Record<string, unknown>) => void;
}

export interface SupervisedChild {
  readonly name: string;
  /** The running process's pid, undefined while it waits for a restart. */
  readonly pid: number | undefined;
  /** Stops restarting; sends SIGTERM, then SIGKILL after `graceMs`; resolves once it exited. */
  stop(graceMs: number): Promise<void>;
}

/**
 * Runs `spec` and restarts it whenever it exits without being asked to, with exponential backoff
 * so a child that cannot start (database down, port taken) does not spin.
 */
export function superviseChild(spec: ChildSpec): SupervisedChild {
  let child: ChildProcess | undefined;
  let stopping = false;
  const restarts = new Backoff({ minMs: MIN_BACKOFF_MS, maxMs: MAX_BACKOFF_MS });
  let restartTimer: NodeJS.Timeout | undefined;

  const run = () => {
    const startedAt = Date.now();
    // The IPC channel is how the child notices the supervisor died (shared/shutdown.ts).
    const proc = spawn(process.execPath, spec.args, { env: spec.env, stdio: ['inherit', 'inherit', 'inherit', 'ipc'] });
    child = proc;
    proc.on('error', (error) => spec.log(`${spec.name} could not be spawned`, { err: error }));
    proc.on('exit', (code, signal) => {
      child = undefined;
      if (stopping) return;
      if (Date.now() - startedAt >= STABLE_AFTER_MS) restarts.reset();
      const wait = restarts.next();
      spec.log(`${spec.name} exited, restarting`, { code, signal, restart_in_ms: wait });
      restartTimer = setTimeout(run, wait);
    });
    spec.log(`${spec.name} started`, { child_pid: proc.pid });
  };
  run();

  return {
    name: spec.name,
    get pid() {
      return child?.pid;
    },
    async stop(graceMs) {
      stopping = true;
      clearTimeout(restartTimer);
      const proc = child;
      if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
      const exited = once(proc, 'exit');
      proc.kill('SIGTERM');
      const timer = setTimeout(() => {
        spec.log(`${spec.name} did not stop within ${graceMs} ms, killing it`);
        proc.kill('SIGKILL');
      }, graceMs);
      await exited;
      clearTimeout(timer);
    },
  };
}

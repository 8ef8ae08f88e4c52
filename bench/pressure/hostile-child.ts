/**
 * The parent's side of a hostile tenant's process (bench/pressure-hostile.ts): one scenario of
 * bench/pressure/ prepared and run in a child of the bench, so that the quiet tenant's timer in
 * the bench's own event loop is not also the hostile tenant's sender (undici copying and writing
 * a hundred 5 MB bodies at once took most of that loop and showed as the service's delay).
 */
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { Account } from '../client.ts';

/** Messages to the hostile process, in this order. */
export type FromParent =
  | { type: 'prepare'; file: string; apiUrl: string; databaseUrl: string; hostile: Account }
  | { type: 'run' }
  | { type: 'stop' };

/** Messages from the hostile process. */
export type ToParent = { type: 'prepared' } | { type: 'failed'; error: string } | { type: 'ended'; error?: string };

export interface HostileProcess {
  /** Starts pressing (after `prepare` resolved). */
  run(): void;
  /**
   * Resolves once the run settled, with its error if it failed: at once when it failed before
   * `stop`, else after `stop`.
   */
  readonly ended: Promise<Error | null>;
  /** Asks the run to stop; `ended` resolves once every request it started settled. */
  stop(): void;
  /** Kills the process if it still runs (a failed prepare). */
  kill(): void;
}

/**
 * Forks the hostile process for the scenario of `bench/pressure/<file>.ts` and resolves once its
 * `prepare` is done (untimed fixtures). Rejects with the scenario's error when it could not
 * prepare; the process is then gone.
 */
export async function startHostile(
  file: string,
  system: { apiUrl: string; databaseUrl: string },
  hostile: Account,
): Promise<HostileProcess> {
  const child: ChildProcess = fork(fileURLToPath(new URL('../pressure-hostile.ts', import.meta.url)), [], {
    execArgv: ['--no-node-snapshot'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const exited = new Promise<Error>((resolve) =>
    child.once('exit', (code, signal) => resolve(new Error(`hostile process exited (${signal ?? code})`))),
  );
  const next = (type: ToParent['type'] | 'prepared-or-failed'): Promise<ToParent | Error> =>
    Promise.race([
      new Promise<ToParent>((resolve) => {
        const onMessage = (message: ToParent) => {
          if (message.type === type || (type === 'prepared-or-failed' && message.type !== 'ended')) {
            child.off('message', onMessage);
            resolve(message);
          }
        };
        child.on('message', onMessage);
      }),
      exited,
    ]);
  const kill = () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  };
  const prepared = next('prepared-or-failed');
  child.send({
    type: 'prepare',
    file,
    apiUrl: system.apiUrl,
    databaseUrl: system.databaseUrl,
    hostile,
  } satisfies FromParent);
  const answer = await prepared;
  if (answer instanceof Error || answer.type !== 'prepared') {
    kill();
    throw answer instanceof Error ? answer : new Error(answer.type === 'failed' ? answer.error : answer.type);
  }
  const ended = next('ended').then(async (message) => {
    // The process exits once it answered; wait for it, so the next row starts without it.
    await exited;
    if (message instanceof Error) return message;
    return message.type === 'ended' && message.error !== undefined ? new Error(message.error) : null;
  });
  return {
    run: () => child.send({ type: 'run' } satisfies FromParent),
    ended,
    stop: () => {
      if (child.connected) child.send({ type: 'stop' } satisfies FromParent);
    },
    kill,
  };
}

import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';

/** A process a test started: the process, its exit, and the last lines of its output. */
export interface Launch {
  proc: ChildProcess;
  exited: Promise<[number | null, NodeJS.Signals | null]>;
  /** The last 40 lines of its output (stdout and stderr), for failure messages. */
  output: string[];
}

/**
 * Starts the service's processes as npm does (`node --no-node-snapshot <entry>`), remembering
 * each, so a test's teardown can stop whatever an assertion that failed half-way left running.
 */
export class Launcher {
  readonly #launches: Launch[] = [];

  /** Starts `entry` (an absolute path) with `env`. */
  launch(entry: string, env: NodeJS.ProcessEnv): Launch {
    const proc = spawn(process.execPath, ['--no-node-snapshot', entry], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    const output: string[] = [];
    const keep = (chunk: Buffer) => {
      output.push(...chunk.toString().trimEnd().split('\n'));
      output.splice(0, output.length - 40);
    };
    proc.stdout!.on('data', keep);
    proc.stderr!.on('data', keep);
    const launch = { proc, output, exited: once(proc, 'exit') as Launch['exited'] };
    this.#launches.push(launch);
    return launch;
  }

  /** Sends `signal` to every launch still running and waits for each to exit. */
  async stopAll(signal: NodeJS.Signals): Promise<void> {
    for (const { proc, exited } of this.#launches) {
      if (proc.exitCode === null && proc.signalCode === null) {
        proc.kill(signal);
        await exited;
      }
    }
  }
}

/**
 * Runs ONNX models in a child process of this one (model-host-child.ts), which caches sessions per
 * model revision. A run that outlasts its bound is stopped the only way ONNX Runtime can be
 * stopped: the child is killed and a new one starts. The run past its bound fails with
 * `model_timeout`; any other run that was in the same child is sent again to the new one, once,
 * its bound counted anew (a run has no effect but its answer, so running it again is safe). The
 * control plane keeps one host for `run_model`, each runner engine thread one for `onnx.run`;
 * neither starts a process before its first model run.
 *
 * Runs are sent to the child in turns (shared/fair-queue.ts): two at once, one per organization,
 * organizations taking turns, at most 64 of one organization waiting (more answer `model_busy`).
 * An organization's heavy runs so delay another's by at most one run, and a run stopped at its
 * bound costs at most one other organization's run a second start, never its answer.
 *
 * Why a second start rather than a process per organization: a host is ONNX Runtime and a cache
 * of sessions (hundreds of MiB); one per organization with runs in flight would multiply that by
 * the organizations, while the turns already let at most one other run share a child.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { HostReply, HostRequest } from './model-host-messages.ts';
import type { JsonTensor } from './tensors.ts';
import { s3Env, type S3Settings } from './s3-settings.ts';
import { FairQueue, QueueFullError } from '../fair-queue.ts';

const CHILD = fileURLToPath(new URL('./model-host-child.ts', import.meta.url));

interface ModelRunError {
  code: 'model_timeout' | 'model_run_failed' | 'model_unavailable' | string;
  message: string;
}

export type ModelRunResult = { outputs: Record<string, JsonTensor> } | { error: ModelRunError };

export interface ModelHostOptions {
  databaseUrl: string;
  /** The S3 store of model bytes, if the models are there (MODEL_STORE=s3). */
  s3?: S3Settings | null;
  /** Bytes of memory the child's cached sessions may hold (least recently used out first). Default 512 MiB. */
  cacheBytes?: number;
  /**
   * The child's nice value (shared/priority.ts), raised on all its threads before it loads a
   * model. Absent: the child keeps the one it inherits (a runner's engine thread's).
   */
  nice?: number;
}

/** Most bytes a run's outputs may take as JSON: a code node's output bound (sandbox/messages.ts). */
const MODEL_OUTPUT_BYTES = 5 * 1024 * 1024;

/** Runs of the host at once, all organizations together and per organization, and waiting per organization. */
const TURNS = { concurrency: 2, perKey: 1, maxWaitingPerKey: 64 };

interface Waiting {
  resolve: (result: ModelRunResult) => void;
  timer: NodeJS.Timeout;
  /** The child the run was sent to: its death fails only its own runs. */
  child: ChildProcess;
  /** What was sent, and its bound: to send it again when the child is killed for another run. */
  request: HostRequest;
  timeoutMs: number;
  /** Sent again once already: a second loss of its child fails it. */
  resent: boolean;
}

export class ModelHost {
  readonly #options: ModelHostOptions;
  #child: ChildProcess | null = null;
  readonly #waiting = new Map<number, Waiting>();
  #nextId = 1;
  #closed = false;
  readonly #turns = new FairQueue(TURNS);

  constructor(options: ModelHostOptions) {
    this.#options = options;
  }

  /**
   * Runs the model of `revisionId` (as hashed `sha256`) on `inputs` in `orgId`'s turn, stopped
   * after `timeoutMs` of running (the wait for its turn is not counted).
   */
  async run(
    orgId: string,
    request: Omit<HostRequest, 'id' | 'maxOutputBytes'>,
    timeoutMs: number,
  ): Promise<ModelRunResult> {
    try {
      return await this.#turns.run(orgId, () => this.#runNow(request, timeoutMs));
    } catch (error) {
      if (!(error instanceof QueueFullError)) throw error;
      return {
        error: {
          code: 'model_busy',
          message: `${error.waiting} model runs of this organization are already waiting; try again shortly.`,
        },
      };
    }
  }

  #runNow(request: Omit<HostRequest, 'id' | 'maxOutputBytes'>, timeoutMs: number): Promise<ModelRunResult> {
    if (this.#closed)
      return Promise.resolve({ error: { code: 'model_unavailable', message: 'The model host is shutting down.' } });
    const id = this.#nextId++;
    return new Promise((resolve) => {
      this.#send(id, {
        resolve,
        request: { ...request, id, maxOutputBytes: MODEL_OUTPUT_BYTES },
        timeoutMs,
        resent: false,
      });
    });
  }

  /** Sends run `id` to the current child (started if need be), its bound counted from now. */
  #send(id: number, run: Omit<Waiting, 'child' | 'timer'>): void {
    const child = this.#spawn();
    const timer = setTimeout(() => this.#stop(id, child), run.timeoutMs);
    this.#waiting.set(id, { ...run, child, timer });
    child.send(run.request);
  }

  /**
   * Run `id` outlasted its bound in `child`. The runtime cannot abandon a run: the process goes,
   * with every run in it. The run fails with `model_timeout`; the others in the child were stopped
   * for it, not for themselves, and are sent to a new child (once each).
   */
  #stop(id: number, child: ChildProcess): void {
    const timedOut = this.#waiting.get(id);
    if (timedOut === undefined) return;
    this.#waiting.delete(id);
    if (this.#child === child) this.#child = null;
    child.kill('SIGKILL');
    timedOut.resolve({
      error: {
        code: 'model_timeout',
        message: `The model ran for more than ${Math.round(timedOut.timeoutMs / 1000)} s and was stopped.`,
      },
    });
    for (const [other, waiting] of [...this.#waiting]) {
      if (waiting.child !== child) continue;
      clearTimeout(waiting.timer);
      this.#waiting.delete(other);
      if (waiting.resent || this.#closed) {
        waiting.resolve({
          error: {
            code: 'model_run_failed',
            message:
              "The model host process was stopped twice during this run, each time for another run's time bound.",
          },
        });
        continue;
      }
      this.#send(other, { ...waiting, resent: true });
    }
  }

  /** Kills the child; runs in flight fail. */
  close(): void {
    this.#closed = true;
    this.#fail(null, 'The model host is shutting down.', 'model_unavailable');
    this.#child?.kill('SIGKILL');
    this.#child = null;
  }

  #spawn(): ChildProcess {
    if (this.#child !== null && this.#child.connected) return this.#child;
    const child = fork(CHILD, [], {
      env: {
        ...process.env,
        ...s3Env(this.#options.s3 ?? null),
        DATABASE_URL: this.#options.databaseUrl,
        MODEL_CACHE_BYTES: String(this.#options.cacheBytes ?? 512 * 1024 * 1024),
        MODEL_HOST_NICE: String(this.#options.nice ?? 0),
        // Buffers of 128 KiB or more (tensors) are mapped on their own and given back to the
        // system when freed. glibc otherwise raises this threshold after the first such free and
        // keeps later buffers in its heap, so the host held the peak of its largest runs for good.
        MALLOC_MMAP_THRESHOLD_: '131072',
      },
      // The child collects after a run with large outputs (model-host-child.ts).
      execArgv: ['--expose-gc'],
      stdio: ['ignore', 'ignore', 'ignore', 'ipc'],
      serialization: 'advanced',
    });
    child.on('message', (reply: HostReply) => {
      const waiting = this.#waiting.get(reply.id);
      if (!waiting) return;
      this.#waiting.delete(reply.id);
      clearTimeout(waiting.timer);
      waiting.resolve('error' in reply ? { error: reply.error } : { outputs: reply.outputs });
    });
    child.on('exit', () => {
      if (this.#child === child) this.#child = null;
      this.#fail(child, 'The model host process stopped while running the model.', 'model_run_failed');
    });
    child.on('error', () => {});
    this.#child = child;
    return child;
  }

  /** Fails the runs sent to `child` (all runs when null). */
  #fail(child: ChildProcess | null, message: string, code: string): void {
    for (const [id, waiting] of this.#waiting) {
      if (child !== null && waiting.child !== child) continue;
      clearTimeout(waiting.timer);
      waiting.resolve({ error: { code, message } });
      this.#waiting.delete(id);
    }
  }
}

/**
 * What crosses between a runner's engine thread and its sandbox child process
 * (sandbox/sandbox-process.ts, sandbox/sandbox-child.ts). JSON over the IPC channel, sent in
 * arrays: messages posted in one event-loop turn leave as one write. Each side checks the shape of
 * what it receives; the parent trusts nothing the child says beyond these shapes (the child runs
 * hostile code), and answers only calls of runs it sent.
 */
import type { LimitObject } from '../shared/errors.ts';
import type { IsolatePoolOptions, PoolStats } from './isolate-pool.ts';
import type { CodeRequest, CodeResult, LogLevel } from './messages.ts';

/** Pool options the child is started with (JSON-able). */
export type ChildPoolOptions = Omit<IsolatePoolOptions, 'vetted' | 'onDegraded' | 'bounds'> & {
  bounds?: IsolatePoolOptions['bounds'];
};

/** A host call's refusal as the code must see it (a ServiceError's code, message and limit); null: an opaque failure. */
export interface CallRefusal {
  code: string;
  message: string;
  limit?: LimitObject;
}

export type ToChild =
  | { t: 'run'; id: number; request: CodeRequest }
  | { t: 'abort'; id: number }
  | { t: 'retire'; id: number }
  | { t: 'answer'; id: number; call: number; ok: true; value: unknown }
  | { t: 'answer'; id: number; call: number; ok: false; error: CallRefusal | null };

export type FromChild =
  | { t: 'ready' }
  | { t: 'result'; id: number; result: CodeResult }
  | { t: 'requeue'; id: number }
  /** The run has its isolate: its code may be running from now on. */
  | { t: 'started'; id: number }
  | { t: 'call'; id: number; call: number; op: string; args: unknown[] }
  | { t: 'log'; id: number; level: LogLevel; message: string }
  | { t: 'degraded'; reason: string; tenant: string | null }
  | { t: 'stats'; stats: PoolStats };

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null;
const isId = (value: unknown): value is number => typeof value === 'number' && Number.isSafeInteger(value) && value > 0;

/** The messages of one write from the child that have a known shape; the rest are dropped. */
export function fromChild(batch: unknown): FromChild[] {
  if (!Array.isArray(batch)) return [];
  const out: FromChild[] = [];
  for (const m of batch) {
    if (!isObject(m)) continue;
    switch (m.t) {
      case 'ready':
        out.push({ t: 'ready' });
        break;
      case 'result':
        if (isId(m.id) && isObject(m.result) && typeof m.result.kind === 'string') out.push(m as FromChild);
        break;
      case 'requeue':
      case 'started':
        if (isId(m.id)) out.push(m as FromChild);
        break;
      case 'call':
        if (isId(m.id) && isId(m.call) && typeof m.op === 'string' && Array.isArray(m.args)) out.push(m as FromChild);
        break;
      case 'log':
        if (isId(m.id) && typeof m.level === 'string' && typeof m.message === 'string') out.push(m as FromChild);
        break;
      case 'degraded':
        if (typeof m.reason === 'string' && (m.tenant === null || typeof m.tenant === 'string'))
          out.push(m as FromChild);
        break;
      case 'stats':
        if (isObject(m.stats)) out.push(m as FromChild);
        break;
    }
  }
  return out;
}

/** The messages of one write from the parent that have a known shape. */
export function toChild(batch: unknown): ToChild[] {
  if (!Array.isArray(batch)) return [];
  const out: ToChild[] = [];
  for (const m of batch) {
    if (!isObject(m) || !isId(m.id)) continue;
    if (
      (m.t === 'run' && isObject(m.request)) ||
      m.t === 'abort' ||
      m.t === 'retire' ||
      (m.t === 'answer' && isId(m.call) && typeof m.ok === 'boolean')
    )
      out.push(m as ToChild);
  }
  return out;
}

/**
 * Collects messages posted in one event-loop turn and sends them as one array: under load a run's
 * result, the next run and several host answers share one write.
 */
export class Outbox<M> {
  readonly #send: (batch: M[]) => void;
  #queued: M[] = [];

  constructor(send: (batch: M[]) => void) {
    this.#send = send;
  }

  post(message: M): void {
    if (this.#queued.push(message) === 1) setImmediate(() => this.flush());
  }

  flush(): void {
    if (this.#queued.length === 0) return;
    const batch = this.#queued;
    this.#queued = [];
    this.#send(batch);
  }
}

/**
 * A sandbox child process (sandbox/sandbox-process.ts starts it): an isolate pool serving the
 * runs its parent sends, with a HostApi that forwards every ctx call to the parent and answers the
 * code with what the parent answered. It holds nothing else: no database, no secrets (its
 * environment is empty), no other runner state, so when isolated-vm parks one of its threads
 * (docs/sandbox.md, "What the library cannot stop") it can be thrown away whole.
 *
 * It ends itself with SIGKILL when its parent goes away: a parked isolate thread would keep an
 * ordinary exit waiting forever.
 */
import { writeFileSync } from 'node:fs';
import { EGRESS_CODES } from '../shared/egress/egress-error.ts';
import { errorCatalog, ServiceError, type ErrorCode } from '../shared/errors.ts';
import { yieldCpu } from '../shared/priority.ts';
import type { HostApi } from './host-bridge.ts';
import { IsolatePool } from './isolate-pool.ts';
import type { LogLevel } from './messages.ts';
import { runCode } from './sandbox.ts';
import { Outbox, toChild, type ChildPoolOptions, type FromChild } from './sandbox-process-messages.ts';

/** How often the child reports its pool's stats. */
const STATS_EVERY_MS = 1000;

// First of all: when the host runs out of memory, the kernel kills a sandbox child before the
// runner, the control plane or the database (raising one's own score needs no privilege).
try {
  writeFileSync('/proc/self/oom_score_adj', '1000');
} catch {
  // No /proc (not Linux): nothing to raise.
}

const started = JSON.parse(process.argv[2] ?? '{}') as { pool?: ChildPoolOptions; nice?: number | null };
const options: ChildPoolOptions = started.pool ?? {};
// Before the pool starts threads, so isolated-vm's threads inherit it.
if (typeof started.nice === 'number') yieldCpu(started.nice);
const outbox = new Outbox<FromChild>((batch) => {
  // With a callback a write to a parent that just went away fails quietly (EPIPE) instead of
  // crashing this process with an unhandled 'error'; 'disconnect' below ends it anyway.
  if (process.connected) process.send?.(batch, (error: Error | null) => void error);
});

const pool = new IsolatePool({
  ...options,
  onDegraded: (reason, tenant) => {
    outbox.post({ t: 'degraded', reason, tenant: tenant ?? null });
    outbox.flush();
  },
});

interface RunState {
  readonly abort: AbortController;
  /** It has an isolate: it runs here to its end. */
  started: boolean;
  /** Handed back unstarted (the parent retires this process): answered with `requeue`. */
  requeue: boolean;
  readonly calls: Map<number, { resolve: (value: unknown) => void; reject: (error: unknown) => void }>;
}

const runs = new Map<number, RunState>();
let nextCall = 0;

function forward(id: number, op: string, args: unknown[]): Promise<unknown> {
  const run = runs.get(id);
  if (!run) return Promise.reject(new Error('The run has ended.'));
  const call = ++nextCall;
  return new Promise((resolve, reject) => {
    run.calls.set(call, { resolve, reject });
    outbox.post({ t: 'call', id, call, op, args });
  });
}

function hostFor(id: number): HostApi {
  return {
    objects: {
      get: (alias) => forward(id, 'objects.get', [alias]),
      put: (alias, value) => forward(id, 'objects.put', [alias, value]),
      list: (listOptions) => forward(id, 'objects.list', [listOptions]),
    },
    thread: { post: (item) => forward(id, 'thread.post', [item]) },
    graph: {
      mutate: (mutations) => forward(id, 'graph.mutate', [mutations]),
      query: (query) => forward(id, 'graph.query', [query]),
    },
    fetch: (url, init) => forward(id, 'fetch', [url, init]),
    credentials: { get: (name) => forward(id, 'credentials.get', [name]) },
    log: (level: LogLevel, message: string) => outbox.post({ t: 'log', id, level, message }),
    // The parent reported its own host failures; an opaque one here is only what it told us.
    reportError: () => {},
  };
}

/** A refusal as the code must see it: the parent's ServiceError rebuilt, or an opaque failure. */
function refusalOf(error: { code: string; message: string; limit?: unknown } | null): unknown {
  if (error && Object.hasOwn(errorCatalog, error.code)) {
    return new ServiceError(error.code as ErrorCode, error.message, error.limit ? { limit: error.limit as never } : {});
  }
  // An outside call's refusal keeps its code too (hostRefusal, sandbox/messages.ts).
  if (error && (EGRESS_CODES as readonly string[]).includes(error.code))
    return Object.assign(new Error(error.message), { code: error.code });
  return new Error('The host call failed.');
}

process.on('message', (batch: unknown) => {
  for (const m of toChild(batch)) {
    switch (m.t) {
      case 'run': {
        const run: RunState = { abort: new AbortController(), started: false, requeue: false, calls: new Map() };
        runs.set(m.id, run);
        const onStart = () => {
          run.started = true;
          // The parent blames a crash on the organization whose code was running (sandbox-process.ts).
          outbox.post({ t: 'started', id: m.id });
        };
        void runCode(pool, m.request, hostFor(m.id), run.abort.signal, onStart).then((result) => {
          runs.delete(m.id);
          for (const waiter of run.calls.values()) waiter.reject(new Error('The run has ended.'));
          outbox.post(run.requeue ? { t: 'requeue', id: m.id } : { t: 'result', id: m.id, result });
        });
        break;
      }
      case 'retire':
        // Runs still waiting for an isolate go back to the parent, for the process replacing this one.
        for (const run of runs.values()) {
          if (run.started) continue;
          run.requeue = true;
          run.abort.abort();
        }
        break;
      case 'abort':
        runs.get(m.id)?.abort.abort();
        break;
      case 'answer': {
        const waiter = runs.get(m.id)?.calls.get(m.call);
        if (!waiter) break;
        runs.get(m.id)?.calls.delete(m.call);
        if (m.ok) waiter.resolve(m.value);
        else waiter.reject(refusalOf(m.error));
        break;
      }
    }
  }
});

// The parent is gone (or closed the channel to retire us): nothing here is worth an orderly exit.
process.on('disconnect', () => process.kill(process.pid, 'SIGKILL'));

setInterval(() => outbox.post({ t: 'stats', stats: pool.stats() }), STATS_EVERY_MS).unref();
await pool.warm();
outbox.post({ t: 'ready' });

/**
 * Timed `logic.code` runs on an isolate pool, for the sandbox benches (bench/sandbox.ts,
 * bench/first-run.ts): a host whose every call answers nothing, and a series of runs with each
 * run's latency and the process CPU it took (every thread: this one and the isolate's).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { HostApi } from '../sandbox/host-bridge.ts';
import type { IsolatePool } from '../sandbox/isolate-pool.ts';
import type { CodeRequest } from '../sandbox/messages.ts';
import { runCode } from '../sandbox/sandbox.ts';

/** A HostApi that answers every call with nothing: what is measured is the sandbox. */
export const silentHost: HostApi = {
  objects: { get: async () => null, put: async () => null, list: async () => [] },
  thread: { post: async () => null },
  graph: { mutate: async () => [], query: async () => ({ nodes: [], edges: [] }) },
  fetch: async () => ({ status: 200, statusText: 'OK', headers: {}, body: '', url: '', redirected: false }),
  credentials: { get: async () => '' },
  log: () => {},
};

/** A request with the benches' input and ids; `tenant` null sends none. */
export function codeRequest(code: string, imports: string[] = [], tenant: string | null = 'bench'): CodeRequest {
  return {
    code,
    input: { name: 'bench' },
    imports,
    timeoutMs: 5000,
    ids: { executionId: 'e', sessionId: 's', node: 'n' },
    ...(tenant === null ? {} : { tenant }),
  };
}

/** `count` runs of `next(i)`, `pauseMs` apart (0: back-to-back): latencies (ms) and CPU ms per run. */
export async function timedRuns(
  pool: IsolatePool,
  next: (i: number) => CodeRequest,
  count: number,
  pauseMs: number,
): Promise<{ samples: number[]; cpuPerRun: number }> {
  const samples: number[] = [];
  let cpu = 0;
  for (let i = 0; i < count; i++) {
    if (pauseMs > 0) await sleep(pauseMs);
    const before = process.cpuUsage();
    const start = performance.now();
    const result = await runCode(pool, next(i), silentHost);
    samples.push(performance.now() - start);
    const used = process.cpuUsage(before);
    cpu += (used.user + used.system) / 1000;
    if (result.kind === 'error') throw new Error(`bench run failed: ${result.error.code} ${result.error.message}`);
  }
  return { samples, cpuPerRun: cpu / count };
}

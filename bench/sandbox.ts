/**
 * Warm overhead of a trivial `logic.code` run (prints, asserts nothing):
 *   ./node_modules/.bin/node --no-node-snapshot bench/sandbox.ts [runs]
 * "latency" leaves the pool a moment between runs (a node run arriving at an idle runner, which
 * finds an isolate with a spare context); "back-to-back" starts each run as the last one returns.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { HostApi } from '../sandbox/host-bridge.ts';
import { IsolatePool } from '../sandbox/isolate-pool.ts';
import type { CodeRequest } from '../sandbox/messages.ts';
import { runCode } from '../sandbox/sandbox.ts';

const runs = Number(process.argv[2] ?? 2000);
const host: HostApi = {
  objects: { get: async () => null, put: async () => null, list: async () => [] },
  thread: { post: async () => null },
  graph: { mutate: async () => [], query: async () => ({ nodes: [], edges: [] }) },
  log: () => {},
};
const request = (code: string, imports: string[] = []): CodeRequest => ({
  code, input: { name: 'bench' }, imports, timeoutMs: 5000, ids: { executionId: 'e', sessionId: 's', node: 'n' },
});

function summary(samples: number[]): string {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (p: number) => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!.toFixed(3);
  const mean = samples.reduce((a, b) => a + b, 0) / samples.length;
  return `mean ${mean.toFixed(3)} ms  p50 ${at(0.5)}  p90 ${at(0.9)}  p99 ${at(0.99)}`;
}

async function measure(pool: IsolatePool, req: CodeRequest, pause: boolean): Promise<number[]> {
  const samples: number[] = [];
  for (let i = 0; i < runs; i++) {
    if (pause) await sleep(1);
    const start = performance.now();
    const result = await runCode(pool, req, host);
    samples.push(performance.now() - start);
    if (result.kind === 'error') throw new Error(`bench run failed: ${result.error.code} ${result.error.message}`);
  }
  return samples.slice(Math.floor(runs / 10));
}

const pool = new IsolatePool({ size: 1, warm: 1 });
await pool.warm();
const trivial = request('export default (input) => input');
const withCtx = request('export default async (input, ctx) => { await ctx.objects.get("a"); return { ok: true } }');
const withImport = request('import { v4 } from "@ws/uuid"; export default () => v4()', ['@ws/uuid']);
await measure(pool, trivial, false);
console.log(`trivial run, latency:       ${summary(await measure(pool, trivial, true))}`);
console.log(`trivial run, back-to-back:  ${summary(await measure(pool, trivial, false))}`);
console.log(`one ctx call, latency:      ${summary(await measure(pool, withCtx, true))}`);
console.log(`vetted import, latency:     ${summary(await measure(pool, withImport, true))}`);
console.log('pool', JSON.stringify(pool.stats()));
await pool.dispose();

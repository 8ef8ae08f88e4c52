/**
 * Warm overhead of `logic.code` runs (prints, asserts nothing):
 *   ./node_modules/.bin/node --no-node-snapshot bench/sandbox.ts [runs]
 * "latency" leaves the pool a moment between runs (a node run arriving at an idle runner);
 * "back-to-back" starts each run as the last one returns. Runs are of one tenant, so they reuse
 * its context, except "new tenant" (every run of another tenant, so a context is
 * made from the context snapshot each time; the pool's spare absorbs that when the runner
 * idles) and the two "context" rows (a context alone, from the snapshot and without it).
 * "cpu/run" is process CPU (all threads: this one and the isolate's) over the batch, per run.
 */
import ivm from 'isolated-vm';
import { contextSnapshot } from '../sandbox/context-snapshot.ts';
import { contextRecipe, prepareContext } from '../sandbox/host-bridge.ts';
import { IsolatePool } from '../sandbox/isolate-pool.ts';
import { defaultBounds, type CodeRequest } from '../sandbox/messages.ts';
import { codeRequest as request, timedRuns } from './code-runs.ts';

const runs = Number(process.argv[2] ?? 2000);
function summary(samples: number[], cpuMs: number): string {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (p: number) => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!.toFixed(3);
  const mean = samples.reduce((a, b) => a + b, 0) / samples.length;
  return `mean ${mean.toFixed(3)} ms  p50 ${at(0.5)}  p90 ${at(0.9)}  p99 ${at(0.99)}  cpu/run ${cpuMs.toFixed(3)} ms`;
}

async function measure(
  pool: IsolatePool,
  next: (i: number) => CodeRequest,
  pause: boolean,
  count = runs,
): Promise<string> {
  const { samples, cpuPerRun } = await timedRuns(pool, next, count, pause ? 1 : 0);
  return summary(samples.slice(Math.floor(count / 10)), cpuPerRun);
}

/**
 * A context ready for its first run, on an idle isolate: from the context snapshot (what the
 * pool does) or, `fromSnapshot` false, with the bootstrap and the whole lockdown run in it (the
 * fallback when V8 refuses a snapshot).
 */
function contextCost(count: number, fromSnapshot: boolean): string {
  const snapshot = fromSnapshot ? contextSnapshot() : null;
  const isolate = new ivm.Isolate({ memoryLimit: 64, ...(snapshot ? { snapshot } : {}) });
  const recipe = contextRecipe(isolate, defaultBounds, snapshot !== null);
  const samples: number[] = [];
  let cpu = 0;
  for (let i = 0; i < count; i++) {
    const before = process.cpuUsage();
    const start = performance.now();
    prepareContext(isolate, recipe).release();
    samples.push(performance.now() - start);
    const used = process.cpuUsage(before);
    cpu += (used.user + used.system) / 1000;
  }
  isolate.dispose();
  return summary(samples.slice(Math.floor(count / 10)), cpu / count);
}

const pool = new IsolatePool({ size: 1, warm: 1 });
await pool.warm();
const trivial = request('export default (input) => input');
const withCtx = request('export default async (input, ctx) => { await ctx.objects.get("a"); return { ok: true } }');
const withImport = request('import { v4 } from "@ws/uuid"; export default () => v4()', ['@ws/uuid']);
await measure(pool, () => trivial, false);
console.log(`trivial run, latency:       ${await measure(pool, () => trivial, true)}`);
console.log(`trivial run, back-to-back:  ${await measure(pool, () => trivial, false)}`);
console.log(`one ctx call, latency:      ${await measure(pool, () => withCtx, true)}`);
console.log(`one ctx call, back-to-back: ${await measure(pool, () => withCtx, false)}`);
console.log(`vetted import, latency:     ${await measure(pool, () => withImport, true)}`);
const fewer = Math.max(50, Math.floor(runs / 10));
console.log(
  `new tenant, latency:        ${await measure(pool, (i) => request('export default (input) => input', [], `idle-tenant-${i}`), true, fewer)}`,
);
console.log(
  `new tenant, back-to-back:   ${await measure(pool, (i) => request('export default (input) => input', [], `tenant-${i}`), false, fewer)}`,
);
console.log(
  `no tenant, back-to-back:    ${await measure(pool, () => request('export default (input) => input', [], null), false, fewer)}`,
);
console.log(`context from snapshot:      ${contextCost(fewer, true)}`);
console.log(`context without snapshot:   ${contextCost(fewer, false)}`);
console.log('pool', JSON.stringify(pool.stats()));
await pool.dispose();

/**
 * What an organization's first `logic.code` run costs the sandbox over a warm run ("a tenant's
 * first run is cheap", docs/benchmarks.md "Tenant isolation"), measured in-process on one isolate
 * pool at the runner's defaults (contexts shared by every organization), then with a context per
 * organization (`RUNNER_CODE_CONTEXTS=organization`), with the code the isolation bench's
 * executions run. Three series of runs of `export default (input) => input`:
 *
 * - warm: one organization, whose context the isolate keeps;
 * - new organization, idle runner: every run another organization's, 2 ms apart, so the pool has
 *   made its spare context when the run arrives (an organization the runner has not seen, arriving
 *   at a runner that is not saturated);
 * - new organization, back-to-back: every run another organization's, each starting as the last
 *   one returns, so each makes its context inline (a saturated runner).
 *
 * Each series reports p50 and mean latency (the mean carries the collections the evicted contexts
 * cost) and the process CPU per run (every thread: this one, the isolate's, V8's helpers).
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { IsolatePool, type ContextScope } from '../sandbox/isolate-pool.ts';
import type { CodeRequest } from '../sandbox/messages.ts';
import { SANDBOX_V8_FLAGS } from '../sandbox/sandbox-process.ts';
import { codeRequest, timedRuns } from './code-runs.ts';
import { fmt, summarize, type Summary } from './stats.ts';

const request = (tenant: string): CodeRequest => codeRequest('export default (input) => input', [], tenant);

interface Series {
  latency: Summary;
  cpuPerRun: number;
}

async function series(
  pool: IsolatePool,
  count: number,
  tenant: (i: number) => string,
  pauseMs: number,
): Promise<Series> {
  const { samples, cpuPerRun } = await timedRuns(pool, (i) => request(tenant(i)), count, pauseMs);
  return { latency: summarize(samples), cpuPerRun };
}

/**
 * Report rows [figure, measured, target, met] for the isolation bench's table, measured in a
 * child process with the sandbox process's V8 flags (its heap growing factor changes the figures).
 */
export async function firstRunRows(count = 1000): Promise<string[][]> {
  const child = spawn(
    process.execPath,
    ['--no-node-snapshot', ...SANDBOX_V8_FLAGS, fileURLToPath(import.meta.url), String(count)],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
  const [code] = (await once(child, 'exit')) as [number | null];
  if (code !== 0) throw new Error(`bench/first-run.ts exited with ${code}`);
  return JSON.parse(out) as string[][];
}

const cell = (s: Series) =>
  `p50 ${fmt(s.latency.p50, 3)} ms, mean ${fmt(s.latency.mean, 3)} ms, CPU ${fmt(s.cpuPerRun, 3)} ms/run`;

/** The three series on a pool whose contexts are `contexts`. */
async function measure(contexts: ContextScope, count: number): Promise<Record<'warm' | 'idle' | 'busy', Series>> {
  const pool = new IsolatePool({ size: 1, warm: 1, contexts });
  try {
    await pool.warm();
    await series(pool, 300, () => 'warm', 0);
    const warm = await series(pool, count, () => 'warm', 2);
    const idle = await series(pool, count, (i) => `idle-${i}`, 2);
    const busy = await series(pool, count, (i) => `busy-${i}`, 0);
    return { warm, idle, busy };
  } finally {
    await pool.dispose();
  }
}

async function measureRows(count: number): Promise<string[][]> {
  const shared = await measure('shared', count);
  const tenant = await measure('tenant', count);
  const more = (s: Series) => s.latency.p50 - shared.warm.latency.p50;
  const target = (s: Series) => [
    `${more(s) < 0 ? '' : '+'}${fmt(more(s), 3)} ms`,
    '<= +0.300 ms',
    more(s) <= 0.3 ? 'yes' : 'NO',
  ];
  return [
    ['first code run: warm (contexts shared, the runner default)', cell(shared.warm), '-', ''],
    ['first code run of a new organization, idle runner', cell(shared.idle), '-', ''],
    ['    more than a warm run (p50)', ...target(shared.idle)],
    ['first code run of a new organization, saturated (back-to-back)', cell(shared.busy), '-', ''],
    ['    more than a warm run (p50)', ...target(shared.busy)],
    ["with a context per organization: warm (the organization's kept)", cell(tenant.warm), '-', ''],
    ['    new organization, idle runner (the spare context ready)', cell(tenant.idle), '-', ''],
    ['    new organization, saturated (context made inline)', cell(tenant.busy), '-', ''],
  ];
}

if (import.meta.url === `file://${process.argv[1]}`) {
  process.stdout.write(JSON.stringify(await measureRows(Number(process.argv[2] ?? 1000))));
}

/**
 * Shared processes under a hostile tenant (docs/benchmarks.md "Shared processes"), on a system of
 * its own with one runner at its defaults. Prints, asserts nothing.
 *
 * A quiet tenant calls the REST API at a steady rate (open loop: a request starts every 25 ms
 * whatever the earlier ones are doing, so a stall shows in the latencies instead of slowing the
 * sender): its organization, its blob list, a metadata write and an anonymous sign-up in turn.
 * First alone, then while each scenario of bench/pressure/ presses on the control plane or the
 * model host from a process of its own (bench/pressure-hostile.ts), so the hostile tenant's
 * sending does not take the event loop that times the quiet tenant's requests. Each row: the
 * quiet tenant's p99 beside the target (≤ 2 × alone + 50 ms), its 5xx answers and failed requests
 * (target 0), and the resident memory of the control plane with its children (the model host) before, at the peak and after the scenario (target: growth ≤ 100 MiB),
 * and the CPU seconds the control plane (with its children) and PostgreSQL spent over the row: on a
 * machine shared with other work the latencies vary from run to run, the CPU an attack costs the
 * service much less.
 *
 *   ./node_modules/.bin/node --no-node-snapshot bench/pressure.ts [--seconds 10 --only time-zones,cron-checks]
 * `npm run bench` runs it after the ONNX section (`--pressure-only` runs only it).
 */
import { readdir, readFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import '../shared/db/embedded.ts';
import { childPids } from '../shared/proc-stat.ts';
import { cpuSnapshot, cpuSpent, postmasterPid, type CpuSnapshot } from './cpu.ts';
import { signIn, type Account } from './client.ts';
import { fmt, summarize, table } from './stats.ts';
import { runSection, type System } from './system.ts';
import { startHostile } from './pressure/hostile-child.ts';
import type { PressureScenario } from './pressure/scenario.ts';

const { values: args } = parseArgs({
  options: {
    seconds: { type: 'string', default: '10' },
    only: { type: 'string' },
    'profile-control-plane': { type: 'string' },
  },
});
const SECONDS = Number(args.seconds);
const ONLY = args.only ? new Set(args.only.split(',')) : null;
/** The quiet tenant's request interval. */
const INTERVAL_MS = 25;
/** A quiet request not answered within this counts as failed. */
const REQUEST_TIMEOUT_MS = 30_000;
/** How long a scenario presses before the quiet tenant is measured, so the pressure is established. */
const RAMP_MS = 1_000;
/** How long a scenario's end is left to settle (caches evicted, buffers freed) before "after". */
const SETTLE_MS = 2_000;

const log = (message: string) => process.stderr.write(`[bench pressure] ${message}\n`);

/**
 * The scenarios of bench/pressure/, by file name: the modules that export a `scenario` (the others,
 * scenario.ts and the fixtures several scenarios share, are not one).
 */
async function loadScenarios(): Promise<{ file: string; scenario: PressureScenario }[]> {
  const dir = new URL('./pressure/', import.meta.url);
  const files = (await readdir(dir)).filter((f) => f.endsWith('.ts') && f !== 'scenario.ts').sort();
  const loaded = [];
  for (const file of files) {
    const name = file.slice(0, -3);
    if (ONLY && !ONLY.has(name)) continue;
    const module = (await import(new URL(file, dir).href)) as { scenario?: PressureScenario };
    if (!module.scenario) continue;
    loaded.push({ file: name, scenario: module.scenario });
  }
  return loaded;
}

async function rssOf(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => '');
  return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024;
}

/** Resident memory of the control plane and its children (the model host), MiB. */
async function controlPlaneRss(system: System): Promise<number> {
  const pid = system.controlPlane.pid;
  let total = await rssOf(pid);
  for (const child of await childPids(pid)) total += await rssOf(child);
  return total;
}

interface QuietTenant {
  account: Account;
  orgId: string;
  blobId: string;
}

async function quietTenant(system: System): Promise<QuietTenant> {
  const account = await signIn(system);
  const post = async (path: string, body: unknown) => {
    const res = await fetch(`${system.apiUrl}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${account.token}` },
      body: JSON.stringify(body),
    });
    if (res.status >= 300) throw new Error(`${path}: ${res.status} ${await res.text()}`);
    return (await res.json()) as any;
  };
  const org = (await post('/v1/orgs', { alias: `quiet-${process.pid}` })).org;
  const { blob } = await post(`/v1/blobs/${org.id}`, { type: 'svc.compute.workflow', alias: 'quiet-flow' });
  return { account, orgId: org.id, blobId: blob.id };
}

interface QuietFigures {
  latencies: number[];
  /** Answers with a 5xx status. */
  serverErrors: number;
  /** Requests that got no answer (network error or no answer within REQUEST_TIMEOUT_MS). */
  failed: number;
}

/** The quiet tenant's calls for `ms`, open loop; resolves once every one of them settled. */
async function measureQuiet(system: System, quiet: QuietTenant, ms: number): Promise<QuietFigures> {
  const figures: QuietFigures = { latencies: [], serverErrors: 0, failed: 0 };
  const auth = { authorization: `Bearer ${quiet.account.token}` };
  const requests: (() => [string, RequestInit])[] = [
    () => [`/v1/orgs/${quiet.orgId}`, { headers: auth }],
    () => [`/v1/orgs/${quiet.orgId}/blobs`, { headers: auth }],
    () => [
      `/v1/blobs/${quiet.orgId}/${quiet.blobId}/metadata/note`,
      {
        method: 'PUT',
        headers: { ...auth, 'content-type': 'application/json' },
        body: JSON.stringify({ entries: [{ at: Date.now() }] }),
      },
    ],
    () => ['/v1/auth/anonymous', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' }],
  ];
  const inFlight: Promise<void>[] = [];
  const end = performance.now() + ms;
  for (let i = 0; performance.now() < end; i++) {
    const [path, init] = requests[i % requests.length]!();
    const started = performance.now();
    inFlight.push(
      fetch(`${system.apiUrl}${path}`, { ...init, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) })
        .then(async (res) => {
          await res.arrayBuffer();
          figures.latencies.push(performance.now() - started);
          if (res.status >= 500) figures.serverErrors++;
        })
        .catch(() => {
          figures.failed++;
        }),
    );
    await sleep(Math.max(0, started + INTERVAL_MS - performance.now()));
  }
  await Promise.all(inFlight);
  return figures;
}

/**
 * The control plane's event-loop delay (ms) since the previous call: prom-client's
 * `nodejs_eventloop_lag_*` (monitorEventLoopDelay at 10 ms resolution), which each scrape of the
 * ops port's /metrics reads and resets. Its max is about the longest stretch the event loop went
 * without turning; null when the metrics are not served.
 */
async function eventLoopDelay(system: System): Promise<{ max: number; p99: number } | null> {
  const res = await fetch(`${system.opsUrl.replace(/\/graphql$/, '')}/metrics`, {
    headers: { authorization: `Bearer ${system.opsToken}` },
  }).catch(() => null);
  if (res === null || !res.ok) return null;
  const text = await res.text();
  const seconds = (name: string) => Number(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'm').exec(text)?.[1]);
  const max = seconds('nodejs_eventloop_lag_max_seconds');
  const p99 = seconds('nodejs_eventloop_lag_p99_seconds');
  return Number.isFinite(max) && Number.isFinite(p99) ? { max: max * 1000, p99: p99 * 1000 } : null;
}

async function pressure(system: System): Promise<string> {
  const scenarios = await loadScenarios();
  const quiet = await quietTenant(system);
  // Warm the control plane's paths before the baseline.
  await measureQuiet(system, quiet, 2_000);
  const postmaster = await postmasterPid(system.sql);
  const cpu = () => cpuSnapshot({ service: [system.controlPlane.pid] }, postmaster);
  /** CPU seconds of the control plane with its model processes, and of PostgreSQL, since `from`. */
  const cpuSince = async (from: CpuSnapshot) => {
    const spent = cpuSpent(from, await cpu());
    return `${fmt(spent.service ?? 0, 1)} / ${fmt(spent.postgres ?? 0, 1)} s`;
  };
  const aloneCpu = await cpu();
  await eventLoopDelay(system);
  const alone = await measureQuiet(system, quiet, SECONDS * 1000);
  const aloneDelay = await eventLoopDelay(system);
  if (aloneDelay !== null)
    log(
      `the control plane's event-loop delay, quiet tenant alone: max ${fmt(aloneDelay.max)} ms, p99 ${fmt(aloneDelay.p99)} ms`,
    );
  const aloneSpent = await cpuSince(aloneCpu);
  const aloneP99 = summarize(alone.latencies).p99;
  const target = 2 * aloneP99 + 50;
  const yes = (ok: boolean) => (ok ? 'yes' : 'NO');
  const rows: string[][] = [
    [
      'hostile tenant',
      'quiet p50 / p99',
      'p99 target',
      'met',
      '5xx / failed',
      'RSS before / peak / after',
      'growth',
      'CPU control plane / PostgreSQL',
    ],
  ];
  const aloneSummary = summarize(alone.latencies);
  rows.push([
    'none (quiet tenant alone)',
    `${fmt(aloneSummary.p50)} / ${fmt(aloneSummary.p99)} ms`,
    '-',
    '',
    `${alone.serverErrors} / ${alone.failed}`,
    `${fmt(await controlPlaneRss(system), 0)} MiB`,
    '',
    aloneSpent,
  ]);

  for (const { file, scenario } of scenarios) {
    const hostile = await signIn(system);
    log(`${file}: ${scenario.name}`);
    try {
      const attacker = await startHostile(file, system, hostile);
      const before = await controlPlaneRss(system);
      let peak = before;
      const sampler = setInterval(() => {
        void controlPlaneRss(system).then((mib) => {
          if (mib > peak) peak = mib;
        });
      }, 200);
      const rowCpu = await cpu();
      await eventLoopDelay(system);
      attacker.run();
      await sleep(RAMP_MS);
      const figures = await measureQuiet(system, quiet, SECONDS * 1000);
      const delay = await eventLoopDelay(system);
      attacker.stop();
      if (delay !== null)
        log(
          `${file}: the control plane's event-loop delay over the row: max ${fmt(delay.max)} ms, p99 ${fmt(delay.p99)} ms`,
        );
      const error = await attacker.ended;
      await sleep(SETTLE_MS);
      clearInterval(sampler);
      const after = await controlPlaneRss(system);
      const spent = await cpuSince(rowCpu);
      const s = summarize(figures.latencies);
      const growth = after - before;
      rows.push([
        scenario.name + (error ? ` (scenario failed: ${error.message.slice(0, 80)})` : ''),
        `${fmt(s.p50)} / ${fmt(s.p99)} ms`,
        `<= ${fmt(target)} ms`,
        yes(s.p99 <= target && figures.serverErrors === 0 && figures.failed === 0 && growth <= 100),
        `${figures.serverErrors} / ${figures.failed}`,
        `${fmt(before, 0)} / ${fmt(peak, 0)} / ${fmt(after, 0)} MiB`,
        `${fmt(growth, 0)} MiB (<= 100)`,
        spent,
      ]);
    } catch (error) {
      rows.push([
        `${scenario.name} (could not run: ${(error as Error).message.slice(0, 120)})`,
        '-',
        '-',
        'NO',
        '-',
        '-',
        '-',
        '-',
      ]);
    }
  }
  return [
    table(rows),
    '',
    `quiet tenant: a REST call every ${INTERVAL_MS} ms (its organization, its blobs, a metadata write, a sign-up), ${SECONDS} s per row`,
    `CPU: seconds the control plane with its model processes and PostgreSQL spent over the row (alone: ${SECONDS} s; a scenario: ${(RAMP_MS + SECONDS * 1000 + SETTLE_MS) / 1000} s, from its start to "after")`,
  ].join('\n');
}

// --profile-control-plane DIR: the control plane's CPU profile (--cpu-prof), written when it stops.
const profileDir = args['profile-control-plane'];
await runSection(
  1,
  pressure,
  profileDir ? { controlPlaneNodeArgs: ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] } : {},
);

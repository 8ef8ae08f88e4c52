/**
 * What observability costs the throughput batch of bench/peer.ts (docs/benchmarks.md "Beside
 * graphile-worker"): three systems side by side, each on its own durable embedded PostgreSQL —
 * everything off (the default), the runner's metrics on (`METRICS_PORT`, scraped with the control
 * plane's every `SCRAPE_MS` as Prometheus would) and tracing on (every span exported over OTLP/HTTP
 * to a sink in this process). Batches alternate between the three, `rounds` times, so a drift of
 * the machine weighs on each alike; the figures are medians over the rounds. Prints, asserts nothing.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createWorkload } from './client.ts';
import { cpuSnapshot, cpuSpent, postmasterPid } from './cpu.ts';
import { batchSpan, createMany, waitForEnd } from './executions.ts';
import { freePort } from '../shared/db/free-port.ts';
import { fmt, quantile, table } from './stats.ts';
import { startSystem, type System } from './system.ts';
import { BENCH_GRAPH } from './workflow.ts';

/** Prometheus's scrape interval would be 15 s or more; 5 s weighs more on the service. */
const SCRAPE_MS = 5000;
const BATCH_TIMEOUT_MS = 180_000;

const log = (message: string) => process.stderr.write(`[bench observability] ${message}\n`);

interface Setup {
  name: string;
  system: System;
  workload: Awaited<ReturnType<typeof createWorkload>>;
  perSecond: number[];
  cpuMs: number[];
}

/** An OTLP/HTTP collector that takes every export and keeps only the byte count. */
async function otlpSink(): Promise<{ server: Server; url: string; bytes: () => number }> {
  let bytes = 0;
  const server = createServer((req, res) => {
    req.on('data', (chunk: Buffer) => (bytes += chunk.length));
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{}'));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, bytes: () => bytes };
}

async function scrape(url: string, token?: string): Promise<void> {
  const res = await fetch(url, token ? { headers: { authorization: `Bearer ${token}` } } : {});
  await res.arrayBuffer();
  if (!res.ok) throw new Error(`${url} answered ${res.status}`);
}

async function batch(setup: Setup, executions: number, inFlight: number): Promise<void> {
  const { system } = setup;
  const groups = {
    cp: [system.controlPlane.pid],
    runner: system.runners.map((r) => r.pid),
  };
  const postmaster = await postmasterPid(system.sql);
  const before = await cpuSnapshot(groups, postmaster);
  const ids = await createMany(system, [setup.workload], { count: executions, window: 8, inFlight });
  const open = await waitForEnd(system.sql, ids, BATCH_TIMEOUT_MS);
  if (open > 0) log(`${setup.name}: ${open} executions had not ended`);
  const spent = cpuSpent(before, await cpuSnapshot(groups, postmaster));
  const span = await batchSpan(system.sql, ids);
  setup.perSecond.push(span.succeeded / span.seconds);
  // The service's CPU: control plane, runner with its children, PostgreSQL (not the bench client).
  const service = (spent.cp ?? 0) + (spent.runner ?? 0) + (spent.postgres ?? 0);
  setup.cpuMs.push((service * 1000) / executions);
}

const median = (xs: number[]) =>
  quantile(
    [...xs].sort((a, b) => a - b),
    0.5,
  );

/** Runs the three setups' batches in turn, `rounds` times; answers the section's table. */
export async function observabilityCost(options: {
  executions: number;
  inFlight: number;
  rounds: number;
}): Promise<string> {
  const sink = await otlpSink();
  const metricsPort = await freePort();
  const setups: Setup[] = [];
  const scrapers: NodeJS.Timeout[] = [];
  try {
    const configs: Array<{ name: string; env: Record<string, string> }> = [
      { name: 'metrics and tracing off (defaults)', env: {} },
      {
        name: `runner metrics on, both scraped every ${SCRAPE_MS / 1000} s`,
        env: { METRICS_PORT: String(metricsPort) },
      },
      { name: 'tracing on, every span exported (OTLP/HTTP)', env: { OTEL_EXPORTER_OTLP_ENDPOINT: sink.url } },
    ];
    for (const config of configs) {
      log(`starting: ${config.name}`);
      const system = await startSystem({ runners: 1, durable: true, env: config.env });
      const workload = await createWorkload(system, BENCH_GRAPH, {
        sessions: 8,
        quota: options.executions * (options.rounds + 1) + 1000,
      });
      const setup: Setup = { name: config.name, system, workload, perSecond: [], cpuMs: [] };
      setups.push(setup);
      const warm = await createMany(system, [workload], { count: 500, window: 8 });
      await waitForEnd(system.sql, warm, BATCH_TIMEOUT_MS);
      if (config.env.METRICS_PORT) {
        const opsMetrics = `${system.opsUrl.replace(/\/graphql$/, '')}/metrics`;
        const tick = () =>
          Promise.all([scrape(`http://127.0.0.1:${metricsPort}/metrics`), scrape(opsMetrics, system.opsToken)]).catch(
            (error: unknown) => log(`scrape failed: ${String(error)}`),
          );
        scrapers.push(setInterval(() => void tick(), SCRAPE_MS));
      }
    }
    for (let round = 1; round <= options.rounds; round++) {
      for (const setup of setups) {
        log(`round ${round}: ${setup.name}`);
        await batch(setup, options.executions, options.inFlight);
      }
    }
    const base = setups[0]!;
    const rows = [
      [
        'setup (durable PostgreSQL, medians of alternating batches)',
        'throughput',
        'service CPU / execution',
        'vs off',
        'target',
      ],
      ...setups.map((s, i) => [
        s.name,
        `${fmt(median(s.perSecond), 0)}/s`,
        `${fmt(median(s.cpuMs), 2)} ms`,
        i === 0
          ? ''
          : `×${fmt(median(s.perSecond) / median(base.perSecond), 3)} throughput, ×${fmt(median(s.cpuMs) / median(base.cpuMs), 3)} CPU`,
        i === 1 ? 'throughput ≥ ×0.98' : '',
      ]),
    ];
    return `${table(rows)}\nOTLP bytes exported by the tracing setup: ${sink.bytes()}`;
  } finally {
    for (const timer of scrapers) clearInterval(timer);
    for (const setup of setups) await setup.system.stop();
    sink.server.close();
  }
}

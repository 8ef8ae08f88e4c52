/**
 * A runner's metrics (docs/operations.md, "Metrics"). Executions are interpreted on engine worker
 * threads, each with a prom-client registry of its own holding `ENGINE_METRICS`; every
 * SNAPSHOT_EVERY_MS a thread posts them (as JSON) to the runner's main thread, which sums them
 * with prom-client's AggregatorRegistry and adds its own: the sandbox as its threads last
 * reported it, the pools, the process. Served with the probes on `METRICS_PORT`.
 */
import { createServer, type Server } from 'node:http';
import { AggregatorRegistry, Counter, Gauge, Histogram, register, Registry } from 'prom-client';
import type { Readiness } from '../shared/probes.ts';
import type { SandboxSnapshot } from './messages.ts';

/** Names of the metrics engine threads keep; only these are taken from their reports. */
const ENGINE_METRICS = new Set(['workspace_node_run_duration_seconds', 'workspace_executions_ended_total']);

let engine: ReturnType<typeof makeEngineMetrics> | undefined;

/** On an engine worker thread: the observer its EngineContext calls, on the thread's own registry (one per thread). */
export function engineMetrics(): ReturnType<typeof makeEngineMetrics> {
  engine ??= makeEngineMetrics();
  return engine;
}

function makeEngineMetrics() {
  const nodeRuns = new Histogram({
    name: 'workspace_node_run_duration_seconds',
    help: 'Node runs by processor and outcome (finished: a route or a sleep; failed), wall time of the processor.',
    labelNames: ['processor', 'outcome'],
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
  });
  const ended = new Counter({
    name: 'workspace_executions_ended_total',
    help: 'Executions this runner ended, by status.',
    labelNames: ['status'],
  });
  return {
    observe: {
      nodeRun: (processor: string, outcome: 'finished' | 'failed', seconds: number) =>
        nodeRuns.observe({ processor, outcome }, seconds),
      executionEnded: (status: string) => ended.inc({ status }),
    },
    /** The thread's metrics as JSON, for its runner to sum. */
    report: async () => (await register.getMetricsAsJSON()).filter((m) => ENGINE_METRICS.has(m.name)),
  };
}

/** The runners of this process (one in production; tests start several), for the sandbox gauges. */
const sandboxes = new Set<() => SandboxSnapshot | null>();
function sumSandboxes(key: 'isolatesBusy' | 'isolatesIdle' | 'runsWaiting' | 'contexts'): number {
  let total = 0;
  for (const read of sandboxes) total += read()?.[key] ?? 0;
  return total;
}

new Gauge({
  name: 'workspace_sandbox_isolates',
  help: "Isolates of this runner's sandboxes by state (busy, idle), as its engine threads last reported (every 2 s).",
  labelNames: ['state'],
  collect() {
    this.set({ state: 'busy' }, sumSandboxes('isolatesBusy'));
    this.set({ state: 'idle' }, sumSandboxes('isolatesIdle'));
  },
});
new Gauge({
  name: 'workspace_sandbox_runs_waiting',
  help: 'Code runs waiting for an isolate (the fair queue).',
  collect() {
    this.set(sumSandboxes('runsWaiting'));
  },
});
new Gauge({
  name: 'workspace_sandbox_contexts',
  help: 'Organization contexts kept in the isolates.',
  collect() {
    this.set(sumSandboxes('contexts'));
  },
});

/** On the runner's main thread: the latest report of each engine thread, summed on scrape. */
export function runnerMetrics(sandbox: () => SandboxSnapshot | null) {
  const reports = new Map<number, object[]>();
  sandboxes.add(sandbox);
  return {
    report(thread: number, metrics: unknown): void {
      if (Array.isArray(metrics)) reports.set(thread, metrics as object[]);
    },
    async text(): Promise<{ contentType: string; body: string }> {
      const threads = [...reports.values()];
      const merged =
        threads.length === 0 ? register : Registry.merge([register, AggregatorRegistry.aggregate(threads)]);
      return { contentType: register.contentType, body: await merged.metrics() };
    },
    close(): void {
      sandboxes.delete(sandbox);
    },
  };
}

/** `/metrics`, `/healthz` and `/readyz` on `port` (no credentials: bind it to a private interface). */
export async function serveMetrics(
  port: number,
  host: string,
  metrics: () => Promise<{ contentType: string; body: string }>,
  readiness: () => Promise<Readiness>,
): Promise<Server> {
  const server = createServer((request, response) => {
    const path = (request.url ?? '/').split('?')[0];
    const answer = (status: number, type: string, body: string): void => {
      response.writeHead(status, { 'content-type': type }).end(body);
    };
    if (request.method !== 'GET') {
      answer(405, 'application/json', '{"status":"failure","error":"method_not_allowed"}');
    } else if (path === '/healthz') {
      answer(200, 'application/json', '{"status":"ok"}');
    } else if (path === '/readyz') {
      void readiness().then(({ ready, checks }) =>
        answer(
          ready ? 200 : 503,
          'application/json',
          JSON.stringify({ status: ready ? 'ready' : 'not_ready', checks }),
        ),
      );
    } else if (path === '/metrics') {
      void metrics().then(
        ({ contentType, body }) => answer(200, contentType, body),
        () => answer(500, 'text/plain', 'metrics failed\n'),
      );
    } else {
      answer(404, 'application/json', '{"status":"failure","error":"not_found"}');
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  return server;
}

/**
 * A runner process: registers itself in `runners` and heartbeats, and runs the execution engine
 * (runner/engine/engine.ts) on the pg-boss `executions` queue. Any number of runners may share one
 * database. `npm run runner`; `npm start` supervises one.
 *
 * A stop signal drains: no new work, nodes in flight get JOBS_GRACE_MS, what still runs then is
 * handed back to the queue. A memory bomb that makes isolated-vm lose an isolate thread costs a
 * sandbox child process of an engine thread, which is replaced in the background
 * (sandbox/sandbox-process.ts); this process goes on.
 */
import type { Server } from 'node:http';
import { hostname } from 'node:os';
import { startProcessMetrics, watchPool } from '../shared/metrics.ts';
import { readinessProbe } from '../shared/probes.ts';
import { serveMetrics } from './metrics.ts';
import type { PgBoss } from 'pg-boss';
import pino from 'pino';
import { loadConfigOrExit } from '../shared/config.ts';
import { createDb, type Db } from '../shared/db/db.ts';
import { databaseUrlFor } from '../shared/db/database-url.ts';
import { migrate } from '../shared/db/migrate.ts';
import { runEntry } from '../shared/shutdown.ts';
import { loadTracing, type ProcessTracing } from '../shared/tracing/load-tracing.ts';
import { VERSION } from '../shared/version.ts';
import { createEngine, type Engine } from './engine/engine.ts';
import { startCpuSplit } from './cpu-split.ts';
import { reclaimCpu, yieldCpu } from '../shared/priority.ts';
import { startRetentionTimer, type RetentionTimer } from './retention-timer.ts';
import type { Periodic } from '../shared/periodic.ts';
import { createBoss, createQueues } from '../shared/queue/queues.ts';
import { registerRunner, type Registration } from '../shared/runner-registry.ts';
import { createCredentialCipher } from '../shared/crypto/credential-cipher.ts';
import { createEgressPolicy } from '../shared/egress/policy.ts';
import { egressTransport } from '../shared/webhooks/egress-transport.ts';
import { DeliveryLoop } from './hooks/delivery-loop.ts';
import { sessionGraphBounds } from '../shared/graph/session-graph-usage.ts';

/** The process is out within this after a stop signal, forced if need be. */
const GRACE_MS = 7_000;
/**
 * Part of the grace left to nodes in flight before their executions are handed back; the engine
 * takes up to 1.5 s more to unwind them, the rest is for deregistering and closing.
 */
const JOBS_GRACE_MS = 3_500;
/** How often a runner looks for runners joining or leaving its host (runner/cpu-split.ts). */
const CPU_SPLIT_EVERY_MS = 2_000;

const config = loadConfigOrExit();
const log = pino({ level: config.logLevel, base: { process: 'runner', pid: process.pid } });
const databaseUrl = databaseUrlFor(config);
// Before any thread of ours starts, so that every one inherits it (shared/priority.ts).
const priority = config.runner.nice > 0 ? yieldCpu(config.runner.nice) : null;

let db: Db | undefined;
let boss: PgBoss | undefined;
let registration: Registration | undefined;
let engine: Engine | undefined;
let retention: RetentionTimer | undefined;
let deliveries: DeliveryLoop | undefined;
let cpuSplit: Periodic | null = null;
let stopping: Promise<void> | undefined;
let metricsServer: Server | undefined;
let tracing: ProcessTracing | null = null;
/** `service.name` of the runner's spans, its engine threads' included, unless OTEL_SERVICE_NAME names another. */
const SERVICE_NAME = 'workspace-runner';

/** Undoes whatever has started, in the order that keeps `stopped_at` honest. Runs once. */
function stop(): Promise<void> {
  stopping ??= (async () => {
    // The drain is bounded work with a deadline: it runs at the default priority where permitted.
    if (priority) reclaimCpu();
    await retention?.stop();
    // Attempts in flight end within HOOK_DELIVERY_SECONDS; one cut short is tried again after its lease.
    await deliveries?.stop();
    // The engine first: every execution it holds is finished or handed back before the queue goes.
    await engine?.stop(JOBS_GRACE_MS);
    await boss?.stop({ graceful: true, timeout: 1_000 });
    await cpuSplit?.stop();
    // Only after the queue stopped: `stopped_at` then means no job runs here any more.
    await registration?.stop();
    // Until here /readyz answered "stopping" (not ready); /healthz still answered.
    metricsServer?.close();
    await db?.close();
    // Last: the spans of everything above leave before the process does.
    await tracing?.tracing.shutdown();
  })();
  return stopping;
}

async function start(): Promise<void> {
  // First: only spans of what starts after it are made (shared/tracing/start-tracing.ts).
  tracing = await loadTracing(config.tracing, SERVICE_NAME);
  if (tracing && !(tracing.instrumented.http && tracing.instrumented.pg))
    log.warn(
      { instrumented: tracing.instrumented },
      'tracing could not instrument every module; their spans will be missing',
    );
  // Every process migrates: runners may start before the control plane (migrate is advisory-locked).
  await migrate(databaseUrl);
  // Claims, lease renewals, recovery and hand-backs; the engine worker threads, which interpret
  // the executions, open pools of their own.
  db = createDb({ connectionString: databaseUrl, max: 4, applicationName: 'workspace-runner' });
  startProcessMetrics();
  watchPool(db.pool);
  boss = createBoss(databaseUrl, 'runner');
  boss.on('error', (err) => log.error({ err }, 'queue error'));
  boss.on('warning', (warning) => log.warn({ warning }, 'queue warning'));
  await boss.start();
  await createQueues(boss);
  registration = await registerRunner(
    db,
    { host: hostname(), pid: process.pid, version: VERSION },
    (err) => log.warn({ err }, 'heartbeat failed'),
    () => engine?.sandbox() ?? null,
  );
  if (config.runner.cpuSplit) {
    cpuSplit = startCpuSplit({
      db,
      host: hostname(),
      runnerId: registration.id,
      everyMs: CPU_SPLIT_EVERY_MS,
      onChange: ({ cpus, runnersOnHost }) => log.info({ cpus, runners_on_host: runnersOnHost }, 'runner CPUs set'),
      onError: (err) => log.warn({ err }, 'CPU split failed'),
    });
  }
  engine = createEngine({
    db,
    boss,
    databaseUrl,
    runnerId: registration.id,
    log,
    ...(config.runner.concurrency > 0 ? { concurrency: config.runner.concurrency } : {}),
    leaseSeconds: config.runner.leaseSeconds,
    renewSeconds: config.runner.renewSeconds,
    sweepSeconds: config.runner.sweepSeconds,
    orphanSeconds: config.runner.orphanSeconds,
    codeContexts: config.runner.codeContexts,
    ...(config.runner.sandboxMemoryMb > 0 ? { sandboxMemoryMb: config.runner.sandboxMemoryMb } : {}),
    tracing: tracing?.tracing ?? null,
    threadTracing: config.tracing && { ...config.tracing, serviceName: config.tracing.serviceName ?? SERVICE_NAME },
    outside: { egress: config.egress, credentialKey: config.secrets.CREDENTIAL_KEY },
    graphBounds: sessionGraphBounds(config.storage),
    nodeRunValueBytes: config.storage.nodeRunValueBytes,
  });
  await engine.start();
  retention = startRetentionTimer(db, {
    log,
    ...(config.retention.sweepDutyPercent === null ? {} : { dutyPercent: config.retention.sweepDutyPercent }),
    backendNice: config.retention.sweepNice,
  });
  // Event hook deliveries (docs/webhooks.md, "Deliveries"), through the egress policy.
  deliveries = new DeliveryLoop({
    db,
    cipher: createCredentialCipher(config.secrets.CREDENTIAL_KEY),
    transport: egressTransport({ policy: createEgressPolicy(config.egress) }),
    log,
    inFlight: config.hooks.deliveriesInFlight,
    perOrg: config.hooks.deliveriesPerOrg,
    attemptMs: config.hooks.deliverySeconds * 1000,
  });
  deliveries.start();
  if (config.runner.metricsPort > 0) {
    const served = engine;
    metricsServer = await serveMetrics(
      config.runner.metricsPort,
      config.runner.metricsHost,
      () => served.metrics(),
      readinessProbe(db, () => stopping !== undefined),
    );
    log.info(
      { metrics: `http://${config.runner.metricsHost}:${config.runner.metricsPort}/metrics` },
      'runner metrics and probes listening',
    );
  }
  log.info(
    {
      runner_id: registration.id,
      version: VERSION,
      nice: priority?.nice ?? null,
      autogroup_nice: priority?.autogroup ?? null,
    },
    'runner started',
  );
}

runEntry({ name: 'runner', start, stop, log, graceMs: GRACE_MS });

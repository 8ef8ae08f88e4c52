/**
 * An engine thread of the engine's piscina pool (./thread-pool.ts): it interprets the
 * executions its runner claimed, node by node, with everything a node needs in the same thread —
 * the interpreter (runner/engine/interpreter.ts), the processors, a sandbox for `logic.code` (its
 * isolates in a child process of this thread: sandbox/sandbox-process.ts), and a pg pool and step
 * writer of its own for the per-node writes. An execution
 * crosses threads twice (posted in when claimed, answered when it leaves this runner) instead of
 * twice per node. The main thread keeps what is about the runner as a whole: intake and claims,
 * leases, recovery, drain.
 *
 * What the main thread decides about an execution in flight (lease lost, drain, hand-back after
 * the grace, abandon) arrives as a `WorkerSignal` on the pool's BroadcastChannel and becomes the
 * interpreter's `RunControl`. Every write is guarded by the lease in the database anyway, so a
 * signal still in transit can cost at most a write that changes nothing.
 *
 * An execution whose interpretation fails (a database error) rejects its task, and the main thread
 * gives it back. The pools are created on the first task, not at import. When
 * isolated-vm loses an isolate thread to a run (a memory bomb: docs/sandbox.md), the sandbox
 * replaces its child process and the worker tells the runner of the strike against the run's
 * organization, which is cooled down; the runner goes on.
 */
import { BroadcastChannel, parentPort, threadId, workerData } from 'node:worker_threads';
import type { PgBoss } from 'pg-boss';
import { createDb, type Db } from '../../shared/db/db.ts';
import type { JobQueue } from '../../shared/queue/execution-jobs.ts';
import { createBoss } from '../../shared/queue/queues.ts';
import type { Tracing } from '../../shared/tracing/tracing.ts';
import { getPriority } from 'node:os';
import type { CodeResult } from '../../sandbox/messages.ts';
import { ProcessSandbox } from '../../sandbox/sandbox-process.ts';
import { MAX_NICE } from '../../shared/priority.ts';
import { COOLDOWN_BASE_SECONDS } from '../../shared/sandbox/cooldowns.ts';
import { sandboxCodeRunner } from '../code-host.ts';
import { runExecution, type EngineContext, type RunControl } from './interpreter.ts';
import { engineMetrics } from '../metrics.ts';
import { createStepWriter } from './step-writes.ts';
import { processorRegistry } from '../processors/registry.ts';
import { createOutsideCalls } from '../outside/outside-calls.ts';
import {
  MAX_SNAPSHOT_TENANTS,
  SNAPSHOT_EVERY_MS,
  type EngineWorkerData,
  type ExecutionTask,
  type ExecutionTaskResult,
  type SandboxSnapshot,
  type WorkerNotice,
  type WorkerSignal,
  RUNNER_FLAG_ABANDONED,
  RUNNER_FLAG_CLOSED,
  RUNNER_FLAG_DRAINING,
} from '../messages.ts';

interface Flight {
  readonly controller: AbortController;
  dead: boolean;
}

interface WorkerState {
  db: Db;
  sandbox: ProcessSandbox;
  /** Cooled-down organizations and the end of each one's cool-down (epoch ms), as the runner last broadcast them. */
  cooldowns: Map<string, number>;
  engine: EngineContext;
  flights: Map<string, Flight>;
  draining: boolean;
  abandoned: boolean;
}

const data = workerData as EngineWorkerData;
const flags = new Int32Array(data.flags);
/**
 * The runner was abandoned, or its pool is closing (the sandbox is disposed under the runs: a
 * run's "stopped during the run" is the shutdown's, never the node's outcome). Read from shared
 * memory, set before the broadcast: a signal posted while this thread was still opening its
 * channel never arrives, and 'close' may then be the first signal it sees.
 */
function runnerGone(): boolean {
  return Atomics.load(flags, RUNNER_FLAG_ABANDONED) === 1 || Atomics.load(flags, RUNNER_FLAG_CLOSED) === 1;
}
/**
 * The sandbox child runs this much nicer than its engine thread: code that spins for its whole
 * `workflow.code_run_seconds` must not slow the interpreter, claims and leases of every other
 * organization's executions (bench/isolation.ts, the `for (;;) {}` neighbour).
 */
const SANDBOX_NICE_STEP = 5;
/** statement_timeout of the worker's connections: its executions' step writes and their code's ctx calls. */
const HOST_STATEMENT_MS = 30_000;
let state: Promise<WorkerState> | undefined;

function notify(notice: WorkerNotice): void {
  parentPort?.postMessage(notice);
}

function describe(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}

/** The failure of a run whose organization is cooled down, or null to run it. */
function cooledDown(cooldowns: ReadonlyMap<string, number>, tenant: string | undefined): CodeResult | null {
  const until = tenant === undefined ? undefined : cooldowns.get(tenant);
  if (until === undefined || until <= Date.now()) return null;
  const message = `This organization's code is cooled down until ${new Date(until).toISOString()}: its code made the sandbox lose an isolate (a memory bomb). Each further one doubles the cool-down, up to an hour.`;
  return {
    kind: 'error',
    error: { code: 'code_cooldown', message },
    stats: { wallMs: 0, cpuMs: 0, hostCalls: 0, logs: 0, logsDropped: 0 },
  };
}

/**
 * The worker's pg-boss, started at its first send: it only ever sends (a sleep's wake-up, a
 * hand-back) on a transaction of the worker's own pool. No maintenance, no cron, no schema work:
 * the runner's main instance does those.
 */
function jobSender(): JobQueue {
  let started: Promise<PgBoss> | undefined;
  const start = async () => {
    const boss = createBoss(data.databaseUrl, 'sender');
    boss.on('error', (error) => notify({ type: 'host_error', message: `queue: ${describe(error)}` }));
    await boss.start();
    return boss;
  };
  return {
    async send(name, payload, options) {
      started ??= start().catch((error: unknown) => {
        started = undefined;
        throw error;
      });
      return (await started).send(name, payload ?? null, options ?? undefined);
    },
  };
}

/** This thread's tracer when the runner traces; the SDK is imported only then. */
async function threadTracing(): Promise<Tracing | null> {
  if (data.tracing === null) return null;
  try {
    const { startThreadTracing } = await import('../../shared/tracing/start-thread-tracing.ts');
    return startThreadTracing(data.tracing);
  } catch (error) {
    // Executions run untraced rather than not at all.
    notify({ type: 'host_error', message: `tracing could not start in an engine thread: ${describe(error)}` });
    return null;
  }
}

async function open(): Promise<WorkerState> {
  const tracing = await threadTracing();
  // A ctx call waits on the database at most HOST_STATEMENT_MS (a lock held elsewhere, a slow
  // graph query), far less than workflow.code_run_seconds: a run waiting on host calls holds its
  // isolate only that long per call (docs/sandbox.md, "Hostile code").
  const db = createDb({
    connectionString: data.databaseUrl,
    max: data.connections,
    applicationName: 'workspace-runner-worker',
    statementTimeoutMs: HOST_STATEMENT_MS,
  });
  const cooldowns = new Map<string, number>();
  // Set here the moment a strike happens, before the runner has recorded it and broadcast the
  // cool-downs (the broadcast replaces `cooldowns`); expires by itself.
  const provisional = new Map<string, number>();
  // The isolates live in a child process that is replaced when isolated-vm loses one of its
  // threads (sandbox/sandbox-process.ts): a memory bomb costs its organization a strike, not the
  // runner its process.
  const sandbox = new ProcessSandbox({
    pool: { size: data.isolates, memoryMb: data.memoryMb, contexts: data.contexts },
    nice: Math.min(MAX_NICE, getPriority(0) + SANDBOX_NICE_STEP),
    refuse: (request) => cooledDown(cooldowns, request.tenant) ?? cooledDown(provisional, request.tenant),
    memory: data.memoryBound,
    onDegraded: (reason, tenant) => {
      // Refused here at once; the runner records the strike and broadcasts the cool-down it sets.
      if (tenant !== undefined) provisional.set(tenant, Date.now() + COOLDOWN_BASE_SECONDS * 1000);
      notify({ type: 'strike', tenant: tenant ?? null, reason });
    },
    log: (message, fields) => notify({ type: 'sandbox_event', message, fields: JSON.stringify(fields) }),
  });
  void sandbox.warm();
  const outside = data.outside ? createOutsideCalls(db, data.outside) : undefined;
  const code = sandboxCodeRunner(
    db,
    sandbox,
    data.graphBounds,
    (error) => notify({ type: 'host_error', message: describe(error) }),
    outside,
  );
  const flights = new Map<string, Flight>();
  const metrics = engineMetrics();
  const engine: EngineContext = {
    db,
    queue: jobSender(),
    runnerId: data.runnerId,
    writes: createStepWriter(db, { runnerId: data.runnerId, leaseSeconds: data.leaseSeconds }),
    processors: processorRegistry,
    code,
    outside,
    graphBounds: data.graphBounds,
    nodeRunValueBytes: data.nodeRunValueBytes,
    leaseSeconds: data.leaseSeconds,
    maxRecoveries: data.maxRecoveries,
    onProcessorError: (error, node, execution) =>
      notify({
        type: 'processor_error',
        node,
        message: describe(error),
        execution_id: execution.id,
        traceparent: execution.traceparent,
      }),
    observe: metrics.observe,
    tracing,
  };
  const worker: WorkerState = {
    db,
    sandbox,
    cooldowns,
    engine,
    flights,
    draining: Atomics.load(flags, RUNNER_FLAG_DRAINING) === 1,
    abandoned: runnerGone(),
  };
  const snapshots = setInterval(() => {
    notify({ type: 'sandbox', thread: threadId, snapshot: snapshotOf(sandbox) });
    void metrics.report().then((report) => notify({ type: 'metrics', thread: threadId, metrics: report }));
  }, SNAPSHOT_EVERY_MS);
  snapshots.unref();

  const channel = new BroadcastChannel(data.channel);
  channel.unref();
  channel.onmessage = (event) => {
    const signal = (event as { data?: WorkerSignal }).data;
    switch (signal?.type) {
      case 'lost':
        for (const id of signal.executionIds) flights.get(id)?.controller.abort();
        return;
      case 'drain':
        worker.draining = true;
        return;
      case 'cooldowns':
        for (const [orgId, until] of provisional) if (until <= Date.now()) provisional.delete(orgId);
        cooldowns.clear();
        for (const [orgId, until] of Object.entries(signal.until)) cooldowns.set(orgId, until);
        return;
      case 'dead':
        if (signal.executionIds === 'all') worker.abandoned = true;
        for (const [id, flight] of flights) {
          if (signal.executionIds !== 'all' && !signal.executionIds.includes(id)) continue;
          flight.dead = true;
          flight.controller.abort();
        }
        return;
      case 'close':
        close();
        return;
    }
  };
  let closed = false;
  const close = () => {
    if (closed) return;
    closed = true;
    // Nothing that ends because of the close is written (runnerGone() is true from here on).
    worker.abandoned = true;
    for (const flight of flights.values()) flight.dead = true;
    // Runs in progress end at once (internal_error) and no isolate thread outlives its environment.
    clearInterval(snapshots);
    channel.close();
    void sandbox.dispose();
    // Spans still buffered leave now, while the pool waits for the runs to come back.
    void tracing?.shutdown().catch(() => {});
  };
  // Closed while this thread was opening: its 'close' was posted before the channel existed.
  if (Atomics.load(flags, RUNNER_FLAG_CLOSED) === 1) close();
  return worker;
}

async function runExecutionTask(worker: WorkerState, task: ExecutionTask): Promise<ExecutionTaskResult> {
  const { execution } = task;
  const flight: Flight = { controller: new AbortController(), dead: worker.abandoned };
  worker.flights.set(execution.id, flight);
  const control: RunControl = {
    signal: flight.controller.signal,
    get yielding() {
      return worker.draining || Atomics.load(flags, RUNNER_FLAG_DRAINING) === 1;
    },
    get dead() {
      return flight.dead || worker.abandoned || runnerGone();
    },
  };
  let wakeAt: Date | undefined;
  const engine: EngineContext = {
    ...worker.engine,
    onParked: (at) => {
      wakeAt = at;
    },
  };
  try {
    // A database failure rejects the task: the runner gives the execution back, as it does when
    // this thread dies under it.
    const outcome = await runExecution(engine, execution, control);
    return wakeAt && outcome === 'parked' ? { outcome, wakeAt: wakeAt.toISOString() } : { outcome };
  } finally {
    if (worker.flights.get(execution.id) === flight) worker.flights.delete(execution.id);
  }
}

/** What the ops API shows of this thread's sandbox: isolates, and the organizations holding or waiting for them. */
function snapshotOf(sandbox: ProcessSandbox): SandboxSnapshot {
  const stats = sandbox.stats().pool ?? {
    live: 0,
    busy: 0,
    idle: 0,
    waiting: 0,
    contexts: 0,
    contextsCreated: 0,
    contextsReused: 0,
    recycled: 0,
    tenants: [],
  };
  const tenants = stats.tenants
    .filter((row) => row.tenant !== '')
    .sort((a, b) => b.waiting + b.busy - (a.waiting + a.busy))
    .slice(0, MAX_SNAPSHOT_TENANTS)
    .map((row) => ({ orgId: row.tenant, waiting: row.waiting, busy: row.busy }));
  return {
    isolatesLive: stats.live,
    isolatesBusy: stats.busy,
    isolatesIdle: stats.idle,
    runsWaiting: stats.waiting,
    contexts: stats.contexts,
    contextsMade: stats.contextsCreated,
    contextsReused: stats.contextsReused,
    isolatesRecycled: stats.recycled,
    memoryKills: sandbox.stats().memoryKills,
    tenants,
  };
}

/** piscina's task handler. Rejects only for database failures, never for anything an execution's code does. */
export default async function handleTask(task: ExecutionTask): Promise<ExecutionTaskResult> {
  // A failed start is not kept: the next task tries again.
  state ??= open().catch((error: unknown) => {
    state = undefined;
    throw error;
  });
  const worker = await state;
  return runExecutionTask(worker, task);
}

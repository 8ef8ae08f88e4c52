/**
 * The engine of a runner process: the work loop (intake), the lease keeper, the recovery sweep,
 * the queue statistics and the engine thread pool (./thread-pool.ts), wired together with start /
 * stop / abandon. Claimed executions are interpreted on the pool's threads (./engine-thread.ts);
 * an engine given an interpreter of its own (tests: test/helpers/this-thread.ts) uses it instead.
 * runner/main.ts builds one per process; tests build them in-process against their own database
 * (test/helpers/runner.ts). It owns none of `db` and `boss`: the caller opens and closes them.
 */
import { runnerMetrics } from '../metrics.ts';
import { availableParallelism } from 'node:os';
import type { PgBoss } from 'pg-boss';
import type { Db } from '../../shared/db/db.ts';
import { RUNNER_TIMING_DEFAULTS } from '../../shared/runner-timings.ts';
import { EngineThreadPool } from './thread-pool.ts';
import type { ContextScope } from '../../sandbox/isolate-pool.ts';
import { defaultMemoryBoundMb, planMemoryBound, type MemoryBoundPlan } from '../../sandbox/memory-bound.ts';
import {
  MAX_SNAPSHOT_TENANTS,
  type ExecutionTaskResult,
  type RunnerSandboxReport,
  type SandboxSnapshot,
  type WorkerTracingSettings,
} from '../messages.ts';
import { executionLogFields, type Tracing } from '../../shared/tracing/tracing.ts';
import type { OutsideSettings } from '../outside/outside-calls.ts';
import { DEFAULT_SESSION_GRAPH_BOUNDS, type SessionGraphBounds } from '../../shared/graph/session-graph-usage.ts';
import { DEFAULT_NODE_RUN_VALUE_BYTES } from '../../shared/workflow/run-values.ts';
import { CooldownKeeper } from './cooldown-keeper.ts';
import { CancelListener } from './cancel-listener.ts';
import type { ClaimedExecution } from './claim.ts';
import type { RunControl } from './interpreter.ts';
import { LeaseKeeper } from './lease-keeper.ts';
import { giveUp, handBack } from './persist.ts';
import { QueueStatistics } from './queue-statistics.ts';
import { RecoverySweep } from './recovery.ts';
import { WakeListener } from './wake-listener.ts';
import { WorkLoop } from './work-loop.ts';
import { FireLoop } from '../scheduler/fire-loop.ts';

/** The subset of a pino logger the engine uses. */
interface EngineLog {
  debug(fields: Record<string, unknown>, message: string): void;
  info(fields: Record<string, unknown>, message: string): void;
  warn(fields: Record<string, unknown>, message: string): void;
  error(fields: Record<string, unknown>, message: string): void;
}

/** Timings and sizes of the engine; every field has a production default (docs/architecture.md). */
export interface EngineTuning {
  /** Executions worked on at once. Default 128. */
  concurrency?: number;
  /** Wake-ups fetched per batch. Default 32. */
  batchSize?: number;
  /** Backstop poll of the queue, seconds (≥ 0.5). Default 2. */
  pollSeconds?: number;
  /** Lease of a claimed execution, seconds. Default 10 (RUNNER_TIMING_DEFAULTS, as the next three). */
  leaseSeconds?: number;
  /** Lease renewal period, seconds. Default 3. */
  renewSeconds?: number;
  /** Recovery sweep period, seconds. Default 5. */
  sweepSeconds?: number;
  /** Grace before an unheld execution without a pending wake-up gets a new one, seconds. Default 30. */
  orphanSeconds?: number;
  /** Crash recoveries without progress before an execution ends failed. Default 3. */
  maxRecoveries?: number;
  /** ANALYZE of the job table at least this often, seconds. Default 60. */
  analyzeSeconds?: number;
  /** …or after this many jobs handled here. Default 10,000. */
  analyzeJobs?: number;
  /** Engine worker threads. Default: half the CPU count, 1 to 4 (isolated-vm runs the code on threads of its own). */
  workerThreads?: number;
  /** Isolates (concurrent code runs) per worker thread. Default 4. */
  isolatesPerThread?: number;
  /** Heap bound per isolate, MiB. Default 64. */
  codeMemoryMb?: number;
  /**
   * Memory bound of each sandbox child process, MiB (SANDBOX_MEMORY_MB; sandbox/memory-bound.ts).
   * Default: defaultMemoryBoundMb of its isolates (1,280 at the defaults).
   */
  sandboxMemoryMb?: number;
  /** Whose runs a `logic.code` context serves (sandbox/isolate-pool.ts, `contexts`). Default 'shared'. */
  codeContexts?: ContextScope;
  /** Take schedule fires too (runner/scheduler/fire-loop.ts). Default true. */
  fires?: boolean;
  /** How often overdue schedule fires are looked for, seconds. Default 30. */
  fireReconcileSeconds?: number;
}

export interface EngineOptions extends EngineTuning {
  db: Db;
  boss: PgBoss;
  /** Where the worker threads open their own connections. */
  databaseUrl: string;
  /** This runner's id (its `runners` row): the lease owner of what it claims. */
  runnerId: string;
  log: EngineLog;
  /**
   * Interprets claimed executions elsewhere than on the engine threads: tests that bring processors
   * of their own interpret on their own thread (test/helpers/this-thread.ts). Default: the engine
   * threads, with runner/processors/registry.ts.
   */
  interpreter?: (engine: InterpreterParts) => Interpret;
  /**
   * Tracing (docs/operations.md, "Tracing"): `tracing` makes this thread's spans (schedule fires,
   * executions interpreted here), `threadTracing` is what each engine worker thread starts its own
   * tracer with. Null or absent: off.
   */
  tracing?: Tracing | null;
  threadTracing?: WorkerTracingSettings | null;
  /**
   * Outside calls and stored credentials (runner/outside/outside-calls.ts): the egress policy and
   * `CREDENTIAL_KEY`. Absent: `http.request` nodes fail `processor_unavailable` and `ctx.fetch` /
   * `ctx.credentials.get` refuse.
   */
  outside?: OutsideSettings | null;
  /**
   * What a session graph may hold (GRAPH_ELEMENTS_PER_SESSION, GRAPH_BYTES_PER_SESSION), for
   * `graph.mutate` nodes and `ctx.graph.mutate`. Absent: the configuration's defaults.
   */
  graphBounds?: SessionGraphBounds;
  /** NODE_RUN_VALUE_BYTES: how much of a node run's input and output its event keeps. Absent: the default. */
  nodeRunValueBytes?: number;
}

/**
 * Interprets one claimed execution until it leaves this runner (ended, parked, handed back, lost);
 * rejects for database failures and for an engine thread that died.
 */
type Interpret = (execution: ClaimedExecution, control: RunControl) => Promise<ExecutionTaskResult>;

/** What the engine gives an interpreter of the caller's (`EngineOptions.interpreter`). */
interface InterpreterParts {
  db: Db;
  boss: PgBoss;
  runnerId: string;
  leaseSeconds: number;
  maxRecoveries: number;
  /** Arms the wake-up timer of an execution that parked. */
  onParked(wakeAt: Date): void;
  log: EngineLog;
  tracing: Tracing | null;
  outside: OutsideSettings | null;
  graphBounds: SessionGraphBounds;
  nodeRunValueBytes: number;
}

interface EngineStats {
  inFlight: number;
  leases: number;
}

export interface Engine {
  readonly id: string;
  start(): Promise<void>;
  /**
   * Drains: stops fetching, lets nodes in flight finish for up to `graceMs` (each execution is
   * handed back at its next node boundary), then hands back whatever still runs, so no execution
   * is left `running` under a runner that is gone. Idempotent.
   */
  stop(graceMs?: number): Promise<void>;
  /** Simulates a kill -9 (tests): stops everything at once and writes nothing more; leases run out. */
  abandon(): Promise<void>;
  stats(): EngineStats;
  /**
   * The sandbox of every engine worker thread, summed (each at most `SNAPSHOT_EVERY_MS` old), with
   * how its children's memory is bounded; null before the first snapshot.
   */
  sandbox(): RunnerSandboxReport | null;
  /** This runner's metrics in Prometheus's text format (runner/metrics.ts), with the process's. */
  metrics(): Promise<{ contentType: string; body: string }>;
}

/** How often a runner reads the organizations cooled down (besides right after a strike of its own). */
const COOLDOWN_REFRESH_MS = 5_000;

/** One snapshot for the runner: counts summed, organizations merged, the busiest first. */
function sumSnapshots(list: SandboxSnapshot[]): SandboxSnapshot | null {
  if (list.length === 0) return null;
  const tenants = new Map<string, { orgId: string; waiting: number; busy: number }>();
  for (const snapshot of list) {
    for (const row of snapshot.tenants) {
      const sum = tenants.get(row.orgId) ?? { orgId: row.orgId, waiting: 0, busy: 0 };
      sum.waiting += row.waiting;
      sum.busy += row.busy;
      tenants.set(row.orgId, sum);
    }
  }
  const total = (
    key:
      | 'isolatesLive'
      | 'isolatesBusy'
      | 'isolatesIdle'
      | 'runsWaiting'
      | 'contexts'
      | 'contextsMade'
      | 'contextsReused'
      | 'isolatesRecycled'
      | 'memoryKills',
  ) => list.reduce((n, s) => n + s[key], 0);
  return {
    isolatesLive: total('isolatesLive'),
    isolatesBusy: total('isolatesBusy'),
    isolatesIdle: total('isolatesIdle'),
    runsWaiting: total('runsWaiting'),
    contexts: total('contexts'),
    contextsMade: total('contextsMade'),
    contextsReused: total('contextsReused'),
    isolatesRecycled: total('isolatesRecycled'),
    memoryKills: total('memoryKills'),
    tenants: [...tenants.values()]
      .sort((a, b) => b.waiting + b.busy - (a.waiting + a.busy))
      .slice(0, MAX_SNAPSHOT_TENANTS),
  };
}

interface Flight {
  execution: ClaimedExecution;
  controller: AbortController;
  /** Stops working on the execution: its lease is gone (cancel, takeover). */
  lost: () => void;
  dead: boolean;
  done: Promise<void>;
}

const DEFAULT_GRACE_MS = 5_000;
/** How long stop() waits for runs it handed back to unwind before closing their code pool. */
const UNWIND_MS = 1_500;
/** Most local wake-up timers kept for parked executions; later ones rely on polling. */
const MAX_WAKE_TIMERS = 10_000;

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

/** Builds a runner engine; nothing starts until `start()`. */
export function createEngine(options: EngineOptions): Engine {
  const { db, boss, runnerId, log } = options;
  const concurrency = Math.max(1, options.concurrency ?? 128);
  const leaseSeconds = Math.max(1, options.leaseSeconds ?? RUNNER_TIMING_DEFAULTS.leaseSeconds);
  const flights = new Map<string, Flight>();
  const wakeTimers = new Set<NodeJS.Timeout>();
  let draining = false;
  let abandoned = false;
  let started = false;
  let stopping: Promise<void> | undefined;

  const maxRecoveries = options.maxRecoveries ?? 3;
  const isolatesPerThread = options.isolatesPerThread ?? 4;
  const codeMemoryMb = options.codeMemoryMb ?? 64;
  // A child may grow to twice its pool's size in isolates (sandbox/isolate-pool.ts, maxIsolates).
  const sandboxMemoryMb = options.sandboxMemoryMb || defaultMemoryBoundMb(2 * isolatesPerThread, codeMemoryMb);
  let memoryBound: MemoryBoundPlan | undefined;
  const pool = new EngineThreadPool({
    databaseUrl: options.databaseUrl,
    runnerId,
    leaseSeconds,
    maxRecoveries,
    concurrency,
    threads: options.workerThreads ?? Math.max(1, Math.min(4, Math.floor(availableParallelism() / 2))),
    isolatesPerThread,
    memoryMb: codeMemoryMb,
    contexts: options.codeContexts ?? 'shared',
    tracing: options.threadTracing ?? null,
    outside: options.outside ?? null,
    graphBounds: options.graphBounds ?? DEFAULT_SESSION_GRAPH_BOUNDS,
    nodeRunValueBytes: options.nodeRunValueBytes ?? DEFAULT_NODE_RUN_VALUE_BYTES,
    onNotice(notice) {
      switch (notice.type) {
        case 'sandbox':
          snapshots.set(notice.thread, notice.snapshot);
          return;
        case 'metrics':
          metrics.report(notice.thread, notice.metrics);
          return;
        case 'sandbox_event':
          log.info({ runner_id: runnerId, ...(JSON.parse(notice.fields) as Record<string, unknown>) }, notice.message);
          return;
        case 'strike':
          log.error(
            { runner_id: runnerId, org_id: notice.tenant, reason: notice.reason },
            "an organization's code made the sandbox lose an isolate; cooling the organization down",
          );
          if (notice.tenant !== null) cooldowns.strike(notice.tenant, notice.reason);
          return;
        case 'host_error':
          log.warn({ runner_id: runnerId, error: notice.message }, 'a logic.code host call failed');
          return;
        case 'processor_error':
          log.error(
            {
              err: notice.message,
              node: notice.node,
              ...executionLogFields({ id: notice.execution_id, traceparent: notice.traceparent }),
              runner_id: runnerId,
            },
            'processor failed unexpectedly',
          );
          return;
      }
    },
  });

  const leases = new LeaseKeeper({
    db,
    runnerId,
    leaseSeconds,
    renewSeconds: options.renewSeconds ?? RUNNER_TIMING_DEFAULTS.renewSeconds,
    onError: (err) => log.warn({ err, runner_id: runnerId }, 'lease renewal failed; retrying'),
  });

  const metrics = runnerMetrics(() => sumSnapshots([...snapshots.values()]));

  /** The latest sandbox snapshot of each engine worker thread. */
  const snapshots = new Map<number, SandboxSnapshot>();
  const cooldowns = new CooldownKeeper({
    db,
    everyMs: COOLDOWN_REFRESH_MS,
    broadcast: (until) => pool.signal({ type: 'cooldowns', until }),
    onStrike: (cooldown) =>
      log.warn(
        { runner_id: runnerId, org_id: cooldown.orgId, strikes: cooldown.strikes, until: cooldown.until },
        'organization cooled down',
      ),
    onError: (err) => log.warn({ err, runner_id: runnerId }, 'reading or recording cool-downs failed; retrying'),
  });

  const cancels = new CancelListener({
    databaseUrl: options.databaseUrl,
    // The cancel already ended the row; what the node does next is discarded by the lease guard.
    onCancelled: (executionId) => flights.get(executionId)?.lost(),
    onError: (err) => log.warn({ err, runner_id: runnerId }, 'cancel listener connection failed; reconnecting'),
  });

  function onParked(wakeAt: Date): void {
    if (draining || abandoned || wakeTimers.size >= MAX_WAKE_TIMERS) return;
    // The delayed job is due at wakeAt; fetch then rather than at the next poll.
    const timer = setTimeout(
      () => {
        wakeTimers.delete(timer);
        workLoop.wake();
      },
      Math.max(0, wakeAt.getTime() - Date.now()) + 20,
    );
    timer.unref();
    wakeTimers.add(timer);
  }

  /** Interprets on an engine thread; rejects for database failures and for a thread that died. */
  async function interpretOnThreads(execution: ClaimedExecution): Promise<ExecutionTaskResult> {
    const result = await pool.execute(execution);
    if (result.wakeAt !== undefined) onParked(new Date(result.wakeAt));
    return result;
  }

  const interpret: Interpret =
    options.interpreter?.({
      db,
      boss,
      runnerId,
      leaseSeconds,
      maxRecoveries,
      onParked,
      log,
      tracing: options.tracing ?? null,
      outside: options.outside ?? null,
      graphBounds: options.graphBounds ?? DEFAULT_SESSION_GRAPH_BOUNDS,
      nodeRunValueBytes: options.nodeRunValueBytes ?? DEFAULT_NODE_RUN_VALUE_BYTES,
    }) ?? interpretOnThreads;

  async function execute(execution: ClaimedExecution): Promise<void> {
    const controller = new AbortController();
    const onLost = () => {
      if (controller.signal.aborted) return;
      controller.abort();
      pool.signal({ type: 'lost', executionIds: [execution.id] });
    };
    const flight: Flight = { execution, controller, lost: onLost, dead: false, done: Promise.resolve() };
    // What an interpreter on this thread reads; the engine threads learn the same by WorkerSignal.
    const control: RunControl = {
      signal: controller.signal,
      get yielding() {
        return draining;
      },
      get dead() {
        return flight.dead || abandoned;
      },
    };
    flights.set(execution.id, flight);
    leases.hold(execution.id, onLost);
    flight.done = (async () => {
      let outcome: ExecutionTaskResult['outcome'] | 'failed' = 'failed';
      try {
        outcome = (await interpret(execution, control)).outcome;
      } catch (err) {
        log.error(
          { err, ...executionLogFields(execution), runner_id: runnerId },
          'execution run failed; giving it back',
        );
        if (!flight.dead && !abandoned) {
          const holder = { executionId: execution.id, runnerId, leaseSeconds };
          // If even this fails, the lease runs out and the recovery sweep takes over.
          await db
            .transaction((tx) => giveUp(tx, boss, holder))
            .catch((giveUpError: unknown) =>
              log.warn({ err: giveUpError, ...executionLogFields(execution) }, 'giving the execution back failed'),
            );
        }
      } finally {
        leases.release(execution.id, onLost);
        if (flights.get(execution.id) === flight) flights.delete(execution.id);
      }
      log.debug({ ...executionLogFields(execution), outcome, runner_id: runnerId }, 'execution left the runner');
    })();
    await flight.done;
  }

  const stats = new QueueStatistics({
    db,
    boss,
    everySeconds: options.analyzeSeconds ?? 60,
    everyJobs: options.analyzeJobs ?? 10_000,
    onError: (err) => log.warn({ err }, 'ANALYZE of the job table failed'),
    onAnalyzed: (table) => log.debug({ table }, 'job table analyzed'),
  });

  const workLoop = new WorkLoop({
    boss,
    db,
    runnerId,
    leaseSeconds,
    concurrency,
    batchSize: options.batchSize ?? 32,
    pollSeconds: Math.max(0.5, options.pollSeconds ?? 2),
    maxRecoveries,
    execute,
    inFlight: (id) => flights.has(id),
    onJobs: (count) => stats.count(count),
    onError: (err) => log.warn({ err }, 'a deferred or early wake-up could not be handled; the recovery sweep will'),
  });

  const wakeUps = new WakeListener({
    databaseUrl: options.databaseUrl,
    onCreated: (executionId) => workLoop.announce(executionId),
    onQueued: () => workLoop.queued(),
    onError: (err) => log.warn({ err, runner_id: runnerId }, 'wake-up listener connection failed; reconnecting'),
  });

  // The scheduler's fires ride on the same runner (docs/scheduler.md); tests of the engine alone turn them off.
  const fires =
    options.fires === false
      ? null
      : new FireLoop({
          db,
          boss,
          log,
          tracing: options.tracing ?? null,
          ...(options.fireReconcileSeconds !== undefined ? { reconcileSeconds: options.fireReconcileSeconds } : {}),
        });

  const recovery = new RecoverySweep({
    db,
    queue: boss,
    sweepSeconds: options.sweepSeconds ?? RUNNER_TIMING_DEFAULTS.sweepSeconds,
    orphanSeconds: options.orphanSeconds ?? RUNNER_TIMING_DEFAULTS.orphanSeconds,
    onError: (err) => log.warn({ err }, 'recovery sweep failed'),
    onRecovered: (ids) => log.info({ execution_ids: ids }, 'woke stranded executions'),
  });

  function clearWakeTimers(): void {
    for (const timer of wakeTimers) clearTimeout(timer);
    wakeTimers.clear();
  }

  async function allLeft(ms: number): Promise<boolean> {
    const waiting = Promise.all([...flights.values()].map((flight) => flight.done)).then(() => true);
    return Promise.race([waiting, delay(ms).then(() => false)]);
  }

  return {
    id: runnerId,

    async start() {
      if (started) return;
      started = true;
      memoryBound = await planMemoryBound(sandboxMemoryMb);
      log.info(
        {
          runner_id: runnerId,
          mechanism: memoryBound.mechanism,
          bound_mib: memoryBound.boundMb,
          detail: memoryBound.detail,
        },
        'sandbox children memory bound',
      );
      pool.start(memoryBound);
      cancels.start();
      cooldowns.start();
      leases.start();
      recovery.start();
      stats.start();
      // LISTEN first: a wake-up sent between the intake's first fetch and LISTEN would otherwise
      // wait for the next poll; one sent before the first fetch is found by it.
      await wakeUps.start();
      await workLoop.start();
      await fires?.start();
    },

    stop(graceMs = DEFAULT_GRACE_MS) {
      stopping ??= (async () => {
        draining = true;
        metrics.close();
        pool.signal({ type: 'drain' });
        clearWakeTimers();
        await Promise.all([recovery.stop(), stats.stop()]);
        await fires?.stop().catch((err: unknown) => log.warn({ err }, 'stopping the schedule fires failed'));
        await wakeUps.stop();
        await workLoop.stop().catch((err: unknown) => log.warn({ err }, 'stopping the intake failed'));
        if (!(await allLeft(graceMs))) {
          // Nodes still running past the grace period: hand their executions back now, so another
          // runner resumes them from the last persisted node; what these runs do next is discarded.
          pool.signal({ type: 'dead', executionIds: [...flights.keys()] });
          for (const flight of flights.values()) {
            flight.dead = true;
            flight.controller.abort();
            const holder = { executionId: flight.execution.id, runnerId, leaseSeconds };
            await db
              .transaction((tx) => handBack(tx, boss, holder))
              .catch((err: unknown) =>
                log.warn({ err, ...executionLogFields(flight.execution) }, 'hand-back failed; the lease will run out'),
              );
          }
        }
        await leases.stop();
        await cancels.stop();
        await cooldowns.stop();
        await pool.destroy();
        await allLeft(UNWIND_MS);
      })();
      return stopping;
    },

    async abandon() {
      metrics.close();
      if (abandoned) return;
      abandoned = true;
      stopping ??= Promise.resolve();
      draining = true;
      pool.signal({ type: 'dead', executionIds: 'all' });
      clearWakeTimers();
      await leases.stop();
      await cancels.stop();
      await cooldowns.stop();
      await Promise.all([recovery.stop(), stats.stop()]);
      await fires?.stop().catch(() => {});
      await wakeUps.stop();
      await workLoop.stop().catch(() => {});
      await pool.destroy();
      await allLeft(UNWIND_MS);
    },

    stats: () => ({ inFlight: flights.size, leases: leases.size }),
    sandbox: () => {
      const sum = sumSnapshots([...snapshots.values()]);
      if (!sum || !memoryBound) return null;
      const { mechanism, boundMb, detail } = memoryBound;
      return { ...sum, memoryBound: { mechanism, boundMb, detail } };
    },
    metrics: () => metrics.text(),
  };
}

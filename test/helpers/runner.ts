import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { PgBoss } from 'pg-boss';
import pino from 'pino';
import type { Test } from 'tap';
import { createEngine, type Engine, type EngineOptions, type EngineTuning } from '../../runner/engine/engine.ts';
import type { Processor } from '../../runner/processors/processor.ts';
import { createBoss, createQueues } from '../../shared/queue/queues.ts';
import { createDb, type Db } from '../../shared/db/db.ts';
import { call, type Caller } from './app.ts';
import { createBlob, createOrg } from './resources.ts';
import { onThisThread } from './this-thread.ts';

/** Timings that keep tests quick: polls, sweeps and renewals well under a second. */
export const FAST: EngineTuning = {
  pollSeconds: 0.5,
  sweepSeconds: 0.5,
  renewSeconds: 1,
  orphanSeconds: 2,
  workerThreads: 1,
  isolatesPerThread: 2,
};

export interface TestEngine {
  readonly engine: Engine;
  readonly id: string;
  readonly db: Db;
  readonly boss: PgBoss;
  /** Drains like SIGTERM (`graceMs` for nodes in flight), then closes its queue and pool. */
  stop(graceMs?: number): Promise<void>;
  /** A simulated kill -9: nothing more is written, leases are not handed back, connections close. */
  kill(): Promise<void>;
}

export interface TestEngineOptions extends EngineTuning, Pick<EngineOptions, 'outside'> {
  /** Processors of the test's: executions are then interpreted on the test's thread (./this-thread.ts). */
  processors?: ReadonlyMap<string, Processor>;
}

/**
 * Starts a runner's engine in this process (no runner process: see bench/system.ts for those) on
 * `databaseUrl`, with a pool and a pg-boss of its own as a runner process has, with FAST timings
 * unless `options` say otherwise. Stopped at teardown.
 */
export async function startEngine(t: Test, databaseUrl: string, options: TestEngineOptions = {}): Promise<TestEngine> {
  const db = createDb({ connectionString: databaseUrl, max: 8, applicationName: 'test-runner' });
  const boss = createBoss(databaseUrl, 'runner');
  boss.on('error', () => {});
  await boss.start();
  await createQueues(boss);
  const id = randomUUID();
  const { processors, ...tuning } = options;
  const interpreter = processors ? { interpreter: onThisThread(t, processors) } : {};
  const runner = createEngine({
    ...FAST,
    ...tuning,
    ...interpreter,
    db,
    boss,
    databaseUrl,
    runnerId: id,
    log: pino({ level: process.env.TEST_RUNNER_LOG ?? 'silent' }),
  });
  await runner.start();
  let closed: Promise<void> | undefined;
  const close = (how: () => Promise<void>) => {
    closed ??= (async () => {
      await how();
      await boss.stop({ graceful: false });
      await db.close();
    })();
    return closed;
  };
  const handle: TestEngine = {
    engine: runner,
    id,
    db,
    boss,
    stop: (graceMs = 5_000) => close(() => runner.stop(graceMs)),
    kill: () => close(() => runner.abandon()),
  };
  t.teardown(() => handle.stop());
  return handle;
}

/**
 * One engine for the subtests of a file that need nothing of their own from it: an engine's first
 * run starts its thread and sandbox process, seconds of CPU each time. `get` starts it on first
 * use (stopped at `t`'s teardown); `stop` stops it before a subtest that needs to be without it
 * (an engine of its own, or none), and the next `get` starts another.
 */
export function fileEngine(t: Test, databaseUrl: string): { get(): Promise<TestEngine>; stop(): Promise<void> } {
  let shared: Promise<TestEngine> | undefined;
  return {
    get: () => (shared ??= startEngine(t, databaseUrl)),
    stop: async () => {
      const running = shared;
      shared = undefined;
      await (await running)?.stop();
    },
  };
}

/** A workflow blob of `caller`'s with one session, ready for definitions and executions. */
export interface Workflow {
  orgId: string;
  blobId: string;
  rev: string;
  sessionId: string;
}

/** Creates an organization, a workflow blob and a session through the API. */
export async function createWorkflow(app: FastifyInstance, caller: Caller): Promise<Workflow> {
  const org = await createOrg(app, caller);
  const { blob, revision } = await createBlob(app, caller, org.id);
  const session = await command(app, caller, revision.id, 'create_session', {});
  return { orgId: org.id, blobId: blob.id, rev: revision.id, sessionId: session.session.id };
}

/** A revision command over REST that must answer 200; returns the body. */
export async function command(
  app: FastifyInstance,
  caller: Caller,
  rev: string,
  name: string,
  params: Record<string, unknown>,
): Promise<any> {
  const { status, body } = await call(app, 'POST', `/v1/revisions/${rev}/${name}`, { as: caller, body: params });
  if (status !== 200) throw new Error(`${name}: ${status} ${JSON.stringify(body)}`);
  return body;
}

/** Creates a definition of `graph`; returns its id. */
export async function define(app: FastifyInstance, caller: Caller, flow: Workflow, graph: unknown): Promise<string> {
  return (await command(app, caller, flow.rev, 'create_definition', { category: 'workflow', graph })).definition.id;
}

/** Creates an execution of a definition with `input_data`; returns the execution record. */
export async function startExecution(
  app: FastifyInstance,
  caller: Caller,
  flow: Workflow,
  definitionId: string,
  input?: unknown,
): Promise<Record<string, any>> {
  const params: Record<string, unknown> = { session_id: flow.sessionId, definition_id: definitionId };
  if (input !== undefined) params.input_data = input;
  return (await command(app, caller, flow.rev, 'create_execution', params)).execution;
}

/** Creates a definition of `graph` and an execution of it with `input_data`; returns the execution record. */
export async function runGraph(
  app: FastifyInstance,
  caller: Caller,
  flow: Workflow,
  graph: unknown,
  input?: unknown,
): Promise<Record<string, any>> {
  return startExecution(app, caller, flow, await define(app, caller, flow, graph), input);
}

/** get_execution. */
export async function getExecution(
  app: FastifyInstance,
  caller: Caller,
  flow: Workflow,
  id: string,
): Promise<Record<string, any>> {
  return (await command(app, caller, flow.rev, 'get_execution', { execution_id: id })).execution;
}

/** Every event of an execution, through list_execution_events page by page. */
export async function executionEvents(
  app: FastifyInstance,
  caller: Caller,
  flow: Workflow,
  id: string,
): Promise<any[]> {
  const events: any[] = [];
  let cursor: string | undefined;
  do {
    const params: Record<string, unknown> = { execution_id: id, limit: 200 };
    if (cursor !== undefined) params.cursor = cursor;
    const page = await command(app, caller, flow.rev, 'list_execution_events', params);
    events.push(...page.events);
    cursor = page.cursor ?? undefined;
  } while (cursor !== undefined);
  return events;
}

/**
 * Waits until `runner` holds no execution and no lease. The database shows an execution parked or
 * ended as soon as the engine worker's statement commits; the runner's main thread learns it one
 * message later, so its counts are read once they settle (a runner that never lets go fails here).
 */
export function runnerIdle(runner: TestEngine): Promise<ReturnType<Engine['stats']>> {
  return waitFor(
    async () => runner.engine.stats(),
    (stats) => stats.inFlight === 0 && stats.leases === 0,
    'the runner to let go of its executions',
  );
}

/** Polls `read` until `done` holds for its value (generous bound: no timing is asserted). */
export async function waitFor<T>(
  read: () => Promise<T>,
  done: (value: T) => boolean,
  what: string,
  timeoutMs = 60_000,
): Promise<T> {
  const until = Date.now() + timeoutMs;
  let value = await read();
  while (!done(value)) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}; last value: ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
    value = await read();
  }
  return value;
}

/** Waits until the execution is in one of `statuses` and returns its record. */
export function waitForStatus(
  app: FastifyInstance,
  caller: Caller,
  flow: Workflow,
  id: string,
  ...statuses: string[]
): Promise<Record<string, any>> {
  return waitFor(
    () => getExecution(app, caller, flow, id),
    (e) => statuses.includes(e.status),
    `execution ${id} to be ${statuses.join(' or ')}`,
  );
}

/** Waits until the execution has ended. */
export function waitForEnd(
  app: FastifyInstance,
  caller: Caller,
  flow: Workflow,
  id: string,
): Promise<Record<string, any>> {
  return waitForStatus(app, caller, flow, id, 'succeeded', 'failed', 'cancelled');
}

/** The `held` of `workflow.running_executions_per_org` on Get Organization Limits. */
export async function runningHeld(app: FastifyInstance, caller: Caller, orgId: string): Promise<number> {
  const { status, body } = await call(app, 'GET', `/v1/orgs/${orgId}/limits`, { as: caller });
  if (status !== 200) throw new Error(`org limits: ${status}`);
  return body.groups
    .flatMap((group: any) => group.limits)
    .find((limit: any) => limit.id === 'workflow.running_executions_per_org').held;
}

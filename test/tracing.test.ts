/**
 * Tracing end to end (docs/operations.md, "Tracing"): the control plane and a runner as real
 * processes exporting to an OTLP/HTTP receiver in this test. An execution created over REST with
 * a client's `traceparent` runs its nodes in the runner's engine thread; every node span must be
 * in the client's trace and descend, through the execution, create_execution and request spans,
 * from the client's span — across a sleep, which ends one turn on the runner and starts another.
 * The runner's log lines about the execution carry its id and trace id. Without
 * OTEL_EXPORTER_OTLP_ENDPOINT, the same run loads nothing of the SDK (only @opentelemetry/api,
 * which prom-client requires). In process, with a Tracing that records what it is asked: a
 * schedule fire's span and the traceparent its execution stores, and the interpreter's spans of a
 * failing node and its failure route.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pino from 'pino';
import t from 'tap';
import { createEngine } from '../runner/engine/engine.ts';
import { processorRegistry } from '../runner/processors/registry.ts';
import { freePort } from '../shared/db/free-port.ts';
import { fireSchedule } from '../shared/scheduler/fire.ts';
import type { SpanAttributes, SpanOptions, TraceSpan, Tracing } from '../shared/tracing/tracing.ts';
import { buildTestApp, signInAnonymous } from './helpers/app.ts';
import { createTestDatabase } from './helpers/db.ts';
import { createBlob } from './helpers/resources.ts';
import { onThisThread } from './helpers/this-thread.ts';
import { command, createWorkflow, define, FAST, runGraph, waitForEnd } from './helpers/runner.ts';

const root = join(import.meta.dirname, '..');
const dataDir = await mkdtemp(join(tmpdir(), 'ws-tracing-'));
t.teardown(() => rm(dataDir, { recursive: true, force: true }));

/** A span as the receiver got it, ids in hex. */
interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  kind: number;
  service: string;
  attributes: Record<string, unknown>;
}

/** OTLP/JSON ids are hex in OpenTelemetry JS; base64 (protobuf's JSON mapping) is accepted too. */
function hexId(id: unknown): string {
  if (typeof id !== 'string' || id === '') return '';
  return /^[0-9a-f]+$/.test(id) && (id.length === 32 || id.length === 16)
    ? id
    : Buffer.from(id, 'base64').toString('hex');
}

function attributesOf(list: unknown): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const { key, value } of (list ?? []) as Array<{ key: string; value: Record<string, unknown> }>) {
    out[key] = value.stringValue ?? value.intValue ?? value.boolValue ?? value.doubleValue;
  }
  return out;
}

/** An OTLP/HTTP trace receiver (JSON, the exporter's default encoding) keeping every span. */
async function startReceiver(): Promise<{ server: Server; url: string; spans: ReceivedSpan[]; refused: string[] }> {
  const spans: ReceivedSpan[] = [];
  const refused: string[] = [];
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      if (
        request.method !== 'POST' ||
        request.url !== '/v1/traces' ||
        !String(request.headers['content-type']).includes('json')
      ) {
        refused.push(`${request.method} ${request.url} ${request.headers['content-type']}`);
        response.writeHead(400).end();
        return;
      }
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      for (const resourceSpans of body.resourceSpans ?? []) {
        const service = String(attributesOf(resourceSpans.resource?.attributes)['service.name']);
        for (const scopeSpans of resourceSpans.scopeSpans ?? []) {
          for (const span of scopeSpans.spans ?? []) {
            spans.push({
              traceId: hexId(span.traceId),
              spanId: hexId(span.spanId),
              parentSpanId: hexId(span.parentSpanId),
              name: span.name,
              kind: span.kind,
              service,
              attributes: attributesOf(span.attributes),
            });
          }
        }
      }
      response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address() as { port: number };
  return { server, url: `http://127.0.0.1:${address.port}`, spans, refused };
}

interface Launch {
  proc: ChildProcess;
  exited: Promise<[number | null, NodeJS.Signals | null]>;
  /** Every line of its standard output and error. */
  lines: string[];
}

const launches: Launch[] = [];
t.teardown(async () => {
  // Only when an assertion failed half-way: never leave a process running.
  for (const { proc, exited } of launches) {
    if (proc.exitCode === null && proc.signalCode === null) {
      proc.kill('SIGKILL');
      await exited;
    }
  }
});

function launch(entry: string, env: NodeJS.ProcessEnv): Launch {
  const proc = spawn(
    process.execPath,
    ['--no-node-snapshot', '--import', join(root, 'test', 'helpers', 'record-otel-loads.ts'), join(root, entry)],
    { env, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const lines: string[] = [];
  let partial = '';
  const keep = (chunk: Buffer) => {
    const text = partial + chunk.toString();
    const parts = text.split('\n');
    partial = parts.pop()!;
    lines.push(...parts);
  };
  proc.stdout!.on('data', keep);
  proc.stderr!.on('data', keep);
  const run = { proc, lines, exited: once(proc, 'exit') as Launch['exited'] };
  launches.push(run);
  return run;
}

/** Polls `probe` until it returns a value; the generous deadline only keeps a broken run from hanging. */
async function waitFor<T>(
  what: string,
  probe: () => Promise<T | undefined>,
  output: () => string[],
  timeoutMs = 90_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}:\n${output().slice(-40).join('\n')}`);
    await sleep(100);
  }
}

// a (code) → nap (a one-second sleep: the runner parks it, and a second claim resumes it) → b (code).
const GRAPH = {
  start: 'a',
  nodes: {
    a: {
      processor: 'logic.code',
      config: { code: 'export default (input) => ({ n: input.n + 1 })' },
      routes: { success: 'nap' },
    },
    nap: { processor: 'logic.sleep', config: { seconds: 1 }, routes: { success: 'b' } },
    b: { processor: 'logic.code', config: { code: 'export default (input) => ({ n: input.n * 10 })' } },
  },
};

interface Stack {
  port: number;
  controlPlane: Launch;
  runner: Launch;
  output: () => string[];
  stop(): Promise<Array<number | null>>;
}

/** The control plane and one runner on a database of this file, with `extra` in their environment. */
async function startStack(extra: NodeJS.ProcessEnv, loadsFile: string): Promise<Stack> {
  const databaseUrl = await createTestDatabase(t);
  const port = await freePort();
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    DATABASE_URL: databaseUrl,
    DATA_DIR: dataDir,
    PORT: String(port),
    OPS_PORT: String(await freePort()),
    LOG_LEVEL: 'warn',
    RUNNER_NICE: '0',
    RUNNER_CPU_SPLIT: 'off',
    OTEL_LOADS_FILE: loadsFile,
    ...extra,
  };
  delete env.OTEL_EXPORTER_OTLP_ENDPOINT;
  if (extra.OTEL_EXPORTER_OTLP_ENDPOINT !== undefined)
    env.OTEL_EXPORTER_OTLP_ENDPOINT = extra.OTEL_EXPORTER_OTLP_ENDPOINT;
  const controlPlane = launch('control-plane/main.ts', env);
  // Debug: the runner's "execution left the runner" line is one of its log lines about an execution.
  const runner = launch('runner/main.ts', { ...env, LOG_LEVEL: 'debug' });
  const output = () => [...controlPlane.lines.slice(-20), ...runner.lines.slice(-20)];
  await waitFor(
    'the control plane',
    async () => ((await fetch(`http://127.0.0.1:${port}/healthz`)).ok ? true : undefined),
    output,
  );
  await waitFor(
    'the runner',
    async () => (runner.lines.some((line) => line.includes('"runner started"')) ? true : undefined),
    output,
  );
  return {
    port,
    controlPlane,
    runner,
    output,
    async stop() {
      controlPlane.proc.kill('SIGTERM');
      runner.proc.kill('SIGTERM');
      const [[cp], [rn]] = await Promise.all([controlPlane.exited, runner.exited]);
      return [cp, rn];
    },
  };
}

/** Signs up, makes an organization, a workflow blob, a session and a definition of GRAPH; returns what creating an execution needs. */
async function workflow(
  port: number,
): Promise<{ headers: Record<string, string>; rev: string; sessionId: string; definitionId: string }> {
  const api = async (path: string, body: unknown, headers: Record<string, string> = {}) => {
    const res = await fetch(`http://127.0.0.1:${port}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    });
    const json = (await res.json()) as any;
    if (res.status !== 200 && res.status !== 201) throw new Error(`${path}: ${res.status} ${JSON.stringify(json)}`);
    return json;
  };
  const signedUp = await api('/v1/auth/anonymous', {});
  const headers = { authorization: `Bearer ${signedUp.access_token}` };
  const { org } = await api('/v1/orgs', { alias: `tracing-${randomBytes(4).toString('hex')}` }, headers);
  const { revision } = await api(`/v1/blobs/${org.id}`, { type: 'svc.compute.workflow', alias: 'traced' }, headers);
  const { session } = await api(`/v1/revisions/${revision.id}/create_session`, {}, headers);
  const { definition } = await api(
    `/v1/revisions/${revision.id}/create_definition`,
    { category: 'workflow', graph: GRAPH },
    headers,
  );
  return { headers, rev: revision.id, sessionId: session.id, definitionId: definition.id };
}

/** Creates an execution over REST (with `headers`) and waits until it succeeded; returns its id. */
async function runToEnd(
  stack: Stack,
  flow: Awaited<ReturnType<typeof workflow>>,
  headers: Record<string, string> = {},
): Promise<string> {
  const post = (command: string, body: unknown, extraHeaders: Record<string, string> = {}) =>
    fetch(`http://127.0.0.1:${stack.port}/v1/revisions/${flow.rev}/${command}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...flow.headers, ...extraHeaders },
      body: JSON.stringify(body),
    });
  const created = await post(
    'create_execution',
    { session_id: flow.sessionId, definition_id: flow.definitionId, input_data: { n: 1 } },
    headers,
  );
  t.equal(created.status, 200, 'create_execution answers 200');
  const { execution } = (await created.json()) as { execution: { id: string } };
  const ended = await waitFor(
    'the execution to end',
    async () => {
      const res = await post('get_execution', { execution_id: execution.id });
      const body = (await res.json()) as { execution: { status: string; output: unknown } };
      return ['succeeded', 'failed', 'cancelled'].includes(body.execution.status) ? body.execution : undefined;
    },
    stack.output,
  );
  t.match(
    ended,
    { status: 'succeeded', output: { n: 20 } },
    'the execution succeeded through both code nodes and the sleep',
  );
  return execution.id;
}

async function loadedOtel(file: string): Promise<string[]> {
  const text = await readFile(file, 'utf8').catch(() => '');
  return text.split('\n').filter((line) => line !== '');
}

t.test("an execution's node spans are in the trace of the request that created it, below its span", async (t) => {
  const receiver = await startReceiver();
  t.teardown(() => new Promise<void>((resolve) => receiver.server.close(() => resolve())));
  const loads = join(dataDir, 'loads-on.txt');
  // Batches leave every 100 ms instead of every 5 s: the test waits for spans, it does not time them.
  const stack = await startStack({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_BSP_SCHEDULE_DELAY: '100' }, loads);
  const flow = await workflow(stack.port);

  // The client's own span: the request's traceparent names it.
  const traceId = randomBytes(16).toString('hex');
  const clientSpanId = randomBytes(8).toString('hex');
  const id = await runToEnd(stack, flow, { traceparent: `00-${traceId}-${clientSpanId}-01` });

  const byId = () => new Map(receiver.spans.map((span) => [span.spanId, span]));
  const nodeSpans = () =>
    receiver.spans.filter((span) => span.name.startsWith('node ') && span.attributes['workflow.execution.id'] === id);
  /** The names from `span` up to the span whose parent is the client's; undefined while a link is missing. */
  const chainOf = (span: ReceivedSpan): ReceivedSpan[] | undefined => {
    const spans = byId();
    const chain = [span];
    for (let at = span; at.parentSpanId !== clientSpanId;) {
      const parent = spans.get(at.parentSpanId);
      if (parent === undefined || chain.length > 20) return undefined;
      chain.push(parent);
      at = parent;
    }
    return chain;
  };
  const nodes = await waitFor(
    'the three node spans, each linked up to the client span',
    async () => {
      const found = nodeSpans();
      return found.length >= 3 && found.every((span) => chainOf(span) !== undefined) ? found : undefined;
    },
    () => [
      ...stack.output(),
      `spans: ${JSON.stringify(receiver.spans.map((s) => s.name))}`,
      `refused: ${receiver.refused.join(', ')}`,
    ],
  );

  t.same(nodes.map((span) => span.attributes['workflow.node.id']).sort(), ['a', 'b', 'nap'], 'one span per node run');
  for (const span of nodes) {
    t.equal(span.traceId, traceId, `node ${String(span.attributes['workflow.node.id'])} is in the request's trace`);
    t.equal(span.service, 'workspace-runner', 'made by the runner');
    t.equal(
      span.attributes['workflow.node.status'],
      span.attributes['workflow.node.id'] === 'nap' ? 'sleeping' : 'finished',
      'with its status',
    );
    t.equal(span.attributes['workflow.processor'], span.name.slice('node '.length), 'and its processor');
    const chain = chainOf(span)!.map((s) => s.name);
    t.equal(chain[1], 'execution', 'its parent is the execution span of its turn');
    t.equal(chain[2], 'create_execution', 'whose parent is create_execution');
    t.ok(chain.slice(3).length > 0, `then the request's spans up to the client's: ${chain.join(' < ')}`);
    t.ok(
      chainOf(span)!.every((s) => s.traceId === traceId),
      'every span of the chain in the one trace',
    );
  }
  const turns = new Set(nodes.map((span) => span.parentSpanId));
  t.equal(
    turns.size,
    2,
    'the sleep parked the execution: its second claim is a second execution span, under the same create_execution',
  );
  const executionSpans = [...turns].map((spanId) => byId().get(spanId)!);
  t.same(
    executionSpans.map((span) => span.attributes['workflow.claim.reason']).sort(),
    ['started', 'woke'],
    'a started turn and a woken one',
  );
  t.equal(new Set(executionSpans.map((span) => span.parentSpanId)).size, 1, 'both below one create_execution span');
  const create = byId().get(executionSpans[0]!.parentSpanId)!;
  t.equal(create.service, 'workspace-control-plane', "create_execution is the control plane's");
  t.equal(create.attributes['workflow.execution.id'], id, 'and names the execution');
  const request = chainOf(nodes[0]!)!.at(-1)!;
  t.equal(request.kind, 2, "the topmost span is the HTTP server span (SERVER), child of the client's");
  t.ok(
    receiver.spans.some(
      (span) =>
        span.traceId === traceId &&
        span.service === 'workspace-control-plane' &&
        /postgres/.test(String(span.attributes['db.system.name'] ?? span.attributes['db.system'])),
    ),
    'pg queries of the request are spans of its trace',
  );

  const logged = stack.runner.lines
    .flatMap((line) => {
      try {
        return [JSON.parse(line) as Record<string, unknown>];
      } catch {
        return [];
      }
    })
    .filter((entry) => entry.execution_id === id);
  t.ok(logged.length > 0, 'the runner logged about the execution');
  t.ok(
    logged.every((entry) => entry.trace_id === traceId),
    'each such line carries its trace id',
  );

  t.same(await stack.stop(), [0, 0], 'both processes stop cleanly, the SDK flushed');
  const loaded = await loadedOtel(loads);
  t.ok(
    loaded.some((url) => url.includes('/@opentelemetry/sdk-node/')),
    'the SDK was loaded (the load recorder works)',
  );
  t.ok(
    loaded.some((url) => url.endsWith('/shared/tracing/start-thread-tracing.ts')),
    "so was the engine thread's tracer, which only a worker thread loads (the recorder sees worker threads too)",
  );
  t.same(receiver.refused, [], 'every export was OTLP/HTTP JSON to /v1/traces');
});

t.test('without OTEL_EXPORTER_OTLP_ENDPOINT nothing of the SDK is loaded', async (t) => {
  const loads = join(dataDir, 'loads-off.txt');
  const stack = await startStack({}, loads);
  const flow = await workflow(stack.port);
  const traceId = randomBytes(16).toString('hex');
  const id = await runToEnd(stack, flow, { traceparent: `00-${traceId}-${randomBytes(8).toString('hex')}-01` });
  const logged = stack.runner.lines.filter((line) => line.includes(id));
  t.ok(logged.length > 0, 'the runner logged about the execution');
  t.ok(
    logged.every((line) => !line.includes('trace_id')),
    'without a trace id',
  );
  t.same(await stack.stop(), [0, 0], 'both processes stop cleanly');
  // @opentelemetry/api is prom-client's (it requires the API for exemplars, a no-op without an SDK);
  // tracing.ts and load-tracing.ts are the seam, which imports nothing of OpenTelemetry.
  const allowed = /\/node_modules\/@opentelemetry\/api\/|\/shared\/tracing\/(tracing|load-tracing)\.ts$/;
  t.same(
    (await loadedOtel(loads)).filter((url) => !allowed.test(url)),
    [],
    'neither process nor any of their threads loaded the SDK, an exporter, an instrumentation or the modules that start them',
  );
});

/** A Tracing that keeps what it is asked for (the fire's span has no SDK behind it here). */
function recordingTracing(): Tracing & {
  spans: Array<{
    name: string;
    options: SpanOptions;
    attributes: SpanAttributes;
    ended: string | null;
    traceparent: string;
  }>;
  /** Resolves once a span named `name` has ended: the engine ends a turn's span after its commit, which a reader may see first. */
  ended(name: string): Promise<void>;
} {
  const spans: Array<{
    name: string;
    options: SpanOptions;
    attributes: SpanAttributes;
    ended: string | null;
    traceparent: string;
  }> = [];
  const waiters: Array<{ name: string; resolve: () => void }> = [];
  const startSpan = (name: string, options: SpanOptions = {}): TraceSpan => {
    const span = {
      name,
      options,
      attributes: { ...options.attributes },
      ended: null as string | null,
      traceparent: `00-${randomBytes(16).toString('hex')}-${randomBytes(8).toString('hex')}-01`,
    };
    spans.push(span);
    return {
      traceparent: span.traceparent,
      setAttributes: (attributes) => Object.assign(span.attributes, attributes),
      end: (errorCode) => {
        span.ended = errorCode ?? 'ok';
        for (const waiter of waiters.filter((w) => w.name === name)) {
          waiters.splice(waiters.indexOf(waiter), 1);
          waiter.resolve();
        }
      },
    };
  };
  return {
    spans,
    ended: (name) =>
      spans.some((span) => span.name === name && span.ended !== null)
        ? Promise.resolve()
        : new Promise((resolve) => waiters.push({ name, resolve })),
    startSpan,
    inSpan: async (name, options, fn) => fn(startSpan(name, options)),
    shutdown: async () => {},
  };
}

t.test("a schedule fire has a span, and the execution it creates carries that span's traceparent", async (t) => {
  const { app, db, boss } = await buildTestApp(t);
  const alice = await signInAnonymous(app);
  const flow = await createWorkflow(app, alice);
  const definitionId = await define(app, alice, flow, GRAPH);
  const { revision } = await createBlob(app, alice, flow.orgId, { type: 'svc.compute.scheduler' });
  const target = { revision_id: flow.rev, session_id: flow.sessionId, definition_id: definitionId };
  const { schedule } = await command(app, alice, revision.id, 'create_schedule', {
    cron: '0 0 * * *',
    target,
    input_data: { n: 1 },
  });
  const traceparentOf = async (id: string) =>
    (await db.query<{ traceparent: string | null }>('SELECT traceparent FROM executions WHERE id = $1', [id])).rows[0]!
      .traceparent;

  const tracing = recordingTracing();
  const fired = await fireSchedule(db, boss, { scheduleId: schedule.id, dueAt: null }, tracing);
  if (!('fired' in fired) || fired.fired.execution_id === null)
    throw new Error(`nothing fired: ${JSON.stringify(fired)}`);
  const executionId = fired.fired.execution_id;
  t.equal(tracing.spans.length, 1, 'one span for the one fire');
  t.match(
    tracing.spans[0],
    {
      name: 'schedule fire',
      attributes: {
        'workflow.schedule.id': schedule.id,
        'workflow.fire.kind': 'now',
        'workflow.fire.status': 'started',
        'workflow.execution.id': executionId,
      },
      ended: 'ok',
    },
    'naming the schedule and the execution, ended once the fire committed',
  );
  t.equal(tracing.spans[0]!.options.parent, undefined, "its parent is the active span (an operator's request), if any");
  t.equal(
    await traceparentOf(executionId),
    tracing.spans[0]!.traceparent,
    "the execution carries the fire's traceparent",
  );

  const untraced = await fireSchedule(db, boss, { scheduleId: schedule.id, dueAt: null });
  if (!('fired' in untraced) || untraced.fired.execution_id === null)
    throw new Error(`nothing fired: ${JSON.stringify(untraced)}`);
  t.equal(await traceparentOf(untraced.fired.execution_id), null, 'untraced, the execution has none');
});

t.test(
  'the interpreter: an execution span below the stored traceparent, a node span per run with how it ended',
  async (t) => {
    const { app, db, boss, databaseUrl } = await buildTestApp(t);
    const alice = await signInAnonymous(app);
    const flow = await createWorkflow(app, alice);
    // `boom` throws; its failure route leads to `mend`, which ends the execution succeeded.
    const execution = await runGraph(app, alice, flow, {
      start: 'boom',
      nodes: {
        boom: {
          processor: 'logic.code',
          config: { code: 'export default () => { throw new Error("no") }' },
          routes: { failure: 'mend' },
        },
        mend: { processor: 'logic.code', config: { code: 'export default () => "mended"' } },
      },
    });
    // As if a traced create_execution had made it (no runner has claimed it yet: none runs).
    const stored = `00-${randomBytes(16).toString('hex')}-${randomBytes(8).toString('hex')}-01`;
    await db.query('UPDATE executions SET traceparent = $2 WHERE id = $1', [execution.id, stored]);

    const tracing = recordingTracing();
    // Interpreted on this thread (processors given), so the spans reach this test's Tracing.
    const runner = createEngine({
      ...FAST,
      db,
      boss,
      databaseUrl,
      runnerId: randomUUID(),
      log: pino({ level: 'silent' }),
      interpreter: onThisThread(t, processorRegistry),
      tracing,
    });
    await runner.start();
    t.teardown(() => runner.stop());
    t.match(await waitForEnd(app, alice, flow, execution.id), { status: 'succeeded', output: 'mended' });
    await tracing.ended('execution');

    const turn = tracing.spans.find((span) => span.name === 'execution');
    t.match(
      turn,
      {
        options: { parent: stored },
        attributes: {
          'workflow.execution.id': execution.id,
          'workflow.claim.reason': 'started',
          'workflow.outcome': 'ended',
        },
        ended: 'ok',
      },
      "the turn's span is a child of the stored traceparent",
    );
    const nodes = tracing.spans.filter((span) => span.name.startsWith('node '));
    t.match(
      nodes,
      [
        {
          name: 'node logic.code',
          options: { parent: turn!.traceparent },
          attributes: {
            'workflow.node.id': 'boom',
            'workflow.processor': 'logic.code',
            'workflow.node.status': 'failed',
          },
          ended: 'code_error',
        },
        {
          name: 'node logic.code',
          options: { parent: turn!.traceparent },
          attributes: {
            'workflow.node.id': 'mend',
            'workflow.node.status': 'finished',
            'workflow.node.route': 'success',
          },
          ended: 'ok',
        },
      ],
      'a span per node run below the turn: the failed one ended with its error code',
    );
    t.equal(nodes.length, 2);
    const values = JSON.stringify(tracing.spans.map((span) => span.attributes));
    t.notMatch(values, /mended|no"/, 'no input, output or message of the code in any attribute');
  },
);

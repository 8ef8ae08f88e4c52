/**
 * Operability (docs/operations.md, "Probes" and "Metrics"): /healthz and /readyz on the REST port
 * without credentials; Prometheus metrics on the ops port (behind the ops token) and on a
 * runner's metrics port, with bounded labels and the engine threads' figures summed.
 */
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { serveMetrics } from '../runner/metrics.ts';
import { startProcessMetrics, watchQueues } from '../shared/metrics.ts';
import { readinessProbe } from '../shared/probes.ts';
import { buildTestApp, signInAnonymous } from './helpers/app.ts';
import { startOpsApp } from './helpers/ops.ts';
import { createWorkflow, define, startExecution, startEngine, waitFor, waitForEnd } from './helpers/runner.ts';

const { app, db, config, databaseUrl } = await buildTestApp(t);
startProcessMetrics();
watchQueues(db);

t.test('/healthz and /readyz answer without credentials; readiness names what is missing', async (t) => {
  const health = await app.inject({ method: 'GET', url: '/healthz' });
  t.equal(health.statusCode, 200);
  t.same(health.json(), { status: 'ok' });
  const ready = await app.inject({ method: 'GET', url: '/readyz' });
  t.equal(ready.statusCode, 200);
  t.same(ready.json(), { status: 'ready', checks: { database: true, migrated: true, stopping: false } });
  const { rows } = await db.query<{ name: string }>(
    'DELETE FROM schema_migrations WHERE name = (SELECT max(name) FROM schema_migrations) RETURNING name',
  );
  const unmigrated = await app.inject({ method: 'GET', url: '/readyz' });
  await db.query('INSERT INTO schema_migrations (name) VALUES ($1)', [rows[0]!.name]);
  t.equal(unmigrated.statusCode, 503, 'a migration this build ships is not applied');
  t.match(unmigrated.json(), { status: 'not_ready', checks: { database: true, migrated: false } });
  const stopping = await readinessProbe(db, () => true)();
  t.same(stopping, { ready: false, checks: { database: true, migrated: true, stopping: true } });
});

t.test("the ops port serves the control plane's metrics behind the ops token", async (t) => {
  const { ops } = await startOpsApp(t, { config, db, databaseUrl });
  const alice = await signInAnonymous(app);
  const flow = await createWorkflow(app, alice);
  await startExecution(
    app,
    alice,
    flow,
    await define(app, alice, flow, {
      start: 'one',
      nodes: { one: { processor: 'logic.code', config: { code: 'export default () => 1' } } },
    }),
  );
  await app.inject({ method: 'GET', url: `/v1/orgs/${flow.orgId}`, headers: alice.headers });
  const command = (name: string) =>
    app.inject({ method: 'POST', url: `/v1/revisions/${flow.rev}/${name}`, headers: alice.headers, payload: {} });
  await command('list_definitions');
  await command('no_such_command_a');
  await command('no_such_command_b');
  t.equal((await ops.inject({ method: 'GET', url: '/metrics' })).statusCode, 401, 'no token, no metrics');
  const res = await ops.inject({
    method: 'GET',
    url: '/metrics',
    headers: { authorization: `Bearer ${config.secrets.OPS_TOKEN}` },
  });
  t.equal(res.statusCode, 200);
  t.match(res.headers['content-type'], /^text\/plain/);
  const text = res.body;
  t.match(
    text,
    /workspace_http_request_duration_seconds_count\{method="GET",route="\/v1\/orgs\/:id",status_code="200"\} [1-9]/,
    'requests by route pattern, not by id',
  );
  t.notMatch(text, new RegExp(flow.orgId), 'no id appears in any label');
  t.match(
    text,
    /workspace_http_request_duration_seconds_count\{method="POST",route="\/v1\/revisions\/:revision_id\/list_definitions",status_code="200"\} 1\n/,
    'the command route by command name',
  );
  t.match(
    text,
    /workspace_http_request_duration_seconds_count\{method="POST",route="\/v1\/revisions\/:revision_id\/:unknown_command",status_code="404"\} 2\n/,
    'names no command has share one label',
  );
  t.notMatch(text, /no_such_command/, 'an unknown name is never a label');
  t.match(text, /workspace_executions_created_total\{source="api"\} [1-9]/);
  t.match(text, /workspace_db_pool_connections\{state="idle"\} \d+/);
  t.match(
    text,
    /workspace_queue_jobs\{queue="executions",state="ready"\} [1-9]/,
    'the wake-up job waits (no runner yet)',
  );
  t.match(text, /workspace_queue_oldest_ready_job_age_seconds\{queue="executions"\} [\d.]+/);
  t.match(text, /workspace_websocket_connections 0/);
  t.match(text, /process_cpu_seconds_total \d/, 'process metrics');
  // The exposition format, line by line: comments, or a sample with a valid name, labels and value.
  const bad = text
    .split('\n')
    .filter(
      (line) =>
        line !== '' &&
        !/^# (HELP|TYPE) [a-zA-Z_:][a-zA-Z0-9_:]* .+$/.test(line) &&
        !/^[a-zA-Z_:][a-zA-Z0-9_:]*(\{[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\.)*"(,[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\.)*")*\})? (-?[0-9.e+-]+|NaN|\+Inf|-Inf)$/.test(
          line,
        ),
    );
  t.same(bad, [], 'every line parses as Prometheus text');
  // Counters move with an execution.
  const count = (body: string) =>
    Number(/workspace_executions_created_total\{source="api"\} (\d+)/.exec(body)?.[1] ?? 0);
  await startExecution(
    app,
    alice,
    flow,
    await define(app, alice, flow, {
      start: 'one',
      nodes: { one: { processor: 'logic.code', config: { code: 'export default () => 2' } } },
    }),
  );
  const after = await ops.inject({
    method: 'GET',
    url: '/metrics',
    headers: { authorization: `Bearer ${config.secrets.OPS_TOKEN}` },
  });
  t.equal(count(after.body), count(text) + 1, 'workspace_executions_created_total moved by one');
});

t.test("a runner sums its engine threads' node runs and ends, and serves them with its probes", async (t) => {
  const { engine: runner } = await startEngine(t, databaseUrl);
  const alice = await signInAnonymous(app);
  const flow = await createWorkflow(app, alice);
  const def = await define(app, alice, flow, {
    start: 'one',
    nodes: {
      one: { processor: 'logic.code', config: { code: 'export default () => 1' }, routes: { success: 'two' } },
      two: { processor: 'logic.code', config: { code: 'export default (x) => x' } },
    },
  });
  const ended = await waitForEnd(app, alice, flow, (await startExecution(app, alice, flow, def)).id);
  t.equal(ended.status, 'succeeded', JSON.stringify(ended.error));
  const text = await waitFor(
    async () => (await runner.metrics()).body,
    (body: string) => /workspace_executions_ended_total\{status="succeeded"\} [1-9]/.test(body),
    'an engine thread to report (every 2 s)',
  );
  t.match(text, /workspace_node_run_duration_seconds_count\{processor="logic.code",outcome="finished"\} [1-9]/);
  t.match(text, /workspace_sandbox_isolates\{state="idle"\} \d+/);
  const server = await serveMetrics(
    0,
    '127.0.0.1',
    () => runner.metrics(),
    readinessProbe(db, () => false),
  );
  t.teardown(() => server.close());
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  t.same(await (await fetch(`${base}/healthz`)).json(), { status: 'ok' });
  t.match(await (await fetch(`${base}/readyz`)).json(), { status: 'ready' });
  t.match(await (await fetch(`${base}/metrics`)).text(), /workspace_node_run_duration_seconds_bucket/);
  t.equal((await fetch(`${base}/nope`)).status, 404);
});

t.test('GraphiQL is served on the ops port from the package, offline; its queries still need the token', async (t) => {
  const { ops } = await startOpsApp(t, { config, db, databaseUrl });
  const page = await ops.inject({ method: 'GET', url: '/graphiql' });
  t.equal(page.statusCode, 200);
  t.match(page.headers['content-type'], /^text\/html/);
  // Every URL the page names is of its own origin, and the CSP lets nothing else load or connect.
  const urls = [...page.body.matchAll(/\b(?:src|href)="([^"]*)"/g)].map((match) => match[1]!);
  t.ok(urls.length >= 6, 'the page names its scripts and styles');
  for (const url of urls) t.ok(url.startsWith('/graphiql/') || url === 'data:,', `${url} is same-origin`);
  t.notMatch(page.body, /<script(?![^>]*\bsrc=)[^>]*>/, 'no inline script');
  const csp = String(page.headers['content-security-policy']);
  for (const directive of ["default-src 'self'", "script-src 'self'", "connect-src 'self'", "object-src 'none'"])
    t.ok(csp.split('; ').includes(directive), `CSP has ${directive}`);
  t.notMatch(csp, /https?:|\*/, 'the CSP names no other host');
  for (const url of urls.filter((u) => u.startsWith('/'))) {
    const asset = await ops.inject({ method: 'GET', url });
    t.equal(asset.statusCode, 200, `${url} is served without the token`);
    t.equal(asset.headers['content-security-policy'], csp);
    t.notMatch(asset.body.slice(0, 4096), /unpkg\.com|cdn\./, `${url} is not a CDN loader`);
  }
  t.match((await ops.inject({ method: 'GET', url: '/graphiql/start.js' })).body, /new URL\('\/graphql'/);
  t.equal(
    (await ops.inject({ method: 'POST', url: '/graphql', payload: { query: '{ health { status } }' } })).statusCode,
    401,
    'a query without the token is refused',
  );
  t.equal(
    (await ops.inject({ method: 'GET', url: '/graphiql/../graphql?query={health{status}}' })).statusCode,
    401,
    'no path trick reaches the API',
  );
});

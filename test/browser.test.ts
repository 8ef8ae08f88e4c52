// The service from a real browser (docs/client.md, "Building and using it"): Chromium driven by playwright-core.
// The /docs reference renders; a page on another origin loads the client package's JavaScript
// (built here from client/ with tsc, openapi-fetch through an import map), signs in, creates an
// organization over CORS REST (and gets a limit refusal as a typed error), opens the WebSocket
// with the sub-protocol credential and receives a session's and an execution's events.
// The browser is CHROMIUM_PATH's, a system Chromium, or the one inside the @sparticuz/chromium
// devDependency (test/helpers/chromium.ts): nothing to install beyond `npm install`.
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { extname, join, normalize } from 'node:path';
import { promisify } from 'node:util';
import { chromium } from 'playwright-core';
import t from 'tap';
import { buildTestApp } from './helpers/app.ts';
import { findChromium } from './helpers/chromium.ts';
import { startEngine } from './helpers/runner.ts';

const ROOT = join(import.meta.dirname, '..');
const chromiumBinary = await findChromium();
t.comment(`browser: ${chromiumBinary.executablePath} (${chromiumBinary.source})`);

// The client as a browser gets it: JavaScript from client/src, built with the package's own tsconfig.
const dist = await mkdtemp(join(tmpdir(), 'ws-client-dist-'));
t.teardown(() => rm(dist, { recursive: true, force: true }));
await promisify(execFile)(join(ROOT, 'node_modules', '.bin', 'tsc'), ['-p', join(ROOT, 'client'), '--outDir', dist]);

const PAGE = `<!doctype html>
<meta charset="utf-8">
<title>client in a browser</title>
<script type="importmap">{"imports": {"openapi-fetch": "/openapi-fetch/index.mjs"}}</script>
<script type="module">
import { createRestClient, ok, RpcClient, socketUrlOf } from '/client/index.js';

const GRAPH = {
  start: 'pause',
  nodes: {
    pause: { processor: 'logic.sleep', config: { seconds: 1 }, routes: { success: 'done' } },
    done: { processor: 'logic.code', config: { code: 'export default async (input) => ({ seen: input.from })' } },
  },
};

window.scenario = async (api) => {
  const anonymous = createRestClient({ baseUrl: api });
  const signedIn = await ok(anonymous.POST('/v1/auth/anonymous', { body: {} }));
  const rest = createRestClient({ baseUrl: api, credential: { token: signedIn.access_token } });
  const alias = 'browser-' + crypto.getRandomValues(new Uint32Array(1))[0].toString(16);
  const { org } = await ok(rest.POST('/v1/orgs', { body: { alias } }));
  const { revision } = await ok(rest.POST('/v1/blobs/{org_id}', { params: { path: { org_id: org.id } }, body: { type: 'svc.compute.workflow', alias: alias + '.flows' } }));
  let refusal = null;
  try {
    await ok(rest.POST('/v1/orgs', { body: { alias: alias + '-2' } }));
  } catch (error) {
    refusal = { name: error.name, error: error.error, status: error.status, limit: error.limit };
  }

  const rpc = await RpcClient.connect({ url: socketUrlOf(api), credential: { token: signedIn.access_token } });
  const protocol = rpc.protocol;
  const { session } = await rpc.call('create_session', { revision_id: revision.id });
  const { definition } = await rpc.call('create_definition', { revision_id: revision.id, category: 'workflow', graph: GRAPH });
  // Subscribed before the execution exists, without replay: what arrives here was pushed.
  const sessionEvents = await rpc.subscribe({ revision_id: revision.id, session_id: session.id });
  const { execution } = await rpc.call('create_execution', { revision_id: revision.id, session_id: session.id, definition_id: definition.id, input_data: { from: location.origin } });
  // The execution's own log: replay first (it may have started already), then live pushes.
  const kinds = [];
  for await (const event of await rpc.subscribe({ revision_id: revision.id, execution_id: execution.id }, { replay: true })) {
    kinds.push(event.kind + (event.node ? ':' + event.node : ''));
    if (event.kind === 'execution.finished') break;
  }
  const pushed = [];
  for await (const event of sessionEvents) {
    pushed.push(event.kind);
    if (event.kind === 'execution.finished') break;
  }
  const { execution: ended } = await rpc.call('get_execution', { revision_id: revision.id, execution_id: execution.id });
  await rpc.close();
  return { origin: location.origin, user: signedIn.user.id, owner: org.owner_id, protocol, refusal, kinds, pushed, status: ended.status, output: ended.output };
};
window.ready = true;
</script>
`;

const TYPES: Record<string, string> = {
  '.js': 'text/javascript',
  '.mjs': 'text/javascript',
  '.map': 'application/json',
  '.html': 'text/html',
};

/** The page's origin: the test page, the built client and openapi-fetch's ES module. */
/** Serves one request of the page's origin. */
async function servePage(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const path = new URL(req.url ?? '/', 'http://x').pathname;
  const mounts: Array<[string, string]> = [
    ['/client/', dist],
    ['/openapi-fetch/', join(ROOT, 'node_modules', 'openapi-fetch', 'dist')],
  ];
  try {
    if (path === '/') {
      res.writeHead(200, { 'content-type': 'text/html' }).end(PAGE);
      return;
    }
    const mount = mounts.find(([prefix]) => path.startsWith(prefix));
    if (!mount) throw new Error('no such file');
    const file = normalize(join(mount[1], path.slice(mount[0].length)));
    if (!file.startsWith(mount[1])) throw new Error('outside the mount');
    res
      .writeHead(200, { 'content-type': TYPES[extname(file)] ?? 'application/octet-stream' })
      .end(await readFile(file));
  } catch {
    res.writeHead(404).end();
  }
}
const pages = createServer((req, res) => void servePage(req, res));
await new Promise<void>((resolve) => pages.listen(0, '127.0.0.1', resolve));
t.teardown(() => new Promise<void>((resolve) => pages.close(() => resolve())));
const pageOrigin = `http://127.0.0.1:${(pages.address() as AddressInfo).port}`;

// The API on another port (another origin), allowing the page's origin only.
const { app, databaseUrl } = await buildTestApp(t, { CORS_ORIGINS: pageOrigin, SIGNUPS_PER_MINUTE: '0' });
await app.listen({ port: 0, host: '127.0.0.1' });
const api = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
await startEngine(t, databaseUrl);

const browser = await chromium.launch({ executablePath: chromiumBinary.executablePath, args: chromiumBinary.args });
t.teardown(() => browser.close());

t.test('the /docs reference renders the API', async (t) => {
  const page = await browser.newPage();
  t.teardown(() => page.close());
  const errors: string[] = [];
  page.on('pageerror', (error) => errors.push(error.message));
  const response = await page.goto(`${api}/docs`);
  t.equal(response?.status(), 200);
  // Scalar draws the reference from /v1/openapi.json: its tags and an operation's summary appear
  // (its web fonts come from a CDN this machine may not reach; nothing else leaves the service).
  await page.getByText('This OpenAPI 3.1 document').first().waitFor({ timeout: 60_000 });
  for (const tag of ['Sign-in and tokens', 'Organizations', 'Commands']) {
    t.ok(await page.getByText(tag, { exact: true }).first().isVisible(), `the ${tag} group`);
  }
  t.same(errors, [], 'no script error on the page');
});

t.test('the typed client in a page of another origin: CORS REST, sub-protocol WebSocket, a subscription', async (t) => {
  const page = await browser.newPage();
  t.teardown(() => page.close());
  const errors: string[] = [];
  page.on('pageerror', (error) => errors.push(error.message));
  await page.goto(pageOrigin);
  // The callbacks run in the page, where globalThis is its window.
  await page.waitForFunction(() => (globalThis as { ready?: boolean }).ready === true);
  const result = await page.evaluate(
    (base) => (globalThis as unknown as { scenario(api: string): Promise<any> }).scenario(base),
    api,
  );
  t.not(result.origin, api, 'the page is on another origin');
  t.equal(result.owner, result.user, 'the organization was created over CORS by the signed-in user');
  t.same(result.refusal, {
    name: 'ApiError',
    error: 'limit_exceeded',
    status: 400,
    limit: { id: 'platform.orgs_per_user', value: 1, held: 1 },
  });
  t.equal(result.protocol, 'authorization.bearer.base64', 'the credential went in the sub-protocol');
  t.same(
    result.pushed,
    ['execution.created', 'execution.finished'],
    "the session's events, pushed to the page's socket",
  );
  t.same(
    result.kinds,
    [
      'execution.started',
      'node.started:pause',
      'node.finished:pause',
      'execution.sleeping:pause',
      'execution.resumed',
      'node.started:done',
      'node.finished:done',
      'execution.finished',
    ],
    "the execution's events, each once, in order",
  );
  t.equal(result.status, 'succeeded');
  t.same(result.output, { seen: pageOrigin });
  t.same(errors, [], 'no script error on the page');
});

// The web console (docs/console.md) in a real browser: headless Chromium from @sparticuz/chromium,
// driven by playwright-core, on the control plane's own /console under its CSP. What a user does:
// sign in anonymously, create an organization and a workflow blob, write a definition with a
// failure route (check_definition's problem shown on the field first), run it and watch its nodes
// turn succeeded live, open a node's output; a failing node shows its error and the route taken;
// cancel a running execution; re-run one (a double click runs once); an operator sets a limit
// override on the ops port's console and the tenant's limits page shows it. axe-core runs on each
// page; screenshots go to docs/console/.
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { chromium, type Page } from 'playwright-core';
import { findChromium } from '../helpers/chromium.ts';
import t, { type Test } from 'tap';
import type { Processor } from '../../runner/processors/processor.ts';
import { processorRegistry } from '../../runner/processors/registry.ts';
import { buildTestApp, setOverride } from '../helpers/app.ts';
import { mlpModel, mlpReference } from '../helpers/onnx-models.ts';
import { recordStrike } from '../../shared/sandbox/cooldowns.ts';
import { registerRunner } from '../../shared/runner-registry.ts';
import { startOpsApp } from '../helpers/ops.ts';
import { startEngine } from '../helpers/runner.ts';

// Seven pages driven one after another in a browser, on a shared two-core machine.
t.setTimeout(400_000);

const ROOT = join(import.meta.dirname, '..', '..');
const SHOTS = join(ROOT, 'docs', 'console');

// The console as `npm install` builds it, from the sources under test.
await promisify(execFile)(join(ROOT, 'node_modules', '.bin', 'vite'), ['build', 'console', '--logLevel', 'error'], {
  cwd: ROOT,
});

// A `hold` node waits until the test lets its execution go: the page is then looked at with the
// execution provably mid-way (the node before it done, `hold` running), with no race.
const released = new Map<string, PromiseWithResolvers<void>>();
const gateOf = (executionId: string) => {
  let gate = released.get(executionId);
  if (!gate) released.set(executionId, (gate = Promise.withResolvers<void>()));
  return gate;
};
const code = processorRegistry.get('logic.code')!;
const gatedCode: Processor = {
  name: 'logic.code',
  async run(ctx, config, input) {
    if (ctx.node === 'hold') {
      const aborted = new Promise<void>((resolve) => ctx.signal.addEventListener('abort', () => resolve()));
      await Promise.race([gateOf(ctx.execution.id).promise, aborted]);
    }
    return code.run(ctx, config, input);
  },
};
t.teardown(() => released.forEach((gate) => gate.resolve()));

const { app, databaseUrl, config, db } = await buildTestApp(t);
await app.listen({ port: 0, host: '127.0.0.1' });
const origin = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
await startEngine(t, databaseUrl, { processors: new Map([...processorRegistry, ['logic.code', gatedCode]]) });

const found = await findChromium();
const browser = await chromium.launch({ executablePath: found.executablePath, args: found.args, headless: true });
t.teardown(() => browser.close());
const problems: string[] = [];
/** Records script errors, CSP refusals and failed requests of `page`, and any request off `pageOrigin`. */
function watch(page: Page, pageOrigin: string, expected: RegExp | null = null): Page {
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
  page.on('console', (message) => {
    if (message.type() === 'error' && !expected?.test(message.text())) problems.push(`console: ${message.text()}`);
  });
  page.on('requestfailed', (request) => problems.push(`request failed: ${request.url()}`));
  page.on('request', (request) => {
    if (!request.url().startsWith(pageOrigin) && !request.url().startsWith('data:'))
      problems.push(`another host: ${request.url()}`);
  });
  return page;
}
const page = watch(await browser.newPage({ viewport: { width: 1280, height: 860 } }), origin);

const axeSource = await readFile(join(ROOT, 'node_modules', 'axe-core', 'axe.min.js'), 'utf8');

/** axe-core's serious and critical violations on the page as it is (evaluated past the CSP, as devtools would). */
async function accessibility(t: Test, name: string, on: Page = page): Promise<void> {
  await on.evaluate(axeSource);
  const violations = await on.evaluate(async () => {
    const axe = (globalThis as unknown as { axe: { run(): Promise<{ violations: any[] }> } }).axe;
    const { violations } = await axe.run();
    return violations
      .filter((v) => v.impact === 'serious' || v.impact === 'critical')
      .map((v) => `${v.id} (${v.impact}): ${v.nodes.map((n: any) => n.target.join(' ')).join(', ')}`);
  });
  t.same(violations, [], `axe-core: no serious or critical violation on ${name}`);
}

async function shot(name: string, on: Page = page): Promise<void> {
  // Animations stopped (a taken route's dashes move forever): the picture is of a still page.
  await on.screenshot({ path: join(SHOTS, `${name}.png`), animations: 'disabled', timeout: 120_000 });
}

/** The execution id of the page's URL. */
const executionOfUrl = (p: Page) => /\/executions\/([^/?]+)/.exec(new URL(p.url()).pathname)![1]!;

const FLOW = `start: greet
nodes:
  greet:
    processor: logic.code
    config:
      code: "export default async (input) => { if (input.fail) throw new Error('asked to fail'); return { hello: input.name } }"
    routes: { success: hold, failure: report }
  hold:
    processor: logic.code
    config:
      code: "export default async (input) => ({ ...input, held: true })"
    routes: { success: done }
  done:
    processor: logic.code
    config:
      code: "export default async (input) => ({ ...input, done: true })"
  report:
    processor: logic.code
    config:
      code: "export default async (input) => ({ reported: input.error.message })"
`;

/** Types `id` into the header's search box and submits it. */
async function find(id: string): Promise<void> {
  await page.getByLabel('Find by id or alias').fill(id);
  await page.getByRole('button', { name: 'Find', exact: true }).click();
}

let revisionUrl = '';
let definitionUrl = '';
let sessionId = '';
let orgUrl = '';

t.test('sign in anonymously; create an organization and a workflow blob', async (t) => {
  const response = await page.goto(`${origin}/console/`);
  t.equal(response?.status(), 200);
  t.match(response?.headers()['content-security-policy'], /script-src 'self'(;|$)/, 'no inline script allowed');
  await page.getByRole('heading', { name: 'Sign in to the workspace console' }).waitFor();
  await accessibility(t, 'the sign-in page');
  await shot('sign-in');
  await page.getByRole('button', { name: 'Sign in anonymously' }).click();
  await page.getByRole('heading', { name: 'Organizations' }).waitFor();
  t.equal(await page.evaluate(() => localStorage.length), 0, 'nothing in local storage without "remember me"');
  await page.getByLabel('Alias', { exact: true }).fill('acme');
  await page.getByRole('button', { name: 'Create organization' }).click();
  await page.getByRole('heading', { name: 'Organization acme' }).waitFor();
  orgUrl = page.url();
  await page.getByText('No blob yet').waitFor();
  await accessibility(t, 'an organization');
  await page.getByLabel('Alias', { exact: true }).fill('acme.flows');
  await page.getByRole('button', { name: 'Create blob' }).click();
  await page.getByRole('heading', { name: 'Blob acme.flows' }).waitFor();
  await page.getByRole('link', { name: 'Revision 1' }).waitFor();
  await accessibility(t, 'a blob');
  await shot('blob');
  await page.getByRole('link', { name: 'Revision 1' }).click();
  await page.getByRole('heading', { name: 'Revision 1' }).waitFor();
  await page.getByText('No definition yet.').waitFor();
  await accessibility(t, 'a revision');
  revisionUrl = page.url();
  // A deep link survives a reload.
  await page.reload();
  await page.getByRole('heading', { name: 'Revision 1' }).waitFor();
  t.equal(page.url(), revisionUrl);
});

t.test("write a definition with a failure route: check_definition's problems shown by node and field", async (t) => {
  await page.getByRole('link', { name: 'New definition' }).click();
  await page.getByRole('heading', { name: 'New definition' }).waitFor();
  await page.getByLabel('Definition (YAML or JSON)').fill(FLOW.replace('success: done', 'success: nowhere'));
  const problem = page.locator('.issues li').first();
  await problem.waitFor();
  t.match(await problem.textContent(), /route_target_not_found at hold\.routes\.success: /);
  await page.getByLabel('Definition (YAML or JSON)').fill(FLOW);
  await page.getByText('check_definition: no problem.').waitFor();
  await page.locator('.node-box[data-node="report"]').waitFor();
  await accessibility(t, 'the definition editor');
  await shot('definition-editor');
  await page.getByLabel('Alias (optional)').fill('greeting');
  await page.getByRole('button', { name: 'Create definition' }).click();
  await page.getByRole('heading', { name: 'Definition greeting' }).waitFor();
  definitionUrl = page.url();
  // A node's config on click.
  await page.locator('.node-box[data-node="greet"]').click();
  await page.getByRole('heading', { name: 'Node greet' }).waitFor();
  t.match(await page.locator('.panel').textContent(), /failure → report/);
  await accessibility(t, 'a definition');
  await shot('definition');
});

t.test('run it: the nodes turn succeeded live; a node shows its output', async (t) => {
  await page.getByLabel('Input (JSON)').fill('{"name": "Ada"}');
  await page.getByRole('button', { name: 'Run this definition' }).click();
  await page.getByRole('heading', { level: 1, name: /^Execution / }).waitFor();
  const executionId = executionOfUrl(page);
  // Mid-way (hold waits for the test): greet done, hold running, done not yet run.
  await page.locator('.node-box[data-node="greet"][data-state="succeeded"]').waitFor();
  await page.locator('.node-box[data-node="hold"][data-state="running"]').waitFor();
  t.equal(await page.locator('.node-box[data-node="done"]').getAttribute('data-state'), 'queued');
  await accessibility(t, 'a running execution');
  await shot('execution-running');
  gateOf(executionId).resolve();
  // Then, without a reload, as the events arrive.
  await page.locator('.node-box[data-node="done"][data-state="succeeded"]').waitFor();
  await page.getByTestId('execution-status').getByText('succeeded').waitFor();
  t.equal(await page.locator('.node-box[data-node="report"]').getAttribute('data-state'), 'skipped');
  // A middle node's run: its input (the first node's output) and its output.
  await page.getByRole('button', { name: /^hold:/ }).click();
  t.same(JSON.parse((await page.getByLabel('Input of run 1 of node hold', { exact: true }).textContent())!), {
    hello: 'Ada',
  });
  t.same(JSON.parse((await page.getByLabel('Output of run 1 of node hold', { exact: true }).textContent())!), {
    hello: 'Ada',
    held: true,
  });
  await page.getByRole('button', { name: /^done:/ }).click();
  const output = page.getByLabel('Output of run 1 of node done', { exact: true });
  await output.waitFor();
  t.same(JSON.parse((await output.textContent())!), { hello: 'Ada', held: true, done: true });
  t.same(JSON.parse((await page.getByLabel('Execution output, from node done', { exact: true }).textContent())!), {
    hello: 'Ada',
    held: true,
    done: true,
  });
  await accessibility(t, 'a finished execution');
  await shot('execution');
});

t.test('a failing node shows its error and the route taken', async (t) => {
  await page.goto(definitionUrl);
  await page.getByLabel('Input (JSON)').fill('{"fail": true}');
  await page.getByRole('button', { name: 'Run this definition' }).click();
  await page.getByRole('heading', { level: 1, name: /^Execution / }).waitFor();
  await page.locator('.node-box[data-node="report"][data-state="succeeded"]').waitFor();
  t.equal(await page.locator('.node-box[data-node="greet"]').getAttribute('data-state'), 'failed');
  t.equal(await page.locator('.node-box[data-node="hold"]').getAttribute('data-state'), 'skipped');
  await page.getByRole('button', { name: /^greet:/ }).click();
  const error = page.locator('.node-error');
  await error.waitFor();
  t.match(await error.textContent(), /asked to fail/);
  t.match(await page.locator('.node-run').textContent(), /Route taken: failure/);
  t.same(JSON.parse((await page.getByLabel('Input of run 1 of node greet', { exact: true }).textContent())!), {
    fail: true,
  });
  await page.getByRole('button', { name: /^report:/ }).click();
  t.same(
    JSON.parse((await page.getByLabel('Input of run 1 of node report', { exact: true }).textContent())!),
    { error: { code: 'code_error', message: 'Error: asked to fail' }, input: { fail: true } },
    "the failure route's node got the error and the failed node's input",
  );
  await accessibility(t, 'an execution with a failed node');
  await shot('execution-failure-route');
});

t.test(
  'find by a bare id: an execution, a session, a revision (with its blob type), a blob; a long value',
  async (t) => {
    const revisionId = /\/revisions\/([^/]+)/.exec(new URL(revisionUrl).pathname)![1]!;
    const definitionId = new URL(definitionUrl).pathname.split('/').at(-1)!;
    const { access_token } = JSON.parse(
      (await page.evaluate(() => sessionStorage.getItem('workspace-console.credential')))!,
    ) as { access_token: string };
    const rest = async (path: string, body: unknown) => {
      const res = await fetch(`${origin}${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${access_token}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      t.equal(res.status, 200, path);
      return (await res.json()) as any;
    };
    const { session } = await rest(`/v1/revisions/${revisionId}/create_session`, {});
    const name = 'x'.repeat(3000);
    const { execution } = await rest(`/v1/revisions/${revisionId}/create_execution`, {
      session_id: session.id,
      definition_id: definitionId,
      input_data: { name },
    });
    gateOf(execution.id).resolve();
    await page.goto(orgUrl);
    await find(execution.id);
    await page.getByRole('heading', { level: 1, name: `Execution ${execution.id}` }).waitFor();
    await page.getByTestId('execution-status').getByText('succeeded').waitFor();
    // A value past what is shown at once: cut, then whole on request; Copy offered.
    await page.getByRole('button', { name: /^hold:/ }).click();
    const input = page.getByLabel('Input of run 1 of node hold', { exact: true });
    t.match(await input.textContent(), /…$/, 'a long value is cut for display');
    const whole = JSON.stringify({ hello: name }, null, 2).length.toLocaleString('en-US');
    await page.getByRole('button', { name: `Show all ${whole} characters` }).click();
    t.same(JSON.parse((await input.textContent())!), { hello: name }, 'and shown whole on request');
    await page.getByRole('button', { name: 'Copy Input of run 1 of node hold' }).waitFor();
    await accessibility(t, 'an execution with a value shown whole');
    await find(session.id);
    await page.getByRole('heading', { level: 1, name: /^Session / }).waitFor();
    t.match(new URL(page.url()).pathname, new RegExp(`/sessions/${session.id}$`));
    await find(revisionId);
    await page.getByRole('heading', { name: 'Revision 1' }).waitFor();
    await page.getByTestId('revision-blob-type').getByText('svc.compute.workflow').waitFor();
    await page.getByRole('link', { name: 'Blob', exact: true }).click();
    await page.getByRole('heading', { name: 'Blob acme.flows' }).waitFor();
    const blobUrl = page.url();
    const blobId = new URL(blobUrl).pathname.split('/').at(-1)!;
    await page.goto(orgUrl);
    await find(blobId);
    await page.getByRole('heading', { name: 'Blob acme.flows' }).waitFor();
  },
);

t.test('a definition edited as a new one: the editor starts from its graph', async (t) => {
  await page.goto(definitionUrl);
  await page.getByRole('link', { name: 'Edit as a new definition' }).click();
  await page.getByRole('heading', { name: 'New definition' }).waitFor();
  const text = page.getByLabel('Definition (YAML or JSON)');
  // The editor's text is replaced once the definition is read.
  await page.waitForFunction(() =>
    String((globalThis as any).document.querySelector('textarea')?.value).includes('asked to fail'),
  );
  t.match(await text.inputValue(), /failure: report/, "the definition's routes");
  await text.fill((await text.inputValue()).replace('asked to fail', 'asked to fail, again'));
  await page.getByText('check_definition: no problem.').waitFor();
  await page.getByLabel('Alias (optional)').fill('greeting-again');
  await page.getByRole('button', { name: 'Create definition' }).click();
  await page.getByRole('heading', { name: 'Definition greeting-again' }).waitFor();
  await page.locator('.node-box[data-node="greet"]').click();
  await page.getByRole('heading', { name: 'Node greet' }).waitFor();
  t.match(await page.locator('.panel').textContent(), /asked to fail, again/);
});

t.test('cancel a running execution; re-run it (a double click runs once); the session lists them', async (t) => {
  await page.goto(definitionUrl);
  await page.getByLabel('Input (JSON)').fill('{"name": "Bo"}');
  await page.getByRole('button', { name: 'Run this definition' }).click();
  await page.locator('.node-box[data-node="hold"][data-state="running"]').waitFor();
  await page.getByRole('button', { name: 'Cancel execution' }).click();
  await page.getByTestId('execution-status').getByText('cancelled').waitFor();
  t.equal(await page.getByRole('button', { name: 'Cancel execution' }).count(), 0, 'no cancel once ended');
  const cancelledId = executionOfUrl(page);
  gateOf(cancelledId).resolve();
  await page.getByRole('button', { name: 'Re-run with the same input' }).dblclick();
  await page.getByRole('link', { name: cancelledId }).waitFor();
  const rerunId = executionOfUrl(page);
  t.not(rerunId, cancelledId, 'a new execution, naming the one it re-runs');
  gateOf(rerunId).resolve();
  await page.getByTestId('execution-status').getByText('succeeded').waitFor();
  await page.getByRole('button', { name: /^greet:/ }).click();
  t.same(
    JSON.parse((await page.getByLabel('Execution input, given to node greet', { exact: true }).textContent())!),
    { name: 'Bo' },
    'the same input',
  );
  // What the session holds besides executions, written through the API as the signed-in user.
  sessionId = (await page.getByRole('link', { name: 'Session' }).getAttribute('href'))!.split('/').at(-1)!;
  const revisionId = /\/revisions\/([^/]+)/.exec(new URL(revisionUrl).pathname)![1]!;
  const { access_token } = JSON.parse(
    (await page.evaluate(() => sessionStorage.getItem('workspace-console.credential')))!,
  ) as { access_token: string };
  const as = { authorization: `Bearer ${access_token}` };
  const writes = [
    await app.inject({
      method: 'POST',
      url: `/v1/revisions/${revisionId}/upload_session_object`,
      headers: as,
      payload: { session_id: sessionId, alias: 'settings', value: { depth: 2 } },
    }),
    await app.inject({
      method: 'POST',
      url: `/v1/revisions/${revisionId}/upload_session_file`,
      headers: {
        ...as,
        'content-type': 'application/octet-stream',
        'x-request-body': JSON.stringify({ session_id: sessionId, alias: 'notes.txt', content_type: 'text/plain' }),
      },
      payload: Buffer.from('hello from the session'),
    }),
    await app.inject({
      method: 'POST',
      url: `/v1/revisions/${revisionId}/post_session_thread_item`,
      headers: as,
      payload: { session_id: sessionId, text: 'see notes.txt', files: ['notes.txt'] },
    }),
    await app.inject({
      method: 'POST',
      url: `/v1/revisions/${revisionId}/mutate_session_graph`,
      headers: as,
      payload: {
        session_id: sessionId,
        mutations: [
          { op: 'upsert_node', id: 'ada', label: 'Person' },
          { op: 'upsert_node', id: 'charles', label: 'Person' },
          { op: 'upsert_edge', id: 'ada-knows-charles', label: 'knows', source: 'ada', target: 'charles' },
        ],
      },
    }),
  ];
  t.same(
    writes.map((write) => write.statusCode),
    [200, 200, 200, 200],
    writes.map((write) => write.body).join('\n'),
  );
  await page.getByRole('link', { name: 'Session' }).click();
  await page.getByRole('heading', { name: 'Executions' }).waitFor();
  const executionRows = page.locator('table.executions tbody tr');
  await executionRows.nth(1).waitFor();
  t.equal(await executionRows.count(), 2, 'the run and one re-run: the double click ran once');
  t.same(await executionRows.locator('.status').allTextContents(), ['succeeded', 'cancelled'], 'newest first');
  await page.getByLabel('Status').selectOption('failed');
  await page.getByText('No execution failed yet.').waitFor();
  await page.getByLabel('Status').selectOption('');
  await executionRows.nth(1).waitFor();
  t.same(JSON.parse((await page.getByLabel('Value of settings').textContent())!), { depth: 2 });
  await page.getByText('see notes.txt').waitFor();
  await page.locator('table.session-graph').getByText('ada → charles').waitFor();
  // Drawn too: a box per node, an arrow for the edge.
  await page.locator('.data-graph .data-box[data-element="charles"]').waitFor();
  t.equal(await page.locator('.data-graph .react-flow__edge').count(), 1, 'the session graph drawn');
  const download = page.waitForEvent('download');
  await page.getByRole('button', { name: 'Download notes.txt' }).click();
  const saved = await download;
  t.equal(saved.suggestedFilename(), 'notes.txt');
  t.equal(await readFile((await saved.path())!, 'utf8'), 'hello from the session', 'the file downloads');
  await accessibility(t, 'a session');
  await shot('session');
});

t.test('API keys: minted with the secret shown once, listed, revoked', async (t) => {
  await page.getByRole('link', { name: 'Your API keys' }).click();
  await page.getByRole('heading', { name: 'Your API keys' }).waitFor();
  await page.getByText('No API key yet.').waitFor();
  await page.getByLabel('Name (optional)').fill('ci');
  await page.getByRole('button', { name: 'Mint API key' }).click();
  t.match(await page.getByTestId('minted-key').textContent(), /^wsk_/, 'the secret, once');
  await page.getByRole('button', { name: 'Revoke ci' }).waitFor();
  await accessibility(t, 'API keys');
  await shot('api-keys');
  await page.getByRole('button', { name: 'I have copied it' }).click();
  t.equal(await page.getByTestId('minted-key').count(), 0, 'never shown again');
  await page.getByRole('button', { name: 'Revoke ci' }).click();
  await page.getByText('No API key yet.').waitFor();
});

t.test('limits of the organization; an operator overrides one on the ops console; sign out', async (t) => {
  await page.goto(revisionUrl);
  await page.getByRole('link', { name: 'Organizations' }).first().click();
  await page.getByRole('link', { name: 'acme' }).click();
  await page.getByRole('link', { name: 'Limits of this organization' }).click();
  const row = page.locator('tr[data-limit="platform.blobs_per_org"]');
  await row.waitFor();
  t.equal(await row.locator('.source').textContent(), 'default');
  t.equal(await row.locator('td').nth(4).textContent(), '1', 'one blob held');
  await accessibility(t, 'the limits page');
  await shot('limits');

  // The operator's console answers on the ops port only, asks for the token, and sends it.
  const { ops } = await startOpsApp(t, { config, db, databaseUrl });
  await ops.listen({ port: 0, host: '127.0.0.1' });
  const opsOrigin = `http://127.0.0.1:${(ops.server.address() as AddressInfo).port}`;
  t.match(await (await fetch(`${origin}/console/ops.html`)).text(), /<title>Workspace console</, 'not on the API port');
  t.equal((await fetch(`${opsOrigin}/graphql`, { method: 'POST' })).status, 401, 'the API still needs the token');
  // The browser logs the 401 of the wrong token tried below: that one is expected.
  const opsPage = watch(await browser.newPage({ viewport: { width: 1280, height: 860 } }), opsOrigin, /status of 401/);
  t.teardown(() => opsPage.close());
  const response = await opsPage.goto(`${opsOrigin}/console/limits`);
  t.match(response?.headers()['content-security-policy'], /connect-src 'self'/);
  await opsPage.getByRole('heading', { name: 'Operator console' }).waitFor();
  await accessibility(t, "the operator console's sign-in", opsPage);
  await opsPage.getByLabel('Operations token').fill('not-the-token');
  await opsPage.getByRole('button', { name: 'Sign in' }).click();
  t.match(await opsPage.getByRole('alert').textContent(), /unauthorized/, 'a wrong token is refused in words');
  await opsPage.getByLabel('Operations token').fill(config.secrets.OPS_TOKEN);
  await opsPage.getByLabel(/Your name/).fill('ada');
  await opsPage.getByRole('button', { name: 'Sign in' }).click();
  await opsPage.getByRole('heading', { name: 'Limit overrides' }).waitFor();
  await opsPage.getByLabel('Id or alias').fill('acme');
  await opsPage.getByRole('button', { name: 'Show limits' }).click();
  await opsPage.getByRole('heading', { name: 'Organization acme' }).waitFor();
  await opsPage.getByText('No override was ever set here.').waitFor();
  await opsPage.getByLabel('Limit', { exact: true }).selectOption('platform.blobs_per_org');
  await opsPage.getByLabel('Value (JSON)').fill('7');
  await opsPage.getByRole('button', { name: 'Set override' }).click();
  const opsRow = opsPage.locator('tr[data-limit="platform.blobs_per_org"]');
  await opsRow.locator('.source', { hasText: 'org override' }).waitFor();
  t.equal(await opsRow.locator('.value').textContent(), '7');
  t.match(await opsPage.locator('table.history tbody tr').first().textContent(), /set: no override → 7\s*ops:ada/);
  // A refusal in words with its code.
  await opsPage.getByLabel('Value (JSON)').fill('"many"');
  await opsPage.getByRole('button', { name: 'Set override' }).click();
  t.match(await opsPage.getByRole('alert').textContent(), /invalid_value_type/);
  await accessibility(t, "the operator console's limit overrides", opsPage);
  await shot('ops-limits', opsPage);

  // The tenant's page shows the new value and where it came from.
  await page.reload();
  await row.locator('.source', { hasText: 'org override' }).waitFor();
  t.equal(await row.locator('.value').textContent(), '7');

  // The operator's other pages: a runner with its sandbox figures, a cool-down released.
  const orgId = /\/orgs\/([^/]+)\/limits/.exec(new URL(page.url()).pathname)![1]!;
  const runner = await registerRunner(db, { host: 'console-host', pid: 4242, version: '0.1.0' }, () => {});
  t.teardown(() => runner.stop());
  await db.query('UPDATE runners SET sandbox = $2::jsonb WHERE id = $1::uuid', [
    runner.id,
    JSON.stringify({
      isolatesLive: 2,
      isolatesBusy: 1,
      isolatesIdle: 1,
      runsWaiting: 3,
      tenants: [{ orgId, waiting: 3, busy: 1 }],
    }),
  ]);
  await recordStrike(db, orgId, 'memory: the sandbox child passed its bound');
  await opsPage.getByRole('link', { name: 'Runners' }).click();
  const runnerRow = opsPage.locator(`tr[data-runner="${runner.id}"]`);
  await runnerRow.waitFor();
  t.match(await runnerRow.textContent(), /2 \(1 \/ 1\)/, 'isolates live (busy / idle)');
  await opsPage.getByRole('button', { name: `Release ${orgId}` }).waitFor();
  await accessibility(t, "the operator console's runners", opsPage);
  await shot('ops-runners', opsPage);
  await opsPage.getByRole('button', { name: `Release ${orgId}` }).click();
  await opsPage.getByText('No organization is cooled down.').waitFor();
  await opsPage.getByRole('link', { name: 'Queues' }).click();
  await opsPage.locator('tbody tr').first().waitFor();
  await accessibility(t, "the operator console's queues", opsPage);
  await opsPage.getByRole('link', { name: 'Audit log' }).click();
  await opsPage.getByRole('heading', { name: 'Audit log' }).waitFor();
  await opsPage.locator('main .empty').or(opsPage.locator('main table')).first().waitFor();
  await accessibility(t, "the operator console's audit log", opsPage);
  await opsPage.getByRole('link', { name: 'Retention' }).click();
  await opsPage.getByRole('button', { name: 'Run a retention sweep now' }).click();
  await opsPage.getByTestId('sweep-result').waitFor();
  t.match(await opsPage.getByTestId('sweep-result').textContent(), /^Sweep completed/);
  await opsPage.locator('tbody tr').first().waitFor();
  await accessibility(t, "the operator console's retention", opsPage);
});

t.test('schedules: the cron in words, the next fires in their zone, disable, refused runs in words', async (t) => {
  // The override above lets the organization hold a second blob: a scheduler.
  await page.goto(orgUrl);
  await page.getByLabel('Type').selectOption('svc.compute.scheduler');
  await page.getByLabel('Alias', { exact: true }).fill('acme.cron');
  await page.getByRole('button', { name: 'Create blob' }).click();
  await page.getByRole('heading', { name: 'Blob acme.cron' }).waitFor();
  await page.getByRole('link', { name: 'Revision 1' }).click();
  await page.getByRole('heading', { name: 'Schedules' }).waitFor();
  await page.getByText('No schedule yet.').waitFor();
  // Its revision found by id alone opens the same page, not the workflow revision page.
  const schedulerRevision = /\/revisions\/([^/]+)\/schedules$/.exec(new URL(page.url()).pathname)![1]!;
  await page.goto(orgUrl);
  await find(schedulerRevision);
  await page.getByText('No schedule yet.').waitFor();
  t.equal(new URL(page.url()).pathname, `/console/revisions/${schedulerRevision}/schedules`);
  // And a link to it as a bare revision goes on to its type's page.
  await page.goto(`${origin}/console/revisions/${schedulerRevision}`);
  await page.getByText('No schedule yet.').waitFor();
  t.equal(new URL(page.url()).pathname, `/console/revisions/${schedulerRevision}/schedules`);
  // Created with the page's form: the cron said in words as it is typed, a problem as one.
  await page.getByRole('button', { name: 'New schedule' }).click();
  const form = page.getByRole('form', { name: 'Schedule form: new schedule' });
  await form.getByLabel('Alias (optional)').fill('weekday-mornings');
  await form.getByLabel('Cron expression').fill('30 9 * *');
  t.equal(await form.getByLabel('Cron expression').getAttribute('aria-invalid'), 'true', 'four fields: not a cron');
  await form.getByLabel('Cron expression').fill('30 9 * * 1-5');
  await form.locator('.cron-words', { hasText: 'At 09:30, Monday through Friday' }).waitFor();
  await form.getByLabel('Time zone').fill('Asia/Tokyo');
  await form.getByLabel('Workflow revision id').fill(/\/revisions\/([^/]+)/.exec(new URL(revisionUrl).pathname)![1]!);
  await form.getByLabel('Session id').fill(sessionId);
  await form.getByLabel('Definition id').fill(/\/definitions\/([^/]+)/.exec(new URL(definitionUrl).pathname)![1]!);
  await form.getByLabel('Input (JSON)').fill('{"name": "the morning"}');
  await accessibility(t, 'the schedule form');
  await form.getByRole('button', { name: 'Create schedule' }).click();
  const panel = page.getByRole('region', { name: 'Schedule weekday-mornings' });
  await panel.waitFor();
  const scheduleId = (await panel.getAttribute('data-schedule'))!;
  await db.query(
    `INSERT INTO schedule_runs (schedule_id, due_at, status, error, "limit")
     VALUES ($1::uuid, now() - interval '1 day', 'refused', $2::jsonb, $3::jsonb)`,
    [
      scheduleId,
      JSON.stringify({ code: 'limit_exceeded', message: 'The session holds its most executions.' }),
      JSON.stringify({ id: 'workflow.executions_per_session', value: 2, held: 2 }),
    ],
  );
  await page.reload();
  await panel.waitFor();
  t.equal(await panel.locator('dd .cron-words').textContent(), 'At 09:30, Monday through Friday');
  const fires = await panel.locator('.next-fires li').allTextContents();
  t.equal(fires.length, 3, 'three next fires');
  t.ok(
    fires.every((fire) => /09:30:00 GMT\+9/.test(fire)),
    `in the schedule's zone: ${fires.join(' | ')}`,
  );
  await panel.getByRole('button', { name: 'Run history of weekday-mornings' }).click();
  const refused = panel.locator('tr[data-run-status="refused"]');
  await refused.waitFor();
  t.match(await refused.textContent(), /limit workflow\.executions_per_session is 2; 2 held/);
  await accessibility(t, 'schedules');
  await shot('schedules');
  await panel.getByRole('button', { name: 'Disable weekday-mornings' }).click();
  await panel.getByRole('button', { name: 'Enable weekday-mornings' }).waitFor();
  t.equal(await panel.locator('.schedule-state').textContent(), 'disabled');
  t.match(await panel.textContent(), /none while disabled/);
  // Edited: update_schedule with what changed.
  await panel.getByRole('button', { name: 'Edit weekday-mornings' }).click();
  const edit = panel.getByRole('form', { name: 'Schedule form: weekday-mornings' });
  t.equal(
    await edit.getByLabel('Input (JSON)').inputValue(),
    '{"name":"the morning"}',
    'the input it was created with',
  );
  await edit.getByLabel('Cron expression').fill('0 8 * * *');
  await edit.locator('.cron-words', { hasText: 'At 08:00' }).waitFor();
  await edit.getByRole('button', { name: 'Save weekday-mornings' }).click();
  await panel.locator('dd .cron-words', { hasText: 'At 08:00' }).waitFor();
  t.equal(await panel.locator('dd code').first().textContent(), '0 8 * * *');
  t.equal(await panel.locator('.schedule-state').textContent(), 'disabled', 'what was not changed stays');
});

t.test("a graph blob's query box and an NLP dataset's records", async (t) => {
  const { access_token } = JSON.parse(
    (await page.evaluate(() => sessionStorage.getItem('workspace-console.credential')))!,
  ) as { access_token: string };
  /** A new blob of `type` made on the organization's page; its first revision's page and id. */
  const newBlob = async (type: string, alias: string) => {
    await page.goto(orgUrl);
    await page.getByLabel('Type').selectOption(type);
    await page.getByLabel('Alias', { exact: true }).fill(alias);
    await page.getByRole('button', { name: 'Create blob' }).click();
    await page.getByRole('heading', { name: `Blob ${alias}` }).waitFor();
    await page.getByRole('link', { name: 'Revision 1' }).click();
    return /\/revisions\/([^/]+)/.exec(new URL(page.url()).pathname)![1]!;
  };
  const write = async (revision: string, name: string, payload: object) => {
    const answer = await app.inject({
      method: 'POST',
      url: `/v1/revisions/${revision}/${name}`,
      headers: { authorization: `Bearer ${access_token}` },
      payload,
    });
    t.equal(answer.statusCode, 200, answer.body);
  };

  // Both blob types are entitlements an organization starts without.
  const orgId = /\/orgs\/([^/]+)/.exec(new URL(orgUrl).pathname)![1]!;
  await setOverride(app, 'graphdb.enabled', 'org', orgId, true);
  await setOverride(app, 'nlp.enabled', 'org', orgId, true);
  const graphRevision = await newBlob('svc.graph.graphdb', 'acme.people');
  await page.getByRole('heading', { name: 'Graph query' }).waitFor();
  await write(graphRevision, 'mutate_graph', {
    mutations: [
      { op: 'upsert_node', id: 'ada', label: 'Person', properties: { born: 1815 } },
      { op: 'upsert_node', id: 'london', label: 'City' },
      { op: 'upsert_edge', id: 'ada-lives-in-london', label: 'lives_in', source: 'ada', target: 'london' },
    ],
  });
  await page
    .getByLabel('Query (JSON: start, steps)')
    .fill('{"start": {"ids": ["ada"]}, "steps": [{"direction": "out"}]}');
  await page.getByRole('button', { name: 'Run query' }).click();
  await page.getByRole('heading', { name: '2 nodes, 1 edges' }).waitFor();
  t.match(await page.locator('.graph-result').textContent(), /ada → london/);
  // Drawn as a graph too: a box per node (the walk's end marked), the edge between them.
  await page.locator('.data-box[data-element="london"].marked').waitFor();
  await page.locator('.data-box[data-element="ada"]').waitFor();
  t.equal(await page.locator('.data-graph .react-flow__edge').count(), 1, 'one edge drawn');
  await shot('graph-query');
  await accessibility(t, 'a graph query');
  await page
    .getByLabel('Query (JSON: start, steps)')
    .fill('{"start": {"ids": ["ada"]}, "steps": [{"min": 5, "max": 2}]}');
  await page.getByRole('button', { name: 'Run query' }).click();
  t.match(await page.getByRole('alert').textContent(), /invalid_request_body/, 'a refusal in words with its code');

  const nlpRevision = await newBlob('svc.dataset.nlp', 'acme.texts');
  await page.getByText('No record yet.').waitFor();
  await write(nlpRevision, 'upload_records', {
    records: [
      { text: 'great service', labels: ['positive'] },
      { text: 'slow reply', labels: ['negative'] },
    ],
  });
  await page.reload();
  await page.locator('table.records tbody tr').nth(1).waitFor();
  t.same(await page.locator('table.records tbody td:nth-child(2)').allTextContents(), ['great service', 'slow reply']);
  await accessibility(t, 'NLP records');
});

t.test(
  "an ONNX model's page: too large refused before sending, upload with progress, inputs and outputs, run",
  async (t) => {
    const orgId = /\/orgs\/([^/]+)/.exec(new URL(orgUrl).pathname)![1]!;
    await setOverride(app, 'onnx.enabled', 'org', orgId, true);
    await page.goto(orgUrl);
    await page.getByLabel('Type').selectOption('svc.model.onnx');
    await page.getByLabel('Alias', { exact: true }).fill('acme.model');
    await page.getByRole('button', { name: 'Create blob' }).click();
    await page.getByRole('heading', { name: 'Blob acme.model' }).waitFor();
    const blobId = /\/blobs\/([^/]+)/.exec(new URL(page.url()).pathname)![1]!;
    await page.getByRole('link', { name: 'Revision 1' }).click();
    await page.getByRole('heading', { name: 'Model (revision 1)' }).waitFor();
    await page.getByText('No model yet: upload one below.').waitFor();
    // The default bound, read before the page is reloaded (a reload would cut that read off).
    await page.getByText('At most 524,288,000 bytes (limit onnx.model_bytes).').waitFor();
    const model = mlpModel();
    const puts: string[] = [];
    page.on('request', (request) => {
      if (request.method() === 'PUT') puts.push(request.url());
    });

    // Past the blob's bound: refused in the page, in words, and nothing sent.
    await setOverride(app, 'onnx.model_bytes', 'blob', blobId, 100);
    await page.reload();
    await page.getByText('At most 100 bytes (limit onnx.model_bytes).').waitFor();
    await page
      .getByLabel('Model file (.onnx)')
      .setInputFiles({ name: 'mlp.onnx', mimeType: 'application/octet-stream', buffer: model });
    await page.getByRole('button', { name: 'Upload model' }).click();
    const refusal = page.getByRole('alert');
    await refusal.waitFor();
    t.match(await refusal.textContent(), /limit_exceeded.*The limit onnx\.model_bytes is 100\./s);
    t.same(puts, [], 'no byte sent');

    // Within it: uploaded with its progress shown, then the model's inputs and outputs.
    await setOverride(app, 'onnx.model_bytes', 'blob', blobId, 1_000_000);
    await page.reload();
    await page
      .getByLabel('Model file (.onnx)')
      .setInputFiles({ name: 'mlp.onnx', mimeType: 'application/octet-stream', buffer: model });
    await page.getByRole('button', { name: 'Upload model' }).click();
    await page.getByTestId('upload-done').waitFor();
    t.equal(puts.length, 1, 'one upload');
    t.equal(
      await page.getByTestId('upload-progress').getAttribute('value'),
      String(model.length),
      'the progress bar ends at the whole file',
    );
    const inputs = page.locator('table.tensors', { has: page.locator('caption', { hasText: 'Inputs' }) });
    await inputs.locator('tbody tr').first().waitFor();
    t.match(await inputs.locator('tbody tr').first().textContent(), /X\s*float32\s*\[batch, 4\]/);
    t.match(
      await page.locator('table.tensors', { has: page.locator('caption', { hasText: 'Outputs' }) }).textContent(),
      /Y\s*float32\s*\[batch, 2\]/,
    );
    t.equal(await page.getByTestId('revision-status').textContent(), 'ready');

    // run_model with a tensor per input, started from one of the input's type and shape.
    await page.getByLabel('Input X (JSON tensor)').fill('{"type": "float32", "dims": [1, 4], "data": [1, 2, 3, 4]}');
    await page.getByRole('button', { name: 'Run model' }).click();
    const output = page.getByLabel('Output Y');
    await output.waitFor();
    const y = JSON.parse((await output.textContent())!) as { type: string; dims: number[]; data: number[] };
    t.same([y.type, y.dims], ['float32', [1, 2]]);
    const expected = mlpReference([[1, 2, 3, 4]])[0]!;
    t.ok(
      y.data.every((v, i) => Math.abs(v - expected[i]!) < 1e-4),
      `the model's answer: ${JSON.stringify(y.data)}`,
    );
    await accessibility(t, "an ONNX model's page");
    await shot('model');
    // A refusal of run_model in words: the input's rank is the model's.
    await page.getByLabel('Input X (JSON tensor)').fill('{"type": "float32", "dims": [4], "data": [1, 2, 3, 4]}');
    await page.getByRole('button', { name: 'Run model' }).click();
    t.match(await page.getByRole('alert').textContent(), /invalid_request_body.*X/s);
  },
);

t.test('sign out', async (t) => {
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.getByRole('heading', { name: 'Sign in to the workspace console' }).waitFor();
  t.equal(await page.evaluate(() => sessionStorage.length + localStorage.length), 0, 'the credential is gone');
});

t.test('nothing went wrong in the page: no script error, no CSP refusal, nothing from another host', async (t) => {
  t.same(problems, []);
});

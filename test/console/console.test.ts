// The web console (docs/console.md) in a real browser: headless Chromium from @sparticuz/chromium,
// driven by playwright-core, on the control plane's own /console under its CSP. What a user does:
// sign in anonymously, create an organization and a workflow blob, write a definition with a
// failure route (check_definition's problem shown on the field first), run it and watch its nodes
// turn succeeded live, open a node's output; a failing node shows its error and the route taken;
// cancel a running execution. axe-core runs on each page; screenshots go to docs/console/.
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
import { buildTestApp } from '../helpers/app.ts';
import { startRunner } from '../helpers/runner.ts';

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

const { app, databaseUrl } = await buildTestApp(t);
await app.listen({ port: 0, host: '127.0.0.1' });
const origin = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
await startRunner(t, databaseUrl, { processors: new Map([...processorRegistry, ['logic.code', gatedCode]]) });

const found = await findChromium();
const browser = await chromium.launch({ executablePath: found.executablePath, args: found.args, headless: true });
t.teardown(() => browser.close());
const page = await browser.newPage({ viewport: { width: 1280, height: 860 } });
const problems: string[] = [];
page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
page.on('console', (message) => {
  if (message.type() === 'error') problems.push(`console: ${message.text()}`);
});
page.on('requestfailed', (request) => problems.push(`request failed: ${request.url()}`));
page.on('request', (request) => {
  if (!request.url().startsWith(origin) && !request.url().startsWith('data:'))
    problems.push(`another host: ${request.url()}`);
});

const axeSource = await readFile(join(ROOT, 'node_modules', 'axe-core', 'axe.min.js'), 'utf8');

/** axe-core's serious and critical violations on the page as it is (evaluated past the CSP, as devtools would). */
async function accessibility(t: Test, name: string): Promise<void> {
  await page.evaluate(axeSource);
  const violations = await page.evaluate(async () => {
    const axe = (globalThis as unknown as { axe: { run(): Promise<{ violations: any[] }> } }).axe;
    const { violations } = await axe.run();
    return violations
      .filter((v) => v.impact === 'serious' || v.impact === 'critical')
      .map((v) => `${v.id} (${v.impact}): ${v.nodes.map((n: any) => n.target.join(' ')).join(', ')}`);
  });
  t.same(violations, [], `axe-core: no serious or critical violation on ${name}`);
}

async function shot(name: string): Promise<void> {
  // Animations stopped (a taken route's dashes move forever): the picture is of a still page.
  await page.screenshot({ path: join(SHOTS, `${name}.png`), animations: 'disabled', timeout: 120_000 });
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

let revisionUrl = '';
let definitionUrl = '';

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
  await page.getByRole('heading', { name: /^Execution / }).waitFor();
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
  await page.getByRole('button', { name: /^done:/ }).click();
  const output = page.getByLabel('Output of node done');
  await output.waitFor();
  t.same(JSON.parse((await output.textContent())!), { hello: 'Ada', held: true, done: true });
  await accessibility(t, 'a finished execution');
  await shot('execution');
});

t.test('a failing node shows its error and the route taken', async (t) => {
  await page.goto(definitionUrl);
  await page.getByLabel('Input (JSON)').fill('{"fail": true}');
  await page.getByRole('button', { name: 'Run this definition' }).click();
  await page.getByRole('heading', { name: /^Execution / }).waitFor();
  await page.locator('.node-box[data-node="report"][data-state="succeeded"]').waitFor();
  t.equal(await page.locator('.node-box[data-node="greet"]').getAttribute('data-state'), 'failed');
  t.equal(await page.locator('.node-box[data-node="hold"]').getAttribute('data-state'), 'skipped');
  await page.getByRole('button', { name: /^greet:/ }).click();
  const error = page.locator('.node-error');
  await error.waitFor();
  t.match(await error.textContent(), /asked to fail/);
  t.match(await page.locator('.node-run').textContent(), /Route taken: failure/);
  await accessibility(t, 'an execution with a failed node');
  await shot('execution-failure-route');
});

t.test('cancel a running execution; the session lists its executions newest first', async (t) => {
  await page.goto(definitionUrl);
  await page.getByLabel('Input (JSON)').fill('{"name": "Bo"}');
  await page.getByRole('button', { name: 'Run this definition' }).click();
  await page.locator('.node-box[data-node="hold"][data-state="running"]').waitFor();
  await page.getByRole('button', { name: 'Cancel execution' }).click();
  await page.getByTestId('execution-status').getByText('cancelled').waitFor();
  t.equal(await page.getByRole('button', { name: 'Cancel execution' }).count(), 0, 'no cancel once ended');
  gateOf(executionOfUrl(page)).resolve();
  await page.getByRole('link', { name: 'Session' }).click();
  await page.getByRole('heading', { name: 'Executions' }).waitFor();
  await page.locator('tbody tr').first().waitFor();
  t.equal(await page.locator('tbody tr').count(), 1, 'the session of this run holds one execution');
  t.equal(await page.locator('tbody tr .status').first().textContent(), 'cancelled');
  await page.getByLabel('Status').selectOption('succeeded');
  await page.getByText('No execution succeeded yet.').waitFor();
  await accessibility(t, 'a session');
  await shot('session');
});

t.test('limits of the organization; sign out', async (t) => {
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
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.getByRole('heading', { name: 'Sign in to the workspace console' }).waitFor();
  t.equal(await page.evaluate(() => sessionStorage.length + localStorage.length), 0, 'the credential is gone');
});

t.test('nothing went wrong in the page: no script error, no CSP refusal, nothing from another host', async (t) => {
  t.same(problems, []);
});

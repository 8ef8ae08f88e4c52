/**
 * The web console (docs/benchmarks.md "Web console"), in headless Chromium (test/helpers/chromium.ts)
 * against a system of its own with one runner at its defaults. Prints, asserts nothing:
 *
 * - First load of /console: the JavaScript it loads (files, bytes, gzipped bytes) and the time to
 *   interactive — navigation start to the sign-in page's first button in the DOM (React has
 *   rendered and attached its handlers) — over 5 loads, each in a fresh browser context (no cache).
 * - An execution page following an execution of 500 node runs (a `logic.code` → `logic.switch`
 *   loop, 250 times round, after a 3 s `logic.sleep` that lets the page open and subscribe): for
 *   every event that arrived live, the time from the event's own timestamp (written by the
 *   database) to its row in the page's timeline (a MutationObserver's callback, so after React's
 *   commit), p50/p99/max; and whether every event of the execution is on the page once. The same
 *   lag split at the page's WebSocket message: the service's delivery, then the page's own work;
 *   and the delivery to a subscriber in this process that does nothing else (the service alone).
 *
 *   ./node_modules/.bin/node --no-node-snapshot bench/console.ts
 * `npm run bench` runs it after the tenant-isolation section (`--console-only` runs only it).
 */
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { gzipSync } from 'node:zlib';
import '../shared/db/embedded.ts';
import pg from 'pg';
import { chromium, type Browser } from 'playwright-core';
import WebSocket from 'ws';
import { EVENTS_CHANNEL, parseAnnouncement } from '../shared/events/store.ts';
import { findChromium } from '../test/helpers/chromium.ts';
import { fmt, summarize, table } from './stats.ts';
import { runSection, type System } from './system.ts';

const ROOT = join(import.meta.dirname, '..');
const LOADS = 5;
const LOOPS = 250;
/** Events listed one by one with their delivery's parts, slowest first. */
const SLOWEST = 12;
const log = (message: string) => process.stderr.write(`[bench console] ${message}\n`);

/** Two node runs per loop (step, check): 500 node runs. */
const LOOP_GRAPH = {
  start: 'wait',
  nodes: {
    wait: { processor: 'logic.sleep', config: { seconds: 3 }, routes: { success: 'step' } },
    step: {
      processor: 'logic.code',
      config: { code: 'export default async (input) => ({ n: (input.n ?? 0) + 1 })' },
      routes: { success: 'check' },
    },
    check: {
      processor: 'logic.switch',
      config: { cases: [{ when: { path: 'n', gte: LOOPS }, route: 'done' }], default: 'again' },
      routes: { done: null, again: 'step' },
    },
  },
};

async function rest(system: System, token: string, method: string, path: string, body: unknown): Promise<any> {
  const response = await fetch(`${system.apiUrl}${path}`, {
    method,
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify(body),
  });
  const parsed = (await response.json()) as any;
  if (response.status >= 300) throw new Error(`${method} ${path}: ${response.status} ${JSON.stringify(parsed)}`);
  return parsed;
}

/**
 * Records, in the page, when the sign-in page's first button and each timeline row reach the DOM
 * (an init script: plain JavaScript, run before the page's own; devtools' scripts pass the CSP).
 */
const INSTRUMENT = `
const state = { interactive: 0, rows: [], received: {} };
// Settles when the execution.finished row is in the DOM: waited on without polling the page.
state.finished = new Promise((resolve) => (state.finish = resolve));
globalThis.consoleBench = state;
// When each pushed event reached the page (its WebSocket message), to split the lag in two.
const NativeSocket = globalThis.WebSocket;
globalThis.WebSocket = class extends NativeSocket {
  constructor(...args) {
    super(...args);
    this.addEventListener('message', (message) => {
      const at = Date.now();
      try {
        const event = JSON.parse(message.data)?.params?.event;
        if (event && typeof event.id === 'string') state.received[event.id] ??= at;
      } catch {}
    });
  }
};
new MutationObserver((records) => {
  const applied = Date.now();
  for (const record of records)
    for (const node of record.addedNodes) {
      if (!(node instanceof HTMLElement)) continue;
      if (!state.interactive && (node.matches('button') || node.querySelector('button'))) state.interactive = performance.now();
      const rows = node.matches('li[data-event]') ? [node] : [...node.querySelectorAll('li[data-event]')];
      for (const row of rows)
        state.rows.push({
          id: row.getAttribute('data-event'),
          at: row.querySelector('time')?.getAttribute('datetime') ?? '',
          applied,
        });
      if (rows.some((row) => row.querySelector('code')?.textContent === 'execution.finished')) state.finish();
    }
}).observe(document, { childList: true, subtree: true });
`;

/** A wall-clock time in ms with the monotonic clock's fraction, comparable with PostgreSQL's µs timestamps. */
const now = () => performance.timeOrigin + performance.now();

/**
 * The idle subscriber's delivery split at the commit (`pg_xact_commit_timestamp`: the section's
 * server runs with `track_commit_timestamp`) and at the announcement as this process hears it:
 * insert → commit (the rest of the runner's statement), commit → the NOTIFY at a LISTEN connection
 * here (PostgreSQL's delivery and this process's turn), commit → the subscriber's message (the
 * same through the control plane), and their difference, event by event: the control plane's own
 * part (its LISTEN connection, its turn, the push). Rows for the split table.
 */
async function deliveryHops(
  system: System,
  executionId: string,
  subscribedAt: number,
  announced: ReadonlyArray<{ newest: number; at: number }>,
  received: ReadonlyMap<string, number>,
): Promise<{ split: string[][]; slowest: string[][] }> {
  const { rows } = await system.sql.query<{ id: string; at: string; committed: string | null }>(
    `SELECT id::text AS id, extract(epoch FROM at) * 1000 AS at,
            extract(epoch FROM pg_xact_commit_timestamp(xmin)) * 1000 AS committed
       FROM execution_events WHERE execution_id = $1::uuid ORDER BY execution_events.id`,
    [executionId],
  );
  const insertToCommit: number[] = [];
  const commitToNotify: number[] = [];
  const commitToMessage: number[] = [];
  const controlPlane: number[] = [];
  const events: Array<{ id: string; parts: number[] }> = [];
  // Announcements arrive in commit order, so in id order: one pass pairs each event with the first that names it.
  let next = 0;
  for (const row of rows) {
    const at = Number(row.at);
    while (next < announced.length && announced[next]!.newest < Number(row.id)) next++;
    const message = received.get(row.id);
    if (at < subscribedAt || row.committed === null || next === announced.length || message === undefined) continue;
    const committed = Number(row.committed);
    const notified = announced[next]!.at;
    insertToCommit.push(committed - at);
    commitToNotify.push(notified - committed);
    commitToMessage.push(message - committed);
    controlPlane.push(message - notified);
    events.push({ id: row.id, parts: [message - at, committed - at, notified - committed, message - notified] });
  }
  const line = (label: string, samples: number[]) => {
    const summary = summarize(samples);
    return [label, fmt(summary.p50), fmt(summary.p99), fmt(summary.max)];
  };
  // The slowest events one by one: whether their lag lies in one part or is spread over all.
  const slowest = events
    .sort((a, b) => b.parts[0]! - a.parts[0]!)
    .slice(0, SLOWEST)
    .map((event) => [event.id, ...event.parts.map(fmt)]);
  return {
    split: [
      line('  idle subscriber, split: event insert → its commit', insertToCommit),
      line('    commit → the NOTIFY at a LISTEN connection in the bench process', commitToNotify),
      line("    commit → the idle subscriber's message", commitToMessage),
      line("    the control plane's part (message − NOTIFY, per event)", controlPlane),
    ],
    slowest: [['event', 'insert → message', 'insert → commit', 'commit → NOTIFY', "control plane's part"], ...slowest],
  };
}

async function firstLoad(browser: Browser, system: System): Promise<string[][]> {
  const rows: string[][] = [['load', 'JS files', 'JS bytes', 'JS gzipped', 'time to interactive (ms)']];
  const times: number[] = [];
  for (let i = 1; i <= LOADS; i++) {
    const context = await browser.newContext();
    await context.addInitScript(INSTRUMENT);
    const page = await context.newPage();
    const scripts: Array<Promise<Buffer>> = [];
    page.on('response', (response) => {
      if (response.request().resourceType() === 'script') scripts.push(response.body());
    });
    await page.goto(`${system.apiUrl}/console/`);
    await page.getByRole('button', { name: 'Sign in anonymously' }).waitFor();
    const interactive = await page.evaluate(
      () => (globalThis as unknown as { consoleBench: { interactive: number } }).consoleBench.interactive,
    );
    const bodies = await Promise.all(scripts);
    const bytes = bodies.reduce((sum, body) => sum + body.length, 0);
    const gzipped = bodies.reduce((sum, body) => sum + gzipSync(body, { level: 9 }).length, 0);
    times.push(interactive);
    rows.push([String(i), String(bodies.length), String(bytes), String(gzipped), fmt(interactive)]);
    await context.close();
  }
  const summary = summarize(times);
  rows.push(['median', '', '', '', fmt(summary.p50)]);
  return rows;
}

async function executionPage(
  browser: Browser,
  system: System,
): Promise<{ following: string[][]; split: string[][]; slowest: string[][] }> {
  const context = await browser.newContext();
  await context.addInitScript(INSTRUMENT);
  const page = await context.newPage();
  await page.goto(`${system.apiUrl}/console/`);
  await page.getByRole('button', { name: 'Sign in anonymously' }).click();
  await page.getByRole('heading', { name: 'Organizations' }).waitFor();
  const { access_token: token } = JSON.parse(
    (await page.evaluate(() => sessionStorage.getItem('workspace-console.credential')))!,
  ) as { access_token: string };
  const { org } = await rest(system, token, 'POST', '/v1/orgs', { alias: `bench-console-${process.pid}` });
  const { revision } = await rest(system, token, 'POST', `/v1/blobs/${org.id}`, {
    type: 'svc.compute.workflow',
    alias: `bench-console-${process.pid}.flows`,
  });
  const command = (name: string, params: unknown) =>
    rest(system, token, 'POST', `/v1/revisions/${revision.id}/${name}`, params);
  const { definition } = await command('create_definition', { category: 'workflow', graph: LOOP_GRAPH });
  const { session } = await command('create_session', {});
  const { execution } = await command('create_execution', {
    session_id: session.id,
    definition_id: definition.id,
    input_data: {},
  });
  log(`execution ${execution.id}: ${LOOPS * 2} node runs after a 3 s sleep`);
  // The same execution followed from here too, by a subscriber with nothing else to do: the
  // service's delivery alone, without the page's main thread, which takes a message only
  // between its own tasks.
  const nodeReceived = new Map<string, number>();
  // And the announcements (NOTIFY) themselves, heard by a LISTEN connection of this process: the
  // same process as the subscriber, so its turns of the event loop weigh on both alike, and the
  // difference between the two is the control plane's.
  const announced: Array<{ newest: number; at: number }> = [];
  const listener = new pg.Client({ connectionString: system.databaseUrl, application_name: 'bench-listener' });
  listener.on('notification', (message) => {
    const at = now();
    const announcement = message.payload ? parseAnnouncement(message.payload) : null;
    if (announcement?.stream === 'execution' && announcement.ownerId === execution.id)
      announced.push({ newest: announcement.newest, at });
  });
  await listener.connect();
  await listener.query(`LISTEN ${EVENTS_CHANNEL}`);
  const socket = new WebSocket(system.wsUrl, { headers: { authorization: `Bearer ${token}` } });
  socket.on('message', (data) => {
    const at = now();
    const event = (JSON.parse(String(data)) as { params?: { event?: { id?: string } } }).params?.event;
    if (typeof event?.id === 'string' && !nodeReceived.has(event.id)) nodeReceived.set(event.id, at);
  });
  await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject));
  socket.send(
    JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'subscribe',
      params: { revision_id: revision.id, execution_id: execution.id },
    }),
  );
  await page.goto(`${system.apiUrl}/console/revisions/${revision.id}/executions/${execution.id}`);
  await page.locator('.node-box[data-node="check"]').waitFor();
  // CONSOLE_PAGE_PROFILE=FILE: a CPU profile of the page's main thread over the follow (DevTools'
  // .cpuprofile), to see what the page does between a message and its row.
  const profileFile = process.env.CONSOLE_PAGE_PROFILE;
  const cdp = profileFile ? await context.newCDPSession(page) : undefined;
  if (cdp) {
    await cdp.send('Profiler.enable');
    await cdp.send('Profiler.start');
  }
  // Events written from here on arrive live; those before were replayed on subscribing.
  const subscribedAt = await page.evaluate(() => Date.now());
  // Waited on in the page without polling it: a locator's wait would scan the growing timeline
  // on the page's main thread many times a second, time taken from what is measured.
  page.setDefaultTimeout(300_000);
  await page.evaluate(
    () => (globalThis as unknown as { consoleBench: { finished: Promise<void> } }).consoleBench.finished,
  );
  await page.getByTestId('execution-status').getByText('succeeded').waitFor();
  if (cdp && profileFile) writeFileSync(profileFile, JSON.stringify((await cdp.send('Profiler.stop')).profile));
  const { rows, received } = await page.evaluate(() => {
    const { consoleBench } = globalThis as unknown as {
      consoleBench: { rows: Array<{ id: string; at: string; applied: number }>; received: Record<string, number> };
    };
    return { rows: consoleBench.rows, received: consoleBench.received };
  });
  const stored = (
    await system.sql.query<{ id: string }>(
      'SELECT id::text AS id FROM execution_events WHERE execution_id = $1::uuid ORDER BY id',
      [execution.id],
    )
  ).rows.map((row) => row.id);
  const onPage = rows.map((row) => row.id);
  const once = new Set(onPage).size === onPage.length;
  const missing = stored.filter((id) => !onPage.includes(id)).length;
  const live = rows.filter((row) => Date.parse(row.at) >= subscribedAt).map((row) => row.applied - Date.parse(row.at));
  const lag = summarize(live);
  // The same events' lag split at the WebSocket message: the service's delivery, then the page's.
  const liveRows = rows.filter((row) => Date.parse(row.at) >= subscribedAt && received[row.id] !== undefined);
  const delivery = summarize(liveRows.map((row) => received[row.id]! - Date.parse(row.at)));
  const inPage = summarize(liveRows.map((row) => row.applied - received[row.id]!));
  socket.close();
  await listener.end();
  const hops = await deliveryHops(system, execution.id, subscribedAt, announced, nodeReceived);
  const toNode = summarize(
    liveRows.filter((row) => nodeReceived.has(row.id)).map((row) => nodeReceived.get(row.id)! - Date.parse(row.at)),
  );
  const runs = (
    await system.sql.query<{ node_runs: number }>('SELECT node_runs FROM executions WHERE id = $1::uuid', [
      execution.id,
    ])
  ).rows[0]?.node_runs;
  await context.close();
  const split = [
    ['part of the lag', 'p50 ms', 'p99 ms', 'max ms'],
    ['delivery: event timestamp → its WebSocket message', fmt(delivery.p50), fmt(delivery.p99), fmt(delivery.max)],
    ['  the same to an idle subscriber in the bench process', fmt(toNode.p50), fmt(toNode.p99), fmt(toNode.max)],
    ['page: WebSocket message → its row in the DOM', fmt(inPage.p50), fmt(inPage.p99), fmt(inPage.max)],
    ...hops.split,
  ];
  const following = [
    ['node runs', 'events stored', 'on the page', 'each once', 'missing', 'live', 'p50 ms', 'p99 ms', 'max ms'],
    [
      String(runs),
      String(stored.length),
      String(onPage.length),
      once ? 'yes' : 'no',
      String(missing),
      String(lag.count),
      fmt(lag.p50),
      fmt(lag.p99),
      fmt(lag.max),
    ],
  ];
  return { following, split, slowest: hops.slowest };
}

async function main(system: System): Promise<string> {
  log('building the console (vite build console)');
  await promisify(execFile)(join(ROOT, 'node_modules', '.bin', 'vite'), ['build', 'console', '--logLevel', 'error'], {
    cwd: ROOT,
  });
  const found = await findChromium();
  const browser = await chromium.launch({ executablePath: found.executablePath, args: found.args, headless: true });
  try {
    log(`first load, ${LOADS} times`);
    const load = await firstLoad(browser, system);
    log('an execution page following 500 node runs');
    const { following, split, slowest } = await executionPage(browser, system);
    return [
      `First load of /console (${found.source} Chromium, a fresh context each time):`,
      table(load),
      '',
      'An execution page following 500 node runs (event timestamp → its row in the page):',
      table(following),
      '',
      "The same live events, the lag split at the page's WebSocket:",
      table(split),
      '',
      `The idle subscriber's ${SLOWEST} slowest live events, their delivery's parts (ms):`,
      table(slowest),
    ].join('\n');
  } finally {
    await browser.close();
  }
}

// Commit timestamps, for the split of delivery at the commit (a few bytes per transaction).
await runSection(1, main, { serverFlags: ['-c', 'track_commit_timestamp=on'] });

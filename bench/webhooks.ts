/**
 * Webhooks in (docs/benchmarks.md, "Webhooks"), on a system of its own with one runner at its
 * defaults (throttles included). Prints, asserts nothing:
 *
 * - webhook in → first node started: a quiet organization posts signed requests to its trigger one
 *   at a time; from the request leaving the client to the execution's first `node.started` event
 *   (p50 / p99), and the request's own answer (202) latency;
 * - a quiet organization's answer latency (p50 / p99) while another organization floods its
 *   triggers from many connections at once, with the flood's accepted and throttled counts.
 *
 *   ./node_modules/.bin/node --no-node-snapshot bench/webhooks.ts [--requests 100 --flood-triggers 10 --flood-senders 16]
 * `npm run bench` runs it after the scheduler's section (`--webhooks-only` runs only it).
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import '../shared/db/embedded.ts';
import { signedHeaders } from '../shared/webhooks/signature.ts';
import { command, createWorkload, type Workload } from './client.ts';
import { fmt, summarize, table } from './stats.ts';
import { BENCH_GRAPH } from './workflow.ts';
import { runSection, type System } from './system.ts';

const { values: args } = parseArgs({
  options: {
    requests: { type: 'string', default: '100' },
    'flood-triggers': { type: 'string', default: '10' },
    'flood-senders': { type: 'string', default: '16' },
  },
});
/** Quiet requests per phase: under the default 120 a minute per trigger, so none is throttled. */
const REQUESTS = Number(args.requests);
const FLOOD_TRIGGERS = Number(args['flood-triggers']);
const FLOOD_SENDERS = Number(args['flood-senders']);

const log = (message: string) => process.stderr.write(`[bench webhooks] ${message}\n`);

interface Trigger {
  url: string;
  secret: string;
}

async function createTrigger(system: System, work: Workload, session = 0): Promise<Trigger> {
  const created = await command(system, work.account, work.revisionId, 'create_trigger', {
    session_id: work.sessionIds[session % work.sessionIds.length],
    definition_id: work.definitionId,
  });
  return { url: `${system.apiUrl}${created.trigger.path}`, secret: created.secret };
}

/** One signed request; its status, answer latency and the time it left (epoch ms). */
async function post(trigger: Trigger, n: number) {
  const body = JSON.stringify({ n });
  const sentAt = Date.now();
  const started = performance.now();
  const res = await fetch(trigger.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...signedHeaders(trigger.secret, `msg_${randomUUID()}`, body) },
    body,
  });
  const answer = (await res.json()) as { execution_id?: string };
  return { status: res.status, ms: performance.now() - started, sentAt, executionId: answer.execution_id };
}

/** The quiet organization's requests, one at a time, 4 a second. */
async function quietRun(trigger: Trigger) {
  const results = [];
  for (let i = 0; i < REQUESTS; i++) {
    results.push(await post(trigger, i));
    await sleep(250);
  }
  return results;
}

async function main(system: System): Promise<string> {
  const quiet = await createWorkload(system, BENCH_GRAPH, { sessions: 1, quota: 1_000_000 });
  const noisy = await createWorkload(system, BENCH_GRAPH, { sessions: 4, quota: 1_000_000 });
  const quietTrigger = await createTrigger(system, quiet);
  // Two quiet triggers: each phase stays under one trigger's allowance per minute.
  const quietTrigger2 = await createTrigger(system, quiet);
  const floodTriggers: Trigger[] = [];
  for (let i = 0; i < FLOOD_TRIGGERS; i++) floodTriggers.push(await createTrigger(system, noisy, i));

  log(`${REQUESTS} quiet requests alone`);
  await post(quietTrigger, -1); // warm the path and the runner's sandbox
  await sleep(2000);
  const alone = await quietRun(quietTrigger);

  log(
    `${REQUESTS} quiet requests while ${FLOOD_SENDERS} senders flood ${FLOOD_TRIGGERS} triggers of another organization`,
  );
  let flooding = true;
  const flood = { sent: 0, accepted: 0, throttled: 0, other: 0 };
  const senders = Array.from({ length: FLOOD_SENDERS }, async (_, s) => {
    for (let i = s; flooding; i += FLOOD_SENDERS) {
      const { status } = await post(floodTriggers[i % floodTriggers.length]!, i);
      flood.sent++;
      if (status === 202) flood.accepted++;
      else if (status === 429) flood.throttled++;
      else flood.other++;
    }
  });
  const flooded = await quietRun(quietTrigger2);
  flooding = false;
  await Promise.all(senders);

  // First node started, from the events (the same host's clock as the client's).
  const ids = alone.flatMap((r) => (r.executionId ? [r.executionId] : []));
  await sleep(3000);
  const { rows } = await system.sql.query<{ id: string; first: Date }>(
    `SELECT execution_id AS id, min(at) AS first FROM execution_events
      WHERE execution_id = ANY($1::uuid[]) AND kind = 'node.started' GROUP BY execution_id`,
    [ids],
  );
  const sentAt = new Map(alone.map((r) => [r.executionId, r.sentAt]));
  const toFirstNode = summarize(rows.map((r) => r.first.getTime() - sentAt.get(r.id)!));
  const answerAlone = summarize(alone.map((r) => r.ms));
  const answerFlooded = summarize(flooded.map((r) => r.ms));
  const statuses = (list: typeof alone) => `${list.filter((r) => r.status === 202).length} / ${list.length}`;
  return table([
    ['figure', 'value', 'target'],
    [
      'webhook in → first node started p50 / p99 (quiet, alone)',
      `${fmt(toFirstNode.p50)} / ${fmt(toFirstNode.p99)} ms (${rows.length} executions)`,
      'p50 <= 100 ms',
    ],
    ['webhook answer (202) p50 / p99, alone', `${fmt(answerAlone.p50)} / ${fmt(answerAlone.p99)} ms`, '-'],
    [
      `quiet organization's webhook answer p50 / p99 while another floods`,
      `${fmt(answerFlooded.p50)} / ${fmt(answerFlooded.p99)} ms`,
      'p99 <= 2x alone',
    ],
    ['quiet requests accepted alone / under flood', `${statuses(alone)}; ${statuses(flooded)}`, 'all'],
    [
      `flood: sent / accepted / throttled (429) / other`,
      `${flood.sent} / ${flood.accepted} / ${flood.throttled} / ${flood.other}`,
      '-',
    ],
  ]);
}

await runSection(1, main);

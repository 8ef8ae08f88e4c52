/**
 * Outside calls (docs/benchmarks.md, "Outside calls"), on a system of its own with one runner at
 * its defaults and `EGRESS_ALLOW_ADDRESSES=127.0.0.1/32` so its `http.request` nodes may reach a
 * server of the bench's on loopback (nothing leaves the machine). Prints, asserts nothing:
 *
 * - the duration of an `http.request` node (its `node.finished` `duration_ms`) calling a local
 *   server that answers at once, one execution at a time, p50 / p99;
 * - the same request made directly by the bench with `fetch`, p50 / p99: the difference is the
 *   node's overhead (policy, template, redaction, the outcome's write).
 *
 *   ./node_modules/.bin/node --no-node-snapshot bench/http-calls.ts [--calls 200]
 * `npm run bench -- --http-only` runs only it.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseArgs } from 'node:util';
import '../shared/db/embedded.ts';
import { command, connectRpc, createExecution, createWorkload } from './client.ts';
import { fmt, summarize, table } from './stats.ts';
import { startSystem, type System } from './system.ts';

const { values: args } = parseArgs({ options: { calls: { type: 'string', default: '200' } } });
const CALLS = Math.max(10, Number(args.calls));
const log = (message: string) => process.stderr.write(`[bench http] ${message}\n`);

async function main(system: System, url: string): Promise<string> {
  const graph = { start: 'call', nodes: { call: { processor: 'http.request', config: { url } } } };
  const work = await createWorkload(system, graph, { sessions: 4, quota: 1_000_000 });
  const rpc = await connectRpc(system, work.account);
  const durations: number[] = [];
  try {
    for (let i = 0; i < CALLS; i++) {
      const id = await createExecution(rpc, work, i);
      for (;;) {
        const { execution } = await command(system, work.account, work.revisionId, 'get_execution', {
          execution_id: id,
        });
        if (execution.status === 'succeeded') break;
        if (execution.status === 'failed') throw new Error(`execution failed: ${JSON.stringify(execution.error)}`);
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      const { events } = await command(system, work.account, work.revisionId, 'list_execution_events', {
        execution_id: id,
      });
      const finished = events.find((e: { kind: string }) => e.kind === 'node.finished');
      durations.push(finished.attributes.duration_ms);
    }
  } finally {
    rpc.close();
  }
  const direct: number[] = [];
  for (let i = 0; i < CALLS; i++) {
    const started = performance.now();
    await (await fetch(url)).text();
    direct.push(performance.now() - started);
  }
  const node = summarize(durations);
  const raw = summarize(direct);
  return table([
    ['measure', 'value', 'bound'],
    [
      `http.request node run to a local server, p50 / p99 (${CALLS} runs)`,
      `${fmt(node.p50)} / ${fmt(node.p99)} ms`,
      '-',
    ],
    ['the same request from the bench (fetch), p50 / p99', `${fmt(raw.p50)} / ${fmt(raw.p99)} ms`, '-'],
    ['http.request node overhead p50', `${fmt(node.p50 - raw.p50)} ms`, '-'],
  ]);
}

const server = createServer((_req, res) => {
  res.setHeader('content-type', 'application/json');
  res.end('{"ok":true}');
});
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/ping`;
log('starting a system with one runner (EGRESS_ALLOW_ADDRESSES=127.0.0.1/32)');
const system = await startSystem({ runners: 1, env: { EGRESS_ALLOW_ADDRESSES: '127.0.0.1/32' } });
try {
  process.stdout.write(`${await main(system, url)}\n`);
} catch (error) {
  process.stderr.write(`${(error as Error).stack}\n${system.recentOutput()}\n`);
  process.exitCode = 1;
} finally {
  await system.stop();
  server.close();
}

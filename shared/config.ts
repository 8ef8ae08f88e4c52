import { resolve } from 'node:path';
import { loadSecrets, type Secrets } from './secrets.ts';
import { s3SettingsFrom, type S3Settings } from './onnx/s3-settings.ts';

/** Everything a process is configured with. Only entry files call `loadConfig`. */
export interface Config {
  host: string;
  port: number;
  opsHost: string;
  opsPort: number;
  /** Unset: an embedded PostgreSQL is started under `dataDir`. */
  databaseUrl: string | undefined;
  dataDir: string;
  embeddedPgPort: number;
  secrets: Secrets;
  oidc: { issuer: string; jwksUrl: string; audience: string };
  accessTokenSeconds: number;
  refreshTokenSeconds: number;
  logLevel: string;
  /** Abuse throttles per client address (control-plane/plugins/throttle.ts); 0 turns one off. */
  throttle: {
    /** Anonymous sign-ups per address per minute. */
    signupsPerMinute: number;
    /** Failed credential attempts (401 answers) per address per minute before its credentialed requests are refused for the rest of the minute. */
    authFailuresPerMinute: number;
    /** WebSocket connections open at once per address. */
    wsConnectionsPerAddress: number;
  };
  /** Where model bytes live: null for PostgreSQL large objects, else an S3-compatible bucket (`MODEL_STORE=s3`). */
  modelStore: S3Settings | null;
  runner: {
    /** Executions one runner works on at once; 0 lets the engine choose. */
    concurrency: number;
    /** Lease of a claimed execution, and how often it is renewed (runner/engine/lease-keeper.ts). */
    leaseSeconds: number;
    renewSeconds: number;
    /** Recovery sweep period, and the grace before an unheld execution gets a new wake-up. */
    sweepSeconds: number;
    orphanSeconds: number;
    /** The nice value the runner raises its threads to (shared/priority.ts); 0 keeps the priority it started with. */
    nice: number;
    /** Whether runners on one host split its CPUs between them (runner/cpu-split.ts). */
    cpuSplit: boolean;
    /** Port of the runner's /metrics, /healthz and /readyz (0: none), and its interface. */
    metricsPort: number;
    metricsHost: string;
  };
}

function int(env: Record<string, string | undefined>, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 0) throw new Error(`${name} must be a non-negative integer, got ${raw}`);
  return value;
}

function oneOf<T extends string>(env: Record<string, string | undefined>, name: string, values: readonly [T, ...T[]]): T {
  const raw = env[name];
  if (raw === undefined || raw === '') return values[0];
  if (!(values as readonly string[]).includes(raw)) throw new Error(`${name} must be one of ${values.join(', ')}, got ${raw}`);
  return raw as T;
}

/** The engine's timings and CPU priority (docs/architecture.md), checked so that a lease is always renewed before it runs out. */
function runnerConfig(env: Record<string, string | undefined>): Config['runner'] {
  const runner = {
    concurrency: int(env, 'RUNNER_CONCURRENCY', 0),
    leaseSeconds: int(env, 'RUNNER_LEASE_SECONDS', 10),
    renewSeconds: int(env, 'RUNNER_RENEW_SECONDS', 3),
    sweepSeconds: int(env, 'RUNNER_SWEEP_SECONDS', 5),
    orphanSeconds: int(env, 'RUNNER_ORPHAN_SECONDS', 30),
    nice: int(env, 'RUNNER_NICE', 10),
    cpuSplit: oneOf(env, 'RUNNER_CPU_SPLIT', ['auto', 'off']) === 'auto',
    metricsPort: int(env, 'METRICS_PORT', 0),
    metricsHost: env.METRICS_HOST ?? '127.0.0.1',
  };
  if (runner.metricsPort > 65_535) throw new Error(`METRICS_PORT must be from 0 to 65535, got ${runner.metricsPort}`);
  if (runner.renewSeconds < 1 || runner.renewSeconds >= runner.leaseSeconds) {
    throw new Error(`RUNNER_RENEW_SECONDS must be at least 1 and less than RUNNER_LEASE_SECONDS (${runner.leaseSeconds}), got ${runner.renewSeconds}`);
  }
  if (runner.sweepSeconds < 1) throw new Error(`RUNNER_SWEEP_SECONDS must be at least 1, got ${runner.sweepSeconds}`);
  if (runner.nice > 19) throw new Error(`RUNNER_NICE must be from 0 to 19, got ${runner.nice}`);
  return runner;
}

/** Reads the configuration table of the README from `env`. */
export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const dataDir = resolve(env.DATA_DIR ?? '.data');
  return {
    host: env.HOST ?? '127.0.0.1',
    port: int(env, 'PORT', 8080),
    opsHost: env.OPS_HOST ?? '127.0.0.1',
    opsPort: int(env, 'OPS_PORT', 8081),
    databaseUrl: env.DATABASE_URL || undefined,
    dataDir,
    embeddedPgPort: int(env, 'EMBEDDED_PG_PORT', 54329),
    secrets: loadSecrets(env, dataDir),
    oidc: {
      issuer: env.OIDC_ISSUER ?? 'https://accounts.google.com',
      jwksUrl: env.OIDC_JWKS_URL ?? 'https://www.googleapis.com/oauth2/v3/certs',
      audience: env.OIDC_AUDIENCE ?? '',
    },
    accessTokenSeconds: int(env, 'ACCESS_TOKEN_SECONDS', 900),
    refreshTokenSeconds: int(env, 'REFRESH_TOKEN_SECONDS', 30 * 24 * 3600),
    logLevel: env.LOG_LEVEL ?? 'info',
    throttle: {
      signupsPerMinute: int(env, 'SIGNUPS_PER_MINUTE', 20),
      authFailuresPerMinute: int(env, 'AUTH_FAILURES_PER_MINUTE', 100),
      wsConnectionsPerAddress: int(env, 'WS_CONNECTIONS_PER_ADDRESS', 200),
    },
    modelStore: s3SettingsFrom(env),
    runner: runnerConfig(env),
  };
}

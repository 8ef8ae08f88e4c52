import { resolve } from 'node:path';
import { loadSecrets, type Secrets } from './secrets.ts';

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
  runner: { concurrency: number };
}

function int(env: Record<string, string | undefined>, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 0) throw new Error(`${name} must be a non-negative integer, got ${raw}`);
  return value;
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
    runner: { concurrency: int(env, 'RUNNER_CONCURRENCY', 0) },
  };
}

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import type { Test } from 'tap';
import { buildApp, type BuildAppOptions } from '../../control-plane/app.ts';
import { loadConfig, type Config } from '../../shared/config.ts';
import { createDb, type Db } from '../../shared/db/db.ts';
import { createTestDatabase } from './db.ts';
import { startTestQueue } from './queue.ts';
import type { PgBoss } from 'pg-boss';

export interface TestApp {
  app: FastifyInstance;
  db: Db;
  config: Config;
  databaseUrl: string;
  /** The control plane's pg-boss on the test database (started, queues created; stopped at teardown). */
  boss: PgBoss;
}

/**
 * Builds the control plane against a fresh database of the test file's own. `env` overrides
 * configuration (e.g. OIDC settings); `options.commands` replaces the command list (tests of the
 * command transports). The app sends runner jobs through a control-plane pg-boss of its own
 * (`options.queue` replaces it, e.g. a stand-in that fails). Everything is closed at teardown.
 */
export async function buildTestApp(
  t: Test,
  env: Record<string, string> = {},
  options: Pick<BuildAppOptions, 'commands' | 'queue' | 'onRoute' | 'checkResponses'> = {},
): Promise<TestApp> {
  const databaseUrl = await createTestDatabase(t);
  const dataDir = await mkdtemp(join(tmpdir(), 'ws-test-data-'));
  const config = loadConfig({
    DATA_DIR: dataDir,
    DATABASE_URL: databaseUrl,
    TOKEN_SIGNING_KEY: 'test-signing-key-0123456789abcdef0123456789',
    CURSOR_KEY: 'test-cursor-key-0123456789abcdef0123456789',
    CREDENTIAL_KEY: 'test-credential-key-0123456789abcdef01234567',
    OPS_TOKEN: 'test-ops-token',
    LOG_LEVEL: 'silent',
    // Fixtures sign up many users and try many bad credentials from one address (app.inject's
    // 127.0.0.1); test/throttle.test.ts turns the throttles on.
    SIGNUPS_PER_MINUTE: '0',
    AUTH_FAILURES_PER_MINUTE: '0',
    WS_CONNECTIONS_PER_ADDRESS: '0',
    ...env,
  });
  const db = createDb({ connectionString: databaseUrl, max: 20 });
  const boss = await startTestQueue(databaseUrl);
  // Every answer is held to the response its route documents in /v1/openapi.json: the whole suite checks the document.
  const app = await buildApp({ config, db, logger: false, queue: boss, checkResponses: true, ...options });
  t.teardown(async () => {
    await app.close();
    await boss.stop({ graceful: false });
    await db.close();
    await rm(dataDir, { recursive: true, force: true });
  });
  return { app, db, config, databaseUrl, boss };
}

export interface Caller {
  user: Record<string, unknown> & { id: string };
  token: string;
  refreshToken: string;
  headers: Record<string, string>;
}

/**
 * User-level overrides given to fixture accounts, so tests of other features are not refused by
 * the default quotas (one organization per user, three blobs, two revisions). Tests of the limits
 * themselves sign in with `{ defaultLimits: true }`.
 */
const ROOMY_LIMITS: Record<string, unknown> = {
  'platform.orgs_per_user': 100,
  'platform.blobs_per_org': 100,
  'platform.revisions_per_blob': 100,
  'graphdb.enabled': true,
  'nlp.enabled': true,
};

/** Sets a limit override the way the ops API stores it (fixtures only). */
export async function setOverride(
  app: FastifyInstance,
  limitId: string,
  targetType: 'user' | 'org' | 'blob',
  targetId: string,
  value: unknown,
): Promise<void> {
  await app.ctx.db.query(
    `INSERT INTO limit_overrides (limit_id, target_type, target_id, value, set_by) VALUES ($1, $2, $3::uuid, $4::jsonb, 'test')
     ON CONFLICT (target_type, target_id, limit_id) DO UPDATE SET value = EXCLUDED.value`,
    [limitId, targetType, targetId, JSON.stringify(value)],
  );
}

/** Signs in anonymously and returns the caller with ready-to-use headers. */
export async function signInAnonymous(
  app: FastifyInstance,
  options: { defaultLimits?: boolean } = {},
): Promise<Caller> {
  const res = await app.inject({ method: 'POST', url: '/v1/auth/anonymous', payload: {} });
  if (res.statusCode !== 200) throw new Error(`anonymous sign-in failed: ${res.statusCode} ${res.body}`);
  const body = res.json();
  if (!options.defaultLimits) {
    for (const [id, value] of Object.entries(ROOMY_LIMITS)) await setOverride(app, id, 'user', body.user.id, value);
  }
  return {
    user: body.user,
    token: body.access_token,
    refreshToken: body.refresh_token,
    headers: { authorization: `Bearer ${body.access_token}` },
  };
}

export interface CallOptions {
  headers?: Record<string, string>;
  body?: unknown;
  as?: Caller;
}

/** One JSON request through `inject`; returns the response and its parsed body. */
export async function call(
  app: FastifyInstance,
  method: string,
  url: string,
  options: CallOptions = {},
): Promise<{ res: LightMyRequestResponse; status: number; body: any }> {
  const res = await app.inject({
    method: method as 'GET',
    url,
    headers: { ...(options.as?.headers ?? {}), ...(options.headers ?? {}) },
    ...(options.body !== undefined ? { payload: options.body as object } : {}),
  });
  let body: any;
  try {
    body = res.json();
  } catch {
    body = res.body;
  }
  return { res, status: res.statusCode, body };
}

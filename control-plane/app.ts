import { randomUUID } from 'node:crypto';
import Fastify, {
  type FastifyInstance,
  type FastifyReply,
  type FastifyServerOptions,
  type RouteOptions,
} from 'fastify';
import type { Config } from '../shared/config.ts';
import type { Db } from '../shared/db/db.ts';
import { createTokenService } from './auth/tokens.ts';
import type { AppContext } from './context.ts';
import { registerAuth } from './plugins/auth.ts';
import { registerEnvelope } from './plugins/envelope.ts';
import cors from '@fastify/cors';
import helmet from '@fastify/helmet';
import { registerThrottles } from './plugins/throttle.ts';
import { registerHeavyWork } from './plugins/heavy-work.ts';
import { BodyThreads } from './bodies/body-threads.ts';
import { registerHttpMetrics } from './metrics.ts';
import { watchPool } from '../shared/metrics.ts';
import { readinessProbe } from '../shared/probes.ts';
import { ServiceError } from '../shared/errors.ts';
import { registerAudit } from './audit/audit-hook.ts';
import { authRoutes } from './routes/auth.ts';
import { userRoutes } from './routes/users.ts';
import { orgRoutes } from './routes/orgs.ts';
import { blobRoutes } from './routes/blobs.ts';
import { revisionRoutes } from './routes/revisions.ts';
import { findRoutes } from './routes/find.ts';
import { metadataRoutes } from './routes/metadata.ts';
import { limitsRoutes } from './routes/limits.ts';
import { memberRoutes } from './routes/members.ts';
import { apiKeyRoutes } from './routes/api-keys.ts';
import { credentialRoutes } from './routes/credentials.ts';
import { serviceAccountRoutes } from './routes/service-accounts.ts';
import { impersonateRoutes } from './routes/impersonate.ts';
import { websocketPlugin } from './ws/plugin.ts';
import { commandRoutes } from './routes/commands.ts';
import { sessionFileRoutes } from './routes/session-files.ts';
import { modelRoutes } from './routes/models.ts';
import { hookRoutes } from './routes/hooks.ts';
import { ModelHost } from '../shared/onnx/model-host.ts';
import { FairQueue } from '../shared/fair-queue.ts';
import { CRON_CHECK_TURNS } from './commands/schedules.ts';
import { MODEL_PROCESS_NICE } from '../shared/priority.ts';
import type { S3Objects } from '../shared/onnx/s3-objects.ts';
import { startObjectCleanup } from './models/object-cleanup.ts';
import { COMMANDS, createCommandRegistry } from './commands/registry.ts';
import type { CommandDefinition } from './commands/command.ts';
import { CodeChecker } from '../sandbox/check.ts';
import { createEventListener } from './events/listener.ts';
import { createSessionRemoval } from './workflow/session-reaper.ts';
import type { JobQueue } from '../shared/queue/execution-jobs.ts';
import { createExecutionCreator } from './workflow/execution-creator.ts';
import type { ProcessTracing } from '../shared/tracing/load-tracing.ts';
import { consoleRoutes } from './console/serve.ts';
import { registerApiDocument } from './reference/document.ts';
import { registerResponseCheck } from './openapi/response-check.ts';
import { probeSchemas } from './openapi/probes.ts';

export interface BuildAppOptions {
  config: Config;
  db: Db;
  /** fastify's logger option; tests pass false or a stream. */
  logger?: FastifyServerOptions['logger'];
  /** The commands both transports answer; defaults to the service's own. Tests add their own to exercise the transports. */
  commands?: readonly CommandDefinition[];
  /**
   * Where runner jobs are sent: the control plane's started pg-boss (main.ts). Without one, every
   * command that must enqueue a job fails (500) and rolls back, so nothing is created unannounced.
   */
  queue?: JobQueue;
  /** The process's tracing (shared/tracing/load-tracing.ts): a span per request and the commands' spans. Null or absent: none. */
  tracing?: ProcessTracing | null;
  /**
   * Tests: hold every answer to the response its route documents (control-plane/openapi/
   * response-check.ts); a mismatch is answered 500 `internal_error` naming it. Off in production.
   */
  checkResponses?: boolean;
  /**
   * Start the body threads (HEAVY_BODY_THREADS) with the app; otherwise they start at the first
   * large body. The server does (main.ts), tests need not.
   */
  startBodyThreads?: boolean;
  /** Tests: told of every route as it is added, from the first (test/openapi.test.ts compares them with the document). */
  onRoute?: (route: RouteOptions) => void;
}

// An app built without a queue (a test of something else) refuses to enqueue rather than drop jobs.
const NO_QUEUE: JobQueue = {
  send: async (name) => {
    throw new Error(`this app was built without a job queue; cannot send a ${name} job`);
  },
};

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** JSON bodies above this are refused with 413 (docs/api.md, "Conventions"); command routes raise their own bound. */
const JSON_BODY_LIMIT = 1024 * 1024;

/** Builds the REST + WebSocket app. Never listens: `main.ts` does, tests call `inject`. */
export async function buildApp(options: BuildAppOptions): Promise<FastifyInstance> {
  const app = Fastify({
    logger: options.logger ?? {
      level: options.config.logLevel,
      redact: ['req.headers.authorization', 'req.headers["x-api-key"]', 'req.headers["sec-websocket-protocol"]'],
    },
    bodyLimit: JSON_BODY_LIMIT,
    // A client's x-request-id is kept when well-formed (1-128 of A-Z a-z 0-9 . _ : -), so its logs
    // and ours share it; anything else gets a UUID of ours. Echoed back either way.
    genReqId: (request) => {
      const given = request.headers['x-request-id'];
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
    },
    requestIdHeader: false,
    return503OnClosing: true,
    // Failures fastify answers before routing (a malformed or too long path) keep the envelope too.
    frameworkErrors: (error, request, reply) => {
      const known =
        error.code === 'FST_ERR_MAX_PARAM_LENGTH'
          ? new ServiceError('uri_too_long', 'A path segment is longer than the service accepts (100 characters).')
          : new ServiceError(
              'invalid_request_body',
              'The URL is not valid: a path segment is not well-formed percent-encoding.',
            );
      // The app's onSend hooks do not run for these: the request id is set here.
      void (reply as unknown as FastifyReply)
        .code(known.status)
        .header('x-request-id', request.id)
        .send(known.toEnvelope());
    },
  });
  // First: @fastify/otel instruments the routes added after it.
  if (options.tracing) await app.register(options.tracing.fastifyPlugin);
  if (options.onRoute) app.addHook('onRoute', options.onRoute);
  const codeChecker = new CodeChecker();
  // The S3 SDK is loaded only where a model store is configured: it is about half a second of CPU
  // at every start of a process that never speaks to S3.
  const modelObjects: S3Objects | null =
    options.config.modelStore === null
      ? null
      : new (await import('../shared/onnx/s3-objects.ts')).S3Objects(options.config.modelStore);
  const queue = options.queue ?? NO_QUEUE;
  const ctx: AppContext = {
    config: options.config,
    db: options.db,
    tokens: createTokenService(options.config.secrets.TOKEN_SIGNING_KEY, options.config.accessTokenSeconds),
    codeCheck: codeChecker,
    events: createEventListener({ db: options.db, log: app.log }),
    sessionRemoval: createSessionRemoval(options.db, {
      onError: (err) => app.log.error({ err }, 'session removal failed; the reaper will retry'),
    }),
    queue,
    creates: createExecutionCreator(options.db, queue),
    cronChecks: new FairQueue(CRON_CHECK_TURNS),
    models: new ModelHost({
      databaseUrl: String(options.db.pool.options.connectionString),
      s3: options.config.modelStore,
      nice: MODEL_PROCESS_NICE,
    }),
    modelObjects,
    tracing: options.tracing?.tracing ?? null,
  };
  app.decorate('ctx', ctx);
  // The checker's isolate is created on first use; closing the app releases it.
  app.addHook('onClose', async () => codeChecker.dispose());
  app.addHook('onClose', async () => ctx.models.close());
  // Objects of models deleted or replaced, which PostgreSQL could only queue (migration 020).
  const objectCleanup =
    ctx.modelObjects === null
      ? null
      : startObjectCleanup(options.db, ctx.modelObjects, (err) =>
          app.log.warn({ err }, 'deleting model objects failed; retrying'),
        );
  app.addHook('onClose', async () => {
    await objectCleanup?.stop();
    ctx.modelObjects?.close();
  });
  // Subscriptions end and pending session removals are left to the reaper when the app closes.
  app.addHook('onClose', async () => {
    await Promise.all([ctx.events.close(), ctx.sessionRemoval.close()]);
  });
  app.addHook('onSend', async (request, reply) => {
    reply.header('x-request-id', request.id);
  });
  registerEnvelope(app);
  registerHttpMetrics(app, new Set((options.commands ?? COMMANDS).map((command) => command.name)));
  if (options.checkResponses) registerResponseCheck(app);
  // Security headers on every answer; CORS only for the origins configured (none by default).
  await app.register(helmet, { global: true });
  await app.register(cors, {
    origin: options.config.corsOrigins.length === 0 ? false : options.config.corsOrigins,
    methods: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'],
    allowedHeaders: [
      'authorization',
      'content-type',
      'x-api-key',
      'x-request-id',
      'idempotency-key',
      'traceparent',
      'tracestate',
    ],
    exposedHeaders: ['x-request-id', 'retry-after', 'allow', 'x-response-body', 'idempotent-replayed'],
    maxAge: 600,
  });
  // One registry for both transports, so REST and JSON-RPC answer the same input alike.
  const commands = createCommandRegistry(options.commands ?? COMMANDS, { checkResults: options.checkResponses });
  // Before any route: @fastify/swagger documents the routes added after it (/v1/openapi.json, /docs).
  await registerApiDocument(app, commands);
  // The web console's pages (docs/console.md), hidden from the document.
  await consoleRoutes(app, 'index.html', { oidc: options.config.oidc.audience !== '' });
  const forgetPool = watchPool(options.db.pool);
  app.addHook('onClose', async () => forgetPool());
  // Liveness and readiness, without credentials (docs/operations.md, "Probes").
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  const readiness = readinessProbe(options.db, () => closing);
  app.get('/healthz', { config: { public: true }, schema: probeSchemas.healthz }, async () => ({ status: 'ok' }));
  app.get('/readyz', { config: { public: true }, schema: probeSchemas.readyz }, async (_request, reply) => {
    const { ready, checks } = await readiness();
    return reply.code(ready ? 200 : 503).send({ status: ready ? 'ready' : 'not_ready', checks });
  });
  // Before auth: an address refused for its failed credentials is not authenticated again.
  const wsAdmission = await registerThrottles(app, options.config.throttle);
  registerAuth(app);
  // After auth: a large body is admitted for its account before it is read.
  const heavyWork = registerHeavyWork(app, options.config.heavyWork);
  // Large command bodies are read off the event loop, by threads started at the first one.
  const bodyThreads = new BodyThreads(options.config.heavyWork.threads, (bytes) => heavyWork.isHeavy(bytes));
  app.addHook('onClose', async () => bodyThreads.close());
  if (options.startBodyThreads) bodyThreads.start();
  registerAudit(app);

  await app.register(websocketPlugin, { commands, admission: wsAdmission, heavyWork });
  await app.register(
    async (v1) => {
      await v1.register(authRoutes);
      await v1.register(userRoutes);
      await v1.register(orgRoutes);
      await v1.register(blobRoutes);
      await v1.register(revisionRoutes);
      await v1.register(findRoutes);
      await v1.register(metadataRoutes);
      await v1.register(limitsRoutes);
      await v1.register(memberRoutes);
      await v1.register(apiKeyRoutes);
      await v1.register(credentialRoutes);
      await v1.register(serviceAccountRoutes);
      await v1.register(impersonateRoutes);
      await v1.register(commandRoutes, { commands, bodyThreads });
      await v1.register(sessionFileRoutes);
      await v1.register(modelRoutes);
      await v1.register(hookRoutes);
    },
    { prefix: '/v1' },
  );
  return app;
}

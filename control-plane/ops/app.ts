import { createHash, randomUUID, timingSafeEqual } from 'node:crypto';
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify';
import { costLimitRule } from '@escape.tech/graphql-armor-cost-limit';
import { maxAliasesRule } from '@escape.tech/graphql-armor-max-aliases';
import { maxDepthRule } from '@escape.tech/graphql-armor-max-depth';
import { GraphQLError, type ASTVisitor, type ValidationContext } from 'graphql';
import { jsonProblem, storableText } from '../../shared/json-guard.ts';
import mercurius, { type MercuriusOptions } from 'mercurius';
import { metricsText } from '../../shared/metrics.ts';
import { databaseUnavailable, isDatabaseUnavailable, RETRY_AFTER_SECONDS } from '../../shared/db/unavailable.ts';
import type { OpsContext, OpsModule } from './ops-module.ts';
import { CONSOLE_PATH, consoleRoutes } from '../console/serve.ts';
import { GRAPHIQL_PATH, registerGraphiql } from './graphiql.ts';
import { opsSchema } from './schema.ts';

/** Where the operations API answers (docs/operations.md, "Operations API"). */
const OPS_PATH = '/graphql';

export interface BuildOpsAppOptions extends OpsContext {
  /** fastify's logger option; tests pass false. */
  logger?: FastifyServerOptions['logger'];
  /** Schema parts; defaults to every module of `OPS_MODULES`. */
  modules?: OpsModule[];
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value).digest();
}

/**
 * Every request must carry `Authorization: Bearer <OPS_TOKEN>`. Both sides are hashed before the
 * constant-time compare, so neither the token's content nor its length shows in the timing.
 */
function opsAuth(app: FastifyInstance, token: string): void {
  const expected = digest(token);
  app.addHook('onRequest', async (request, reply) => {
    // GraphiQL's page and scripts hold nothing secret; the queries it sends carry the token the
    // operator enters in its Headers tab, like any other client's.
    if (request.method === 'GET' && GRAPHIQL_PATH.test(request.url)) return;
    // Nor do the operator's console's page and scripts: the page asks for the token and sends it
    // with every query it makes, like GraphiQL.
    if (request.method === 'GET' && CONSOLE_PATH.test(request.url)) return;
    const match = /^Bearer\s+(\S+)\s*$/i.exec(request.headers.authorization ?? '');
    if (match && timingSafeEqual(digest(match[1]!), expected)) return;
    return reply
      .code(401)
      .header('www-authenticate', 'Bearer')
      .send({
        errors: [{ message: 'Send Authorization: Bearer <OPS_TOKEN>.', extensions: { code: 'unauthorized' } }],
      });
  });
}

/**
 * Builds the operations server: GraphQL (mercurius) at `/graphql` behind the ops token. A second
 * fastify instance, so it listens on its own host and port (`OPS_HOST`, `OPS_PORT`) and nothing of
 * the public API's auth or envelope applies to it. Never listens: `main.ts` does.
 */
export async function buildOpsApp(options: BuildOpsAppOptions): Promise<FastifyInstance> {
  const app = Fastify({
    logger: options.logger ?? { level: options.config.logLevel, redact: ['req.headers.authorization'] },
    genReqId: () => randomUUID(),
    requestIdHeader: false,
    return503OnClosing: true,
  });
  // On the root instance, so unknown paths are refused too rather than answering 404 to anyone.
  opsAuth(app, options.config.secrets.OPS_TOKEN);
  const { config, db, boss } = options;
  const { schema, resolvers } = opsSchema({ config, db, boss, tracing: options.tracing ?? null }, options.modules);
  // Prometheus scrapes with the ops token (authorization: { credentials: OPS_TOKEN }).
  app.get('/metrics', async (_request, reply) => {
    const { contentType, body } = await metricsText();
    return reply.type(contentType).send(body);
  });
  await app.register(mercurius, {
    schema,
    resolvers,
    path: OPS_PATH,
    // GraphiQL is served from the package instead (graphiql.ts): mercurius's page loads it from a CDN.
    graphiql: false,
    errorFormatter: unavailableFirst,
    validationRules: QUERY_BOUNDS,
  });
  registerGraphiql(app);
  // The operator's console (docs/console.md, "The operator's console"): the same build as the
  // tenant's, its ops page, speaking only to /graphql on this port.
  await consoleRoutes(app, 'ops.html', null);
  // Variables and the rest of the body: the JSON bounds every API holds (shared/json-guard.ts).
  app.addHook('preHandler', async (request, reply) => {
    const problem = request.body === undefined ? null : jsonProblem(request.body);
    if (problem !== null)
      return reply.code(400).send({
        errors: [{ message: `The request body is invalid: ${problem}.`, extensions: { code: 'invalid_argument' } }],
      });
  });
  app.addHook('onSend', async (_request, reply) => {
    if (reply.statusCode === 503) reply.header('retry-after', String(RETRY_AFTER_SECONDS));
  });
  return app;
}

/**
 * Bounds on what one query may ask (graphql-armor's validation rules, checked before anything
 * runs): at most 15 aliases (a 500-alias query would run 500 resolvers), 10 levels of selection,
 * and a cost of 5,000 (objects 2, scalars 1, ×1.5 per level). Introspection is exempt from depth
 * and cost, so GraphiQL and codegen keep working. The ops API is behind its token; these stop a
 * leaked token or a careless script from tying up the database.
 */
const QUERY_BOUNDS = [
  maxAliasesRule({ n: 15 }),
  maxDepthRule({ n: 10 }),
  costLimitRule({ maxCost: 5000 }),
  storableStrings,
];

/**
 * A string argument written in the query ("x\u0000") holds text PostgreSQL cannot store: refused
 * as a validation error, like the same text in variables (checked with the body), before any
 * resolver sends it to the database (it answered the database's encoding error before).
 */
function storableStrings(context: ValidationContext): ASTVisitor {
  return {
    StringValue(node) {
      if (!storableText(node.value))
        context.reportError(
          new GraphQLError('A string argument holds U+0000 or an unpaired surrogate, which cannot be stored.', {
            nodes: node,
            extensions: { code: 'invalid_argument' },
          }),
        );
    },
  };
}

/**
 * While the database is unreachable a resolver's failure is `unavailable` (HTTP 503, with
 * Retry-After), not an opaque error: the operator's tooling can tell "try again" from "broken".
 */
const unavailableFirst: NonNullable<MercuriusOptions['errorFormatter']> = (execution, context) => {
  if (!execution.errors.some((error) => isDatabaseUnavailable(error.originalError)))
    return mercurius.defaultErrorFormatter(execution, context);
  const refusal = databaseUnavailable();
  const errors = execution.errors.map((error) =>
    isDatabaseUnavailable(error.originalError)
      ? new GraphQLError(refusal.message, {
          path: error.path,
          extensions: { code: refusal.code, retryAfter: RETRY_AFTER_SECONDS },
        }).toJSON()
      : error.toJSON(),
  );
  return { statusCode: 503, response: { data: execution.data ?? null, errors } };
};

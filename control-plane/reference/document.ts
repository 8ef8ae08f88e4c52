import { createHash } from 'node:crypto';
import swagger from '@fastify/swagger';
import Fastify, {
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  type LightMyRequestResponse,
} from 'fastify';
import { jsonSchemaTransform, jsonSchemaTransformObject } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { VERSION } from '../../shared/version.ts';
import type { CommandRegistry } from '../commands/registry.ts';
import { expandCommands, type SchemaDefs } from './commands.ts';
import { JSON_LINES_COMMAND, JSON_LINES_TYPES } from '../routes/commands.ts';
import { openRpcDocument } from './openrpc.ts';
import { routeSchema } from '../openapi/route-schema.ts';

/** Where the documents and the reference are served; docs/api.md and the README point here. */
const OPENAPI_PATH = '/v1/openapi.json';
const OPENRPC_PATH = '/v1/openrpc.json';
const REFERENCE_PATH = '/docs';

/** The path of the command route in the document before expansion (one path per command). */
const COMMAND_ROUTE = '/v1/revisions/{revision_id}/{command}';

const DESCRIPTION = [
  'The REST API of the workspace service. Every answer is an envelope: `{"status":"success", …fields}`',
  'or `{"status":"failure","error","message", limit?}` with the codes of docs/errors.md.',
  `The WebSocket (JSON-RPC 2.0) commands are described by the OpenRPC document at ${OPENRPC_PATH}.`,
].join(' ');

/**
 * Declares the zod schemas routes carry (`schema: routeSchema(...)`) to fastify without letting
 * fastify validate or serialize with them: the handlers validate with `parseInput` (so codes,
 * messages and the order of checks are the service's own) and answers are `JSON.stringify`'d as
 * before. Must run before any route is added, so @fastify/swagger sees every route.
 */
export async function registerApiDocument(app: FastifyInstance, commands: CommandRegistry): Promise<void> {
  app.setValidatorCompiler(() => () => true);
  app.setSerializerCompiler(() => (data) => JSON.stringify(data));
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: { title: 'Workspace service', version: VERSION, description: DESCRIPTION },
      servers: [{ url: '/', description: 'This service' }],
      components: {
        securitySchemes: {
          bearer: {
            type: 'http',
            scheme: 'bearer',
            description: 'An access token (sign-in, refresh) or an acting token (impersonate).',
          },
          apiKey: { type: 'apiKey', in: 'header', name: 'X-API-Key', description: 'An API key, `wsk_…`.' },
        },
      },
    },
    transform: jsonSchemaTransform,
    transformObject: (document) => finish(jsonSchemaTransformObject(document) as Document, commands),
  });

  const open = { config: { public: true } };
  // Both documents are fixed once the routes are: serialized on the first request and kept, so an
  // unauthenticated reader does not cost the server a few hundred kilobytes of JSON.stringify each.
  let openApiText: string | undefined;
  let openRpcText: string | undefined;
  app.get(
    OPENAPI_PATH,
    {
      ...open,
      schema: routeSchema({
        tags: ['Documents'],
        summary: 'This OpenAPI 3.1 document',
        description: 'Generated at start-up from the zod schemas the routes validate with.',
        responses: { 200: z.looseObject({ openapi: z.string() }).meta({ description: 'The OpenAPI document.' }) },
        public: true,
      }),
    },
    async (_request, reply) =>
      reply.type('application/json; charset=utf-8').send((openApiText ??= JSON.stringify(app.swagger()))),
  );

  app.get(
    OPENRPC_PATH,
    {
      ...open,
      schema: routeSchema({
        tags: ['Documents'],
        summary: 'The OpenRPC document of the WebSocket (JSON-RPC 2.0) commands',
        description: "Generated from the command registry: every method with its params' JSON Schema.",
        responses: { 200: z.looseObject({ openrpc: z.string() }).meta({ description: 'The OpenRPC document.' }) },
        public: true,
      }),
    },
    async (_request, reply) =>
      reply.type('application/json; charset=utf-8').send((openRpcText ??= JSON.stringify(openRpcDocument(commands)))),
  );

  await app.register(reference);
}

type Document = Record<string, unknown> & { paths?: Record<string, Record<string, Record<string, unknown>>> };

/** What the generated document needs beyond @fastify/swagger: one path per command, optional bodies. */
function finish(document: Document, commands: CommandRegistry): Document {
  const defs: SchemaDefs = {};
  const paths = expandCommands(document.paths ?? {}, COMMAND_ROUTE, commands, defs, {
    command: JSON_LINES_COMMAND,
    types: JSON_LINES_TYPES,
  });
  const components = (document.components ?? {}) as { schemas?: Record<string, { description?: string }> };
  const schemas = { ...defs, ...components.schemas } as Record<string, { description?: string }>;
  for (const operations of Object.values(paths)) {
    for (const operation of Object.values(operations)) {
      // A response whose schema is a component gets the component's description, not "Default Response".
      for (const response of Object.values(
        (operation.responses ?? {}) as Record<
          string,
          { description?: string; content?: Record<string, { schema?: { $ref?: string } }> }
        >,
      )) {
        const ref = response.content?.['application/json']?.schema?.$ref;
        const described = ref === undefined ? undefined : schemas[ref.split('/').pop()!]?.description;
        if (response.description === 'Default Response' && described !== undefined) response.description = described;
      }
      // @fastify/swagger marks every declared body required; a body whose fields are all optional may be left out (docs/api.md).
      const body = operation.requestBody as
        { required?: boolean; content?: Record<string, { schema?: { required?: unknown[] } }> } | undefined;
      const schema = body?.content?.['application/json']?.schema;
      if (body && schema && !(Array.isArray(schema.required) && schema.required.length > 0)) body.required = false;
    }
  }
  // fastify-type-provider-zod emits an input and an output variant of every named schema; the
  // variants nothing refers to (records are answers, never bodies) are left out.
  const text = JSON.stringify(paths);
  const used = Object.fromEntries(
    Object.entries(schemas).filter(
      ([name]) => !name.endsWith('Input') || text.includes(`"#/components/schemas/${name}"`),
    ),
  );
  return { ...document, components: { ...components, schemas: used }, paths };
}

/**
 * The interactive reference (Scalar) at /docs, reading /v1/openapi.json. Its page starts the
 * reference with an inline script, which helmet's CSP (`script-src 'self'`) refuses; the page's
 * CSP gains the SHA-256 of exactly its own inline scripts, every other header stays helmet's.
 * The pages need no credentials.
 */
// The page is the same on every request: its inline scripts are hashed once, not per request.
let scriptHashes: { page: string; hashes: string[] } | undefined;
function inlineScriptHashes(page: string): string[] {
  if (scriptHashes?.page !== page) {
    const hashes = [...page.matchAll(/<script(?![^>]*\bsrc=)[^>]*>([\s\S]*?)<\/script>/g)].map(
      (match) => `'sha256-${createHash('sha256').update(match[1]!).digest('base64')}'`,
    );
    scriptHashes = { page, hashes };
  }
  return scriptHashes.hashes;
}

/**
 * Scalar's fastify plugin carries its 4 MB browser bundle inside its module: importing it costs
 * most of a second of CPU, at every start of every control plane (and of every test process), for
 * a page few requests ever ask for. So it is imported at the first request for the reference, into
 * a fastify instance of its own that never listens; the /docs routes forward to it.
 */
let referenceApp: Promise<FastifyInstance> | undefined;
function loadReference(): Promise<FastifyInstance> {
  referenceApp ??= (async () => {
    const { default: scalar } = await import('@scalar/fastify-api-reference');
    const inner = Fastify({ logger: false });
    await inner.register(scalar, {
      routePrefix: REFERENCE_PATH,
      // Nothing leaves for Scalar's servers: the system fonts, no telemetry, no AI agent or MCP offer.
      configuration: {
        url: OPENAPI_PATH,
        pageTitle: 'Workspace service API',
        withDefaultFonts: false,
        telemetry: false,
        agent: { disabled: true },
        mcp: { disabled: true },
      },
    });
    await inner.ready();
    return inner;
  })();
  // A failed load is tried again by the next request rather than kept.
  referenceApp.catch(() => (referenceApp = undefined));
  return referenceApp;
}

/** The reference's own paths: their answers never change, so each is asked of the plugin once. */
const REFERENCE_PAGES = new Set([REFERENCE_PATH, `${REFERENCE_PATH}/`, `${REFERENCE_PATH}/js/scalar.js`]);
const kept = new Map<string, Promise<LightMyRequestResponse>>();

/** The inner instance's answer for `url`: kept for the reference's pages (its 4 MB script among them), asked anew for any other. */
function referenceAnswer(url: string): Promise<LightMyRequestResponse> {
  const known = kept.get(url);
  if (known) return known;
  const answer = loadReference().then((inner) => inner.inject({ method: 'GET', url }));
  if (REFERENCE_PAGES.has(url)) {
    kept.set(url, answer);
    answer.catch(() => kept.delete(url));
  }
  return answer;
}

/** The headers of the plugin's answers that describe them (helmet's and ours are the outer app's). */
const FORWARDED_HEADERS = ['content-type', 'location', 'cache-control', 'etag', 'last-modified'];

async function reference(app: FastifyInstance): Promise<void> {
  app.addHook('onSend', async (_request, reply, payload) => {
    const type = String(reply.getHeader('content-type') ?? '');
    const csp = reply.getHeader('content-security-policy');
    if (!type.startsWith('text/html') || typeof payload !== 'string' || typeof csp !== 'string') return payload;
    const hashes = inlineScriptHashes(payload);
    reply.header(
      'content-security-policy',
      csp.replace(/script-src ([^;]*)/, (_all, sources: string) => `script-src ${sources} ${hashes.join(' ')}`),
    );
    // An empty icon, so the browser does not ask for /favicon.ico (a 404 in its console).
    return payload.replace('<head>', '<head>\n    <link rel="icon" href="data:," />');
  });
  const forward = {
    schema: { hide: true },
    config: { public: true },
    logLevel: 'warn' as const,
    handler: async (request: FastifyRequest, reply: FastifyReply) => {
      const answer = await referenceAnswer(request.url);
      reply.code(answer.statusCode);
      for (const name of FORWARDED_HEADERS) {
        const value = answer.headers[name];
        if (value !== undefined) reply.header(name, value);
      }
      return reply.send(answer.body);
    },
  };
  app.get(REFERENCE_PATH, forward);
  app.get(`${REFERENCE_PATH}/*`, forward);
}

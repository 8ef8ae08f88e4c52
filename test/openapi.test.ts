/**
 * The API documents (docs/api.md, "Machine-readable documents"): GET /v1/openapi.json lists exactly
 * the routes the app registers, with the error envelope on every failure status; GET
 * /v1/openrpc.json describes every command of the registry; /docs serves the reference under
 * helmet's CSP; docs/api.md's route tables agree with the document. That every answer of the route
 * tests matches its documented response is checked by the tests themselves (test/helpers/app.ts
 * turns checkResponses on); the check's own behaviour is tested here.
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import type { RouteOptions } from 'fastify';
import t from 'tap';
import { z } from 'zod';
import { defineCommand } from '../control-plane/commands/command.ts';
import { COMMANDS, createCommandRegistry, runCommand } from '../control-plane/commands/registry.ts';
import type { AppContext } from '../control-plane/context.ts';
import type { Principal } from '../control-plane/auth/principal.ts';
import { paramsJsonSchema, revisionDefinitions } from '../control-plane/reference/commands.ts';
import { responseProblem } from '../control-plane/openapi/response-check.ts';
import { binary, failure, success } from '../control-plane/openapi/route-schema.ts';
import { buildTestApp, call, signInAnonymous } from './helpers/app.ts';

type Operation = {
  parameters?: Array<{ name: string; in: string; required?: boolean }>;
  requestBody?: { required?: boolean; content: Record<string, { schema: JsonSchema }> };
  responses: Record<string, { description: string; content?: Record<string, { schema: JsonSchema }> }>;
  security?: unknown[];
};
type JsonSchema = {
  $ref?: string;
  type?: string;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  enum?: unknown[];
  oneOf?: JsonSchema[];
};
type OpenApi = {
  openapi: string;
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, JsonSchema> };
};

const METHODS = ['get', 'post', 'put', 'patch', 'delete'];
const COMMAND_ROUTE = '/v1/revisions/{revision_id}/{command}';
const registry = createCommandRegistry(COMMANDS);

/** `/v1/orgs/:id` → `/v1/orgs/{id}`, as OpenAPI writes paths. */
const openApiPath = (url: string) => url.replace(/:([A-Za-z_]+)/g, '{$1}');

async function documentedApp(t: Parameters<typeof buildTestApp>[0]) {
  const routes: Array<{ method: string; path: string; hidden: boolean }> = [];
  const onRoute = (route: RouteOptions) => {
    for (const method of [route.method].flat()) {
      routes.push({
        method: method.toLowerCase(),
        path: openApiPath(route.url),
        hidden: Boolean((route.schema as { hide?: boolean } | undefined)?.hide),
      });
    }
  };
  const { app } = await buildTestApp(t, {}, { onRoute });
  await app.ready();
  const res = await app.inject({ method: 'GET', url: '/v1/openapi.json' });
  return { app, routes, res, document: res.json() as OpenApi };
}

function resolve(document: OpenApi, schema: JsonSchema): JsonSchema {
  return schema.$ref === undefined ? schema : document.components.schemas[schema.$ref.split('/').pop()!]!;
}

t.test('GET /v1/openapi.json: OpenAPI 3.1, no credentials needed, every $ref resolves', async (t) => {
  const { res, document } = await documentedApp(t);
  t.equal(res.statusCode, 200);
  t.match(res.headers['content-type'], /^application\/json/);
  t.equal(document.openapi, '3.1.0');
  const refs = [...JSON.stringify(document).matchAll(/"\$ref":"#\/components\/schemas\/([^"]+)"/g)].map((m) => m[1]!);
  t.ok(refs.length > 0, 'the records are components');
  t.same(
    refs.filter((name) => document.components.schemas[name] === undefined),
    [],
    'no dangling $ref',
  );
});

t.test('the document lists every registered route and nothing that is not registered', async (t) => {
  const { routes, document } = await documentedApp(t);
  // HEAD routes are fastify's copies of GET; OPTIONS * is CORS's preflight; hidden ones are the reference's page and script and the console's pages.
  const served = routes.filter((route) => route.method !== 'head' && route.method !== 'options');
  const registered = served.filter((route) => !route.hidden);
  t.same(
    [...new Set(served.filter((route) => route.hidden).map((route) => route.path))].filter(
      (path) => !path.startsWith('/docs') && !path.startsWith('/console'),
    ),
    [],
    'only /docs and /console (pages, not API) are hidden',
  );
  const commandNames = registry.names.filter((name) => revisionDefinitions(registry, name).length > 0);
  const documented: string[] = [];
  for (const [path, operations] of Object.entries(document.paths)) {
    for (const method of Object.keys(operations)) {
      const name = path.match(/^\/v1\/revisions\/\{revision_id\}\/([a-z_]+)$/)?.[1];
      // One path per revision command stands for the one command route (control-plane/reference/commands.ts).
      const viaCommandRoute =
        name !== undefined && !registered.some((route) => route.path === path) && commandNames.includes(name);
      documented.push(`${method} ${viaCommandRoute ? COMMAND_ROUTE : path}`);
    }
  }
  const registeredKeys = registered.map((route) => `${route.method} ${route.path}`);
  t.same(
    [...new Set(registeredKeys)].filter((key) => !documented.includes(key)).sort(),
    [],
    'every registered route is documented',
  );
  t.same(
    [...new Set(documented)].filter((key) => !registeredKeys.includes(key)).sort(),
    [],
    'nothing unregistered is documented',
  );
  t.ok(registeredKeys.length >= 45, `${registeredKeys.length} routes`);
  t.notOk(document.paths[COMMAND_ROUTE], 'the command route is shown per command');
  const shown = Object.keys(document.paths)
    .map((path) => path.match(/^\/v1\/revisions\/\{revision_id\}\/([a-z_]+)$/)?.[1])
    .filter((name) => name !== undefined);
  t.same(
    commandNames.filter((name) => !shown.includes(name)),
    [],
    'every revision command has its path',
  );
});

t.test('every operation documents its failures with the envelope and their codes', async (t) => {
  const { document } = await documentedApp(t);
  for (const [path, operations] of Object.entries(document.paths)) {
    for (const [method, operation] of Object.entries(operations)) {
      if (!METHODS.includes(method)) continue;
      const where = `${method.toUpperCase()} ${path}`;
      const statuses = Object.keys(operation.responses);
      t.ok(
        statuses.some((status) => status.startsWith('2') || status === '101'),
        `${where}: a success answer`,
      );
      t.ok(statuses.includes('500'), `${where}: 500`);
      if (operation.security?.length !== 0) t.ok(statuses.includes('401'), `${where}: 401 when credentials are needed`);
      for (const status of statuses.filter((s) => Number(s) >= 400)) {
        if (path === '/readyz' && status === '503') continue;
        const schema = resolve(document, operation.responses[status]!.content!['application/json']!.schema);
        const envelope = schema.properties?.status as (JsonSchema & { const?: unknown }) | undefined;
        t.equal(envelope?.const ?? envelope?.enum?.[0], 'failure', `${where} ${status}: the failure envelope`);
        t.same(schema.required, ['status', 'error', 'message'], `${where} ${status}: error and message required`);
        const codes = schema.properties?.error?.enum ?? [];
        t.ok(codes.length > 0, `${where} ${status}: its codes`);
      }
    }
  }
  const create = document.paths['/v1/orgs']!.post!;
  t.same(resolve(document, create.responses['409']!.content!['application/json']!.schema).properties!.error!.enum, [
    'alias_taken',
    'conflict',
  ]);
  t.ok(
    create.parameters?.some((p) => p.in === 'header' && p.name === 'idempotency-key' && p.required === false),
    'Idempotency-Key on a creating route',
  );
});

t.test('request bodies come from the schemas the handlers parse with', async (t) => {
  const { document } = await documentedApp(t);
  const createOrg = document.paths['/v1/orgs']!.post!.requestBody!;
  const body = createOrg.content['application/json']!.schema;
  t.same(Object.keys(body.properties!).sort(), ['alias', 'name', 'visibility']);
  t.same(body.required, ['alias']);
  t.equal(createOrg.required, true, 'a body with a required field is required');
  t.equal(
    document.paths['/v1/blobs/{org_id}/{blob_id}/revisions']!.post!.requestBody!.required,
    false,
    'an all-optional body may be left out',
  );
  // A command's body is its params schema; a name answered by two blob types is a oneOf.
  const createSession = document.paths['/v1/revisions/{revision_id}/create_session']!.post!;
  const definition = registry.get('create_session', 'svc.compute.workflow')!;
  const { description: _d, ...shown } = createSession.requestBody!.content['application/json']!.schema as JsonSchema & {
    description?: string;
  };
  t.same(shown, paramsJsonSchema(definition));
  t.equal(
    document.paths['/v1/revisions/{revision_id}/list_executions']!.post!.requestBody!.content['application/json']!
      .schema.oneOf?.length,
    2,
  );
});

t.test('the response check: status, content type and body against the documented response', async (t) => {
  const responses = {
    200: success({ org: z.strictObject({ id: z.string() }) }, 'ok'),
    404: failure(['not_found']),
    201: binary('bytes'),
  };
  t.equal(
    responseProblem(responses, 200, 'application/json; charset=utf-8', '{"status":"success","org":{"id":"x"}}'),
    null,
  );
  t.match(
    responseProblem(responses, 200, 'application/json', '{"status":"success","org":{"id":"x","extra":1}}'),
    /org: Unrecognized key: "extra"/,
  );
  t.match(responseProblem(responses, 200, 'application/json', '{"status":"success"}'), /^org: /);
  t.match(responseProblem(responses, 409, 'application/json', '{}'), /status 409 is not documented/);
  t.match(
    responseProblem(responses, 404, 'application/json', '{"status":"failure","error":"forbidden","message":"m"}'),
    /^error: /,
  );
  t.equal(
    responseProblem(responses, 404, 'application/json', '{"status":"failure","error":"not_found","message":"m"}'),
    null,
  );
  t.equal(responseProblem(responses, 201, 'application/octet-stream', 'bytes'), null);
  t.match(responseProblem(responses, 201, 'text/html', '<p>'), /content type text\/html is not documented/);
  t.match(responseProblem(responses, 200, 'text/plain', 'x'), /documented as JSON/);
});

/** Documents GET /healthz as answering `{"status":"fine"}`, which it does not. */
function misdocumentHealth(route: RouteOptions): void {
  if (route.url !== '/healthz' || route.method !== 'GET') return;
  const schema = route.schema as { response: Record<number, unknown> };
  route.schema = { ...schema, response: { ...schema.response, 200: z.strictObject({ status: z.literal('fine') }) } };
}

t.test('checkResponses answers a mismatch with 500 naming the route; documented answers pass untouched', async (t) => {
  const { app } = await buildTestApp(t, {}, { onRoute: misdocumentHealth });
  const health = await app.inject({ method: 'GET', url: '/healthz' });
  t.equal(health.statusCode, 500);
  t.equal(health.json().error, 'internal_error');
  t.match(
    health.json().message,
    /GET \/healthz does not match its documented response \(200\): status: Invalid input: expected "fine"/,
  );
  const caller = await signInAnonymous(app);
  const { status, body } = await call(app, 'GET', '/v1/orgs/no-such-org', { as: caller });
  t.equal(status, 404, 'a documented refusal passes');
  t.equal(body.error, 'not_found');
});

t.test('without checkResponses (production) the same answer goes out as the handler made it', async (t) => {
  const { app } = await buildTestApp(t, {}, { onRoute: misdocumentHealth, checkResponses: false });
  const health = await app.inject({ method: 'GET', url: '/healthz' });
  t.equal(health.statusCode, 200);
  t.same(health.json(), { status: 'ok' });
});

t.test("a command's declared result: in both documents, and held to it when checkResults is on", async (t) => {
  const { document } = await documentedApp(t);
  const answer =
    document.paths['/v1/revisions/{revision_id}/create_session']!.post!.responses['200']!.content!['application/json']!
      .schema;
  t.same(answer.properties?.session, { $ref: '#/components/schemas/Session' }, "REST: the result's fields");
  t.same((answer.properties?.status as { const?: unknown }).const, 'success', 'beside status');
  t.ok(document.components.schemas.Session, 'the record is a component');
  const check = document.paths['/v1/revisions/{revision_id}/check_definition']!.post!.responses['200']!.content![
    'application/json'
  ]!.schema as JsonSchema & { anyOf?: JsonSchema[] };
  t.same(
    check.anyOf?.map((branch) => (branch.properties!.status as { const?: unknown }).const),
    ['success', 'failure'],
    "check_definition's own status wins",
  );

  t.same(
    COMMANDS.filter((command) => command.result === undefined).map((command) => command.name),
    [],
    'every command of the service declares its result',
  );

  const echo = defineCommand({
    name: 'echo_count',
    params: z.strictObject({ n: z.unknown() }),
    result: z.strictObject({ n: z.number() }),
    async handler(_ctx, _principal, params) {
      return { n: params.n };
    },
  });
  const run = (checkResults: boolean, n: unknown) =>
    runCommand(createCommandRegistry([echo], { checkResults }), {} as AppContext, {} as Principal, 'echo_count', { n });
  t.same(await run(true, 3), { n: 3 });
  await t.rejects(run(true, 'three'), {
    code: 'internal_error',
    message: /The result of echo_count does not match its documented result: n: Invalid input: expected number/,
  });
  t.same(await run(false, 'three'), { n: 'three' }, 'production: not checked');
});

t.test('GET /v1/openrpc.json: every command of the registry, params from its zod schema', async (t) => {
  const { app } = await buildTestApp(t);
  const res = await app.inject({ method: 'GET', url: '/v1/openrpc.json' });
  t.equal(res.statusCode, 200);
  const document = res.json() as {
    openrpc: string;
    methods: Array<{
      name: string;
      paramStructure: string;
      params: Array<{ name: string; required: boolean; schema: unknown }>;
    }>;
  };
  t.match(document.openrpc, /^1\.\d+\.\d+$/);
  t.same(
    document.methods.map((method) => method.name),
    [...registry.names].sort(),
    'one method per command name',
  );
  for (const method of document.methods) {
    t.equal(method.paramStructure, 'by-name');
    const definitions = revisionDefinitions(registry, method.name);
    const own = definitions.length > 0 ? definitions : [registry.get(method.name)!];
    const properties = new Set(
      own.flatMap((definition) => Object.keys((paramsJsonSchema(definition) as JsonSchema).properties ?? {})),
    );
    const expected = [
      ...(definitions.length > 0 ? ['revision_id'] : []),
      ...properties,
      ...(own.some((d) => (d as { creates?: boolean }).creates) ? ['idempotency_key'] : []),
    ];
    t.same(method.params.map((param) => param.name).sort(), expected.sort(), `${method.name}: its params`);
  }
  const getUser = document.methods.find((method) => method.name === 'get_user')!;
  t.notOk(
    getUser.params.some((param) => param.name === 'revision_id'),
    'a plain command takes no revision',
  );
  const createSession = document.methods.find((method) => method.name === 'create_session')!;
  t.ok(createSession.params.find((param) => param.name === 'revision_id')?.required);
  t.ok(createSession.params.some((param) => param.name === 'idempotency_key' && !param.required));
});

t.test(
  "/docs serves the reference without credentials, its inline script allowed by hash under helmet's CSP",
  async (t) => {
    const { app } = await buildTestApp(t);
    const redirect = await app.inject({ method: 'GET', url: '/docs' });
    t.equal(redirect.statusCode, 301);
    t.equal(redirect.headers.location, '/docs/');
    const page = await app.inject({ method: 'GET', url: '/docs/' });
    t.equal(page.statusCode, 200);
    t.match(page.headers['content-type'], /^text\/html/);
    t.match(page.body, /\/v1\/openapi\.json/, 'the page reads the generated document');
    const csp = String(page.headers['content-security-policy']);
    t.match(csp, /default-src 'self'/, "helmet's policy is kept");
    const inline = [...page.body.matchAll(/<script(?![^>]*\bsrc=)[^>]*>([\s\S]*?)<\/script>/g)].map((m) => m[1]!);
    t.ok(inline.length > 0, 'the page has an inline script');
    const scriptSrc = csp.split(';').find((directive) => directive.trim().startsWith('script-src '))!;
    for (const script of inline)
      t.ok(
        scriptSrc.includes(`'sha256-${createHash('sha256').update(script).digest('base64')}'`),
        'its hash is allowed',
      );
    t.notMatch(scriptSrc, /unsafe-inline|unsafe-eval/, 'nothing else inline is allowed');
    const script = await app.inject({ method: 'GET', url: '/docs/js/scalar.js' });
    t.equal(script.statusCode, 200);
    t.match(script.headers['content-type'], /javascript/);
    // Other answers keep helmet's plain policy.
    const doc = await app.inject({ method: 'GET', url: '/v1/openapi.json' });
    t.notMatch(String(doc.headers['content-security-policy']), /sha256-/);
  },
);

/** `{alias, name?, visibility?}` → [['alias', true], ['name', false], …]; null when the cell is not a field list. */
function fieldsOf(cell: string): Array<[string, boolean]> | null {
  const list = cell.match(/^`\{([^`]*)\}`/)?.[1];
  if (list === undefined) return null;
  if (list.trim() === '') return [];
  return list.split(/,\s*/).map((field) => {
    const name = field.split(':')[0]!.trim();
    return [name.replace(/\?$/, ''), !name.endsWith('?')];
  });
}

t.test(
  'docs/api.md: its route tables name exactly the documented operations, with their bodies and answers',
  async (t) => {
    const { document } = await documentedApp(t);
    const text = await readFile(new URL('../docs/api.md', import.meta.url), 'utf8');
    const rows = [...text.matchAll(/^\| (GET|POST|PUT|PATCH|DELETE|GET \(upgrade\)) \| `([^`]+)` \|(.*)$/gm)];
    const listed = new Set<string>();
    for (const [, method, path, rest] of rows) {
      const verb = method!.split(' ')[0]!.toLowerCase();
      const key = `${verb} ${openApiPath(path!)}`;
      listed.add(key);
      const operation = document.paths[openApiPath(path!)]?.[verb];
      if (openApiPath(path!) === COMMAND_ROUTE) continue;
      if (!t.ok(operation, `${key} is in the document`) || operation === undefined) continue;
      const [body, answer] = rest!.split(' | ').map((cell) => cell.trim());
      const fields = fieldsOf(body!);
      if (fields !== null) {
        const schema = operation.requestBody?.content['application/json']?.schema ?? {};
        t.same(
          fields.map(([name]) => name).sort(),
          Object.keys(schema.properties ?? {}).sort(),
          `${key}: the body's fields`,
        );
        t.same(
          fields
            .filter(([, required]) => required)
            .map(([name]) => name)
            .sort(),
          [...(schema.required ?? [])].sort(),
          `${key}: the required ones`,
        );
      } else if (body === '—') {
        t.notOk(operation.requestBody, `${key}: no body`);
      }
      const status = answer!.match(/^(\d{3}) /)?.[1] ?? (verb === 'get' && path === '/v1' ? '101' : '200');
      t.ok(operation.responses[status], `${key}: answers ${status}`);
      const names = answer!.match(/`([a-z_]+(?:, [a-z_?]+)*)`/)?.[1];
      const success = operation.responses[status]?.content?.['application/json']?.schema;
      if (names !== undefined && success !== undefined) {
        const properties = Object.keys(resolve(document, success).properties ?? {});
        t.same(
          names
            .split(', ')
            .map((name) => name.replace(/\?$/, ''))
            .filter((name) => !properties.includes(name)),
          [],
          `${key}: its answer's fields`,
        );
      }
    }
    const documented = Object.entries(document.paths).flatMap(([path, operations]) =>
      Object.keys(operations).map((method) => `${method} ${path}`),
    );
    const perCommand = (key: string) =>
      /^post \/v1\/revisions\/\{revision_id\}\/[a-z_]+$/.test(key) && !listed.has(key);
    t.same(
      documented.filter((key) => !listed.has(key) && !perCommand(key)).sort(),
      [],
      'every documented operation has its row',
    );
    t.ok(listed.has(`post ${COMMAND_ROUTE}`), 'the commands have their row');
  },
);

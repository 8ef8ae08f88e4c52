/**
 * Hostile input to every route of docs/api.md and every WebSocket method of the command registry:
 * a fixed corpus (U+0000, lone surrogates, 100,000-deep nesting, a 10 MB string, wrong JSON
 * types, null, `__proto__` and `constructor` keys) as the whole body and as each of the fields
 * the API knows, in path parameters and query strings. Every answer must be a 2xx or a 4xx in the
 * envelope — never a 5xx — and the service must answer normally afterwards (docs/api.md, "Conventions").
 */
import { readFile } from 'node:fs/promises';
import t from 'tap';
import { COMMANDS } from '../control-plane/commands/registry.ts';
import { buildTestApp, signInAnonymous } from './helpers/app.ts';
import { createWorkflow } from './helpers/runner.ts';
import { connect, wsUrl } from './helpers/ws-client.ts';

// Thousands of hostile requests, a 10 MB body and 100,000-deep nesting among them: more than
// tap's default per-file bound on a busy 2-core machine.
t.setTimeout(300_000);

const { app } = await buildTestApp(t);
const caller = await signInAnonymous(app);
const flow = await createWorkflow(app, caller);

/** Body values, as raw JSON text (so that 100,000-deep nesting and lone surrogates are sent as written). */
const DEEP = '['.repeat(100_000) + ']'.repeat(100_000);
const VALUES: Record<string, string> = {
  nul: '"a\\u0000b"',
  'lone surrogate': '"a\\ud800b"',
  'low surrogate': '"\\udc00"',
  'deep array': DEEP,
  'deep object': '{"a":'.repeat(20_000) + '1' + '}'.repeat(20_000),
  number: '-1e308',
  'huge integer': '123456789012345678901234567890',
  true: 'true',
  null: 'null',
  array: '[1,"x",null]',
  'empty object': '{}',
  'long string': `"${'x'.repeat(100_000)}"`,
  proto: '{"__proto__":{"admin":true},"constructor":{"prototype":{"polluted":true}}}',
};
const TEN_MB = `{"name":"${'x'.repeat(10 * 1024 * 1024)}"}`;

/** Field names the API's bodies and params use. */
const FIELDS = [
  'alias',
  'name',
  'visibility',
  'type',
  'user_id',
  'refresh_token',
  'id_token',
  'role',
  'scopes',
  'expires_at',
  'copy_from',
  'revision_id',
  'session_id',
  'definition_id',
  'execution_id',
  'schedule_id',
  'input_data',
  'graph',
  'category',
  'code',
  'cursor',
  'limit',
  'entries',
  'value',
  'text',
  'records',
  'mutations',
  'query',
  'cron',
  'timezone',
  'target',
  'target_id',
  'enabled',
  'file',
  'inputs',
  '__proto__',
];

const PATH_VALUES = [
  '%00',
  '%ED%A0%80',
  'x'.repeat(100),
  '..',
  '__proto__',
  'constructor',
  '00000000-0000-4000-8000-000000000000',
  '-1',
  '%FF',
];

interface Answer {
  status: number;
  body: string;
}
const answers: Array<{ what: string } & Answer> = [];

function isEnvelope(body: string): boolean {
  try {
    const parsed = JSON.parse(body) as { status?: unknown; error?: unknown };
    return parsed.status === 'failure' && typeof parsed.error === 'string';
  } catch {
    return false;
  }
}

async function send(method: string, url: string, payload?: string): Promise<void> {
  const res = await app.inject({
    method: method as 'GET',
    url,
    headers: { ...caller.headers, ...(payload === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(payload === undefined ? {} : { payload }),
  });
  answers.push({
    what: `${method} ${url.slice(0, 120)} ${payload === undefined ? '' : payload.slice(0, 60)}`,
    status: res.statusCode,
    body: res.body,
  });
}

function realPath(method: string, pattern: string): string {
  // DELETE routes get ids that name nothing, so the fixtures survive the run.
  const real: Record<string, string> =
    method === 'DELETE'
      ? {}
      : {
          ':org_id': flow.orgId,
          ':id': pattern.startsWith('/v1/orgs') ? flow.orgId : flow.rev,
          ':blob_id': flow.blobId,
          ':revision_id': flow.rev,
          ':user_id': caller.user.id,
          ':target': 'organization',
          ':target_id': flow.orgId,
          ':alias': 'meta',
          ':command': 'list_sessions',
        };
  return pattern.replace(/:[a-z_]+/g, (param) => real[param] ?? '00000000-0000-4000-8000-000000000000');
}

/**
 * Which fields reach a route's or a method's handler: every value of the corpus is sent in each of
 * those. A field a body does not know is refused (or ignored) by the same schema check whatever
 * its value, so each of the others gets one value of the corpus, a different one per route and
 * field, and every pair of field and value is still sent somewhere.
 */
function valuesFor(known: ReadonlySet<string>, field: string, turn: number): string[] {
  const all = Object.values(VALUES);
  return known.has(field) ? all : [all[turn % all.length]!];
}

/** Every property name anywhere in a JSON schema (nested bodies included). */
function propertyNames(schema: unknown, into = new Set<string>()): Set<string> {
  if (Array.isArray(schema)) for (const item of schema) propertyNames(item, into);
  else if (schema !== null && typeof schema === 'object') {
    for (const [key, value] of Object.entries(schema)) {
      if (key === 'properties' && value !== null && typeof value === 'object')
        for (const name of Object.keys(value)) into.add(name);
      propertyNames(value, into);
    }
  }
  return into;
}

const openapi = (await app.inject({ method: 'GET', url: '/v1/openapi.json' })).json() as {
  paths: Record<string, Record<string, { requestBody?: unknown }>>;
};
/** The body fields of a route, from the API document; every field of the corpus when it is not there. */
function routeFields(method: string, pattern: string): Set<string> {
  // The command route is documented once per command; realPath sends list_sessions.
  const template = pattern.replace(':command', 'list_sessions').replace(/:([a-z_]+)/g, '{$1}');
  const documented = openapi.paths[template]?.[method.toLowerCase()];
  return documented ? propertyNames(documented.requestBody) : new Set(FIELDS);
}

const openrpc = (await app.inject({ method: 'GET', url: '/v1/openrpc.json' })).json() as {
  methods: Array<{ name: string; params: Array<{ name: string; schema: unknown }> }>;
};
/** The params of a WebSocket method (with the fields of nested params), from the OpenRPC document. */
function methodFields(name: string): Set<string> {
  const method = openrpc.methods.find((m) => m.name === name);
  if (!method) return new Set(FIELDS);
  const fields = propertyNames(method.params.map((param) => param.schema));
  for (const param of method.params) fields.add(param.name);
  return fields;
}

const routes = [
  ...(await readFile(new URL('../docs/api.md', import.meta.url), 'utf8')).matchAll(
    /^\| (GET|POST|PUT|PATCH|DELETE) \| `([^`]+)`/gm,
  ),
].map((m) => ({ method: m[1]!, url: m[2]! }));

t.test('every documented route answers hostile input with a 2xx or a 4xx envelope, never a 5xx', async (t) => {
  t.ok(routes.length >= 40, `${routes.length} routes from docs/api.md`);
  for (const route of routes) {
    t.ok(app.hasRoute({ method: route.method as 'GET', url: route.url }), `${route.method} ${route.url} exists`);
    const path = realPath(route.method, route.url);
    for (const bad of PATH_VALUES) {
      for (const param of route.url.match(/:[a-z_]+/g) ?? [])
        await send(route.method, realPath(route.method, route.url.replace(param, bad)));
    }
    if (route.method === 'GET') {
      for (const bad of ['%00', '%ED%A0%80', '-1', '1e9', 'x'.repeat(5000), '__proto__'])
        await send('GET', `${path}?limit=${bad}&cursor=${bad}`);
      continue;
    }
    if (route.method === 'DELETE') {
      for (const value of Object.values(VALUES)) await send('DELETE', path, value);
      continue;
    }
    await send(route.method, path, TEN_MB);
    for (const value of Object.values(VALUES)) await send(route.method, path, value);
    const known = routeFields(route.method, route.url);
    for (const [i, field] of FIELDS.entries())
      for (const value of valuesFor(known, field, routes.indexOf(route) + i))
        await send(route.method, path, `{"${field}":${value}}`);
  }
  const failures = answers.filter((a) => a.status >= 500 || (a.status >= 400 && !isEnvelope(a.body)));
  t.same(
    failures.slice(0, 10).map((a) => `${a.status} ${a.what} → ${a.body.slice(0, 200)}`),
    [],
    `no 5xx and every refusal in the envelope (${answers.length} requests)`,
  );
  t.ok(
    answers.some((a) => a.status === 400),
    'refusals were made (the corpus reached validation)',
  );
});

t.test(
  'every WebSocket method answers hostile params with a result or a refusal, and the connection serves on',
  async (t) => {
    const client = await connect(t, await wsUrl(app), { headers: caller.headers });
    const names = [...new Set(COMMANDS.map((c) => c.name))];
    t.ok(names.length > 30, `${names.length} methods`);
    let id = 0;
    const problems: string[] = [];
    const rpc = async (method: string, params: string) => {
      const reply = await client.call(`{"jsonrpc":"2.0","id":${++id},"method":"${method}","params":${params}}`);
      const http = reply?.error?.data?.http_status;
      if (
        reply?.id !== id ||
        (reply.error === undefined && reply.result === undefined) ||
        (reply.error !== undefined && (typeof http !== 'number' || http >= 500))
      ) {
        problems.push(`${method} ${params.slice(0, 80)} → ${JSON.stringify(reply).slice(0, 200)}`);
      }
    };
    for (const [n, name] of names.entries()) {
      for (const value of Object.values(VALUES)) if (value !== DEEP) await rpc(name, value);
      const known = methodFields(name);
      for (const [i, field] of FIELDS.entries())
        for (const value of valuesFor(known, field, n + i))
          await rpc(name, `{"revision_id":"${flow.rev}","${field}":${value}}`);
    }
    t.same(problems.slice(0, 10), [], `every call answered a result or a 4xx refusal (${id} calls)`);
    const again = await client.call({ jsonrpc: '2.0', id: 'after', method: 'get_user', params: { user_id: 'me' } });
    t.match(again, { id: 'after', result: { user: { id: caller.user.id } } }, 'the same connection still serves');
  },
);

t.test('the service answers normally afterwards', async (t) => {
  const fresh = await app.inject({ method: 'POST', url: '/v1/auth/anonymous', payload: {} });
  t.equal(fresh.statusCode, 200);
  const user = await app.inject({ method: 'GET', url: `/v1/users/${caller.user.id}`, headers: caller.headers });
  t.equal(user.statusCode, 200);
  const listed = await app.inject({
    method: 'POST',
    url: `/v1/revisions/${flow.rev}/list_sessions`,
    headers: caller.headers,
    payload: {},
  });
  t.equal(listed.statusCode, 200);
});

import { Writable } from 'node:stream';
import t from 'tap';
import { buildApp } from '../control-plane/app.ts';
import { loadConfig } from '../shared/config.ts';
import { createDb } from '../shared/db/db.ts';
import { createTestDatabase } from './helpers/db.ts';
import { insertBlob, insertOrg, insertServiceAccount } from './helpers/access.ts';
import { signedHeaders } from '../shared/webhooks/signature.ts';

// Every log line (at trace level) and every response of a run that mints keys and stores
// credentials is captured; no key secret may appear anywhere but its own mint response, and no
// credential secret anywhere at all, the database included.

const logLines: string[] = [];
const stream = new Writable({
  write(chunk, _encoding, done) {
    logLines.push(String(chunk));
    done();
  },
});

const databaseUrl = await createTestDatabase(t);
const config = loadConfig({
  DATA_DIR: '/nonexistent-never-written',
  DATABASE_URL: databaseUrl,
  TOKEN_SIGNING_KEY: 'test-signing-key-0123456789abcdef0123456789',
  CURSOR_KEY: 'test-cursor-key-0123456789abcdef0123456789',
  CREDENTIAL_KEY: 'test-credential-key-0123456789abcdef01234567',
  OPS_TOKEN: 'test-ops-token',
});
const db = createDb({ connectionString: databaseUrl });
const app = await buildApp({ config, db, logger: { level: 'trace', stream } });
t.teardown(async () => {
  await app.close();
  await db.close();
});

interface Recorded {
  label: string;
  status: number;
  text: string;
}
const responses: Recorded[] = [];

async function send(
  label: string,
  method: string,
  url: string,
  headers: Record<string, string>,
  body?: unknown,
): Promise<any> {
  const res = await app.inject({
    method: method as 'GET',
    url,
    headers,
    ...(body !== undefined ? { payload: body as object } : {}),
  });
  responses.push({ label, status: res.statusCode, text: JSON.stringify(res.headers) + '\n' + res.body });
  return { status: res.statusCode, body: res.json() };
}

const signIn = await send('sign-in', 'POST', '/v1/auth/anonymous', {}, {});
const human = { authorization: `Bearer ${signIn.body.access_token}` };
const ownerId: string = signIn.body.user.id;
const org = await insertOrg(db, ownerId);
const blob = await insertBlob(db, org.id);
const bot = await insertServiceAccount(db, ownerId);

const keys: Array<{ key: string; secret: string; mintLabel: string }> = [];
for (const [target, id] of [
  ['organization', org.id],
  ['blob', blob.id],
  ['user', ownerId],
  ['user', bot.id],
]) {
  const label = `mint ${target} ${id}`;
  const minted = await send(label, 'POST', '/v1/api-keys', human, {
    target,
    target_id: id,
    role: 'admin',
    name: `key for ${target}`,
  });
  if (minted.status !== 201) throw new Error(`mint failed: ${JSON.stringify(minted.body)}`);
  const key: string = minted.body.api_key.key;
  // `wsk_` + 16 hex digits + `_` is public (the listed prefix); the rest is the secret.
  keys.push({ key, secret: key.slice(21), mintLabel: label });
}
const credentialSecrets = [
  'ghp_credentialSecretNumberOne_0123456789',
  'password: "hunter2-but-much-longer-and-unique-9f8e7d"',
];

// Use every key, well and badly.
for (const { key } of keys) {
  await send('use key', 'GET', `/v1/members/target/organization/${org.id}`, { 'x-api-key': key });
  await send('use key on its user', 'GET', '/v1/api-keys/target/user/me', { 'x-api-key': key });
  await send('tampered key', 'GET', `/v1/members/target/organization/${org.id}`, { 'x-api-key': key + 'x' });
  await send('two credentials', 'GET', `/v1/members/target/organization/${org.id}`, { 'x-api-key': key, ...human });
  await send(
    'perimeter with key',
    'POST',
    '/v1/credentials',
    { 'x-api-key': key },
    { target: 'organization', target_id: org.id, name: 'VIA_KEY', secret: credentialSecrets[0] },
  );
}
await send('key in a body', 'POST', '/v1/members', human, {
  target: 'organization',
  target_id: org.id,
  user_id: keys[0]!.key,
  role: 'read',
});

// Store, list, refuse and delete credentials.
const stored = await send('store', 'POST', '/v1/credentials', human, {
  target: 'organization',
  target_id: org.id,
  name: 'ONE',
  secret: credentialSecrets[0],
});
await send('store on blob', 'POST', '/v1/credentials', human, {
  target: 'blob',
  target_id: blob.alias,
  name: 'TWO',
  secret: credentialSecrets[1],
});
await send('duplicate', 'POST', '/v1/credentials', human, {
  target: 'organization',
  target_id: org.id,
  name: 'ONE',
  secret: credentialSecrets[1],
});
await send('unknown field', 'POST', '/v1/credentials', human, {
  target: 'organization',
  target_id: org.id,
  name: 'THREE',
  secret: credentialSecrets[0],
  note: credentialSecrets[1],
});
await send('bad name', 'POST', '/v1/credentials', human, {
  target: 'organization',
  target_id: org.id,
  name: credentialSecrets[1],
  secret: credentialSecrets[0],
});
await send('secret of the wrong type', 'POST', '/v1/credentials', human, {
  target: 'organization',
  target_id: org.id,
  name: 'FOUR',
  secret: [credentialSecrets[0]],
});
await send('list org', 'GET', `/v1/credentials/target/organization/${org.id}`, human);
await send('list blob', 'GET', `/v1/credentials/target/blob/${blob.id}`, human);
await send('delete', 'DELETE', '/v1/credentials', human, { id: stored.body.credential.id });

// List and revoke keys.
await send('list keys', 'GET', `/v1/api-keys/target/organization/${org.id}`, human);
await send('list user keys', 'GET', `/v1/api-keys/target/user/${bot.id}`, human);
const list = await send('list blob keys', 'GET', `/v1/api-keys/target/blob/${blob.id}`, human);
await send('revoke', 'DELETE', '/v1/api-keys', human, { id: list.body.api_keys[0].id });
await send('use revoked', 'GET', `/v1/members/target/blob/${blob.id}`, { 'x-api-key': keys[1]!.key });

// Webhook secrets (docs/webhooks.md, "Signatures"): a trigger's, created then rotated, and an event hook's.
const rev = `/v1/revisions/${blob.revisionId}`;
const session = await send('create session', 'POST', `${rev}/create_session`, human, {});
const definition = await send('create definition', 'POST', `${rev}/create_definition`, human, {
  category: 'workflow',
  graph: { start: 'a', nodes: { a: { processor: 'logic.sleep', config: { seconds: 1 } } } },
});
const trigger = await send('create trigger', 'POST', `${rev}/create_trigger`, human, {
  session_id: session.body.session.id,
  definition_id: definition.body.definition.id,
});
const triggerId: string = trigger.body.trigger.id;
const rotated = await send('rotate trigger', 'POST', `${rev}/rotate_trigger_secret`, human, { trigger_id: triggerId });
const eventHook = await send('create event hook', 'POST', `${rev}/create_event_hook`, human, {
  session_id: session.body.session.id,
  url: 'https://example.test/hook',
  events: ['execution.failed'],
});
await send('get trigger', 'POST', `${rev}/get_trigger`, human, { trigger_id: triggerId });
await send('list triggers', 'POST', `${rev}/list_triggers`, human, { session_id: session.body.session.id });
await send('get event hook', 'POST', `${rev}/get_event_hook`, human, { hook_id: eventHook.body.event_hook.id });
await send('list event hooks', 'POST', `${rev}/list_event_hooks`, human, { session_id: session.body.session.id });
await send(
  'signed with the retired secret',
  'POST',
  `/v1/hooks/${triggerId}`,
  { 'content-type': 'application/json', ...signedHeaders(trigger.body.secret, 'msg_1', '{}') },
  {},
);
const hookSecrets = [
  { label: 'create trigger', secret: String(trigger.body.secret) },
  { label: 'rotate trigger', secret: String(rotated.body.secret) },
  { label: 'create event hook', secret: String(eventHook.body.secret) },
];

t.test('the run did what it claims', async (t) => {
  t.equal(keys.length, 4);
  t.equal(stored.status, 201);
  t.ok(
    responses.some((r) => r.label === 'use key' && r.status === 200),
    'keys were used',
  );
  t.ok(
    responses.some((r) => r.label === 'use revoked' && r.status === 401),
    'a revoked key was refused',
  );
  t.ok(logLines.length > responses.length, 'log lines were captured');
  t.ok(
    logLines.some((l) => l.includes('/v1/api-keys')),
    'requests were logged',
  );
});

t.test('a key secret appears only in its own mint response', async (t) => {
  for (const { key, secret, mintLabel } of keys) {
    t.ok(secret.length >= 43);
    const seenIn = responses.filter((r) => r.text.includes(secret)).map((r) => r.label);
    t.strictSame(seenIn, [mintLabel], `key ${key.slice(0, 20)}…`);
    t.notOk(
      logLines.some((l) => l.includes(secret)),
      'never logged',
    );
  }
});

t.test('a credential secret appears in no response and no log line', async (t) => {
  for (const secret of credentialSecrets) {
    const escaped = JSON.stringify(secret).slice(1, -1);
    t.strictSame(
      responses.filter((r) => r.text.includes(secret) || r.text.includes(escaped)).map((r) => r.label),
      [],
    );
    t.notOk(
      logLines.some((l) => l.includes(secret) || l.includes(escaped)),
      'never logged',
    );
  }
});

t.test('a webhook secret appears only in the answer that set it, never in a log line', async (t) => {
  t.equal(responses.find((r) => r.label === 'signed with the retired secret')?.status, 401);
  for (const { label, secret } of hookSecrets) {
    t.match(secret, /^whsec_/);
    const key = secret.slice('whsec_'.length);
    t.strictSame(
      responses.filter((r) => r.text.includes(key)).map((r) => r.label),
      [label],
    );
    t.notOk(
      logLines.some((l) => l.includes(key)),
      'never logged',
    );
  }
});

t.test('neither is stored in the clear anywhere in the database', async (t) => {
  const { rows: tables } = await db.query<{ name: string }>(
    `SELECT quote_ident(table_name) AS name FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE'`,
  );
  t.ok(tables.some((r) => r.name === 'credentials'));
  let dump = '';
  for (const { name } of tables) {
    const { rows } = await db.query<{ text: string | null }>(
      `SELECT string_agg(row_to_json(t)::text, E'\\n') AS text FROM ${name} t`,
    );
    dump += rows[0]?.text ?? '';
  }
  t.ok(dump.includes(ownerId), 'the dump holds the data');
  for (const secret of [
    ...keys.map((k) => k.secret),
    ...credentialSecrets,
    ...hookSecrets.map((h) => h.secret.slice('whsec_'.length)),
  ]) {
    t.notOk(dump.includes(secret), 'not in the clear');
    t.notOk(dump.includes(Buffer.from(secret).toString('hex')), 'nor as bytes');
  }
});

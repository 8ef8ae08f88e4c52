/**
 * The access perimeter (docs/access.md, "The access perimeter"), as one table: every operation that
 * changes who can access what, run through the real routes by four credentials of the same two
 * accounts. A service account's own `admin` key is refused with 403 `forbidden` and changes
 * nothing; its acting token is admitted, except for minting organization or blob keys; a human
 * is unaffected with a bearer token or its own key.
 */
import t, { type Test } from 'tap';
import { buildTestApp, call, signInAnonymous } from './helpers/app.ts';
import {
  actAs,
  apiKey,
  createBlob,
  createOrg,
  createServiceAccount,
  grant,
  mintKey,
  type Headers,
} from './helpers/accounts.ts';

const { app, db } = await buildTestApp(t);

const alice = await signInAnonymous(app);
const carol = await signInAnonymous(app);
const bot = await createServiceAccount(app, alice.headers, 'perimeter-bot');
let orgCount = 0;

/** A fresh organization of alice's, with a blob, on which the bot is an admin member. */
async function workspace(): Promise<{ orgId: string; blobId: string }> {
  const n = ++orgCount;
  const org = await createOrg(app, alice.headers, `perimeter-org-${n}`);
  const blob = await createBlob(app, alice.headers, org.id, `perimeter-blob-${n}`);
  await grant(app, alice.headers, 'organization', org.id, bot.id, 'admin');
  return { orgId: org.id, blobId: blob.id };
}

/**
 * One way of calling: its headers, the account it acts as, and a bearer or acting token of that
 * same account (used to build fixtures the account owns, such as its own service accounts).
 */
interface Credential {
  name: string;
  headers: Headers;
  accountId: string;
  fixtures: Headers;
}

const botActing = await actAs(app, alice.headers, bot.id);
// The service account mints its own key through the API, under its acting token (a user key is allowed).
const botKey = (await mintKey(app, botActing, 'user', bot.id, 'admin')).key;
const aliceKey = (await mintKey(app, alice.headers, 'user', alice.user.id, 'admin')).key;

const serviceKey: Credential = {
  name: 'service account key',
  headers: apiKey(botKey),
  accountId: bot.id,
  fixtures: botActing,
};
const acting: Credential = { name: 'acting token', headers: botActing, accountId: bot.id, fixtures: botActing };
const humanBearer: Credential = {
  name: 'human bearer',
  headers: alice.headers,
  accountId: alice.user.id,
  fixtures: alice.headers,
};
const humanKey: Credential = {
  name: 'human key',
  headers: apiKey(aliceKey),
  accountId: alice.user.id,
  fixtures: alice.headers,
};

interface Request {
  method: 'POST' | 'DELETE' | 'PATCH';
  url: string;
  body: unknown;
}

interface Row {
  operation: string;
  /** Builds what the operation acts on (fresh each time) and the request. */
  prepare: (as: Credential) => Promise<Request>;
  /** Status when admitted. */
  admitted: number;
  /** The acting token's outcome when it differs from `admitted`. */
  whileActing?: { status: number; error: string };
  /** Stateless operations: how to see that it took effect, in place of a changed database. */
  tookEffect?: (t: Test, body: any, request: Request) => Promise<void>;
}

const PERIMETER: Row[] = [
  {
    operation: 'mint an organization key',
    prepare: async () => ({
      method: 'POST',
      url: '/v1/api-keys',
      body: { target: 'organization', target_id: (await workspace()).orgId, role: 'read' },
    }),
    admitted: 201,
    whileActing: { status: 400, error: 'cannot_mint_while_acting' },
  },
  {
    operation: 'mint a blob key',
    prepare: async () => ({
      method: 'POST',
      url: '/v1/api-keys',
      body: { target: 'blob', target_id: (await workspace()).blobId, role: 'write' },
    }),
    admitted: 201,
    whileActing: { status: 400, error: 'cannot_mint_while_acting' },
  },
  {
    operation: 'mint a user key',
    prepare: async (as) => ({
      method: 'POST',
      url: '/v1/api-keys',
      body: { target: 'user', target_id: as.accountId, role: 'read' },
    }),
    admitted: 201,
  },
  {
    operation: 'revoke a key',
    prepare: async () => {
      const key = await mintKey(app, alice.headers, 'organization', (await workspace()).orgId, 'read');
      return { method: 'DELETE', url: '/v1/api-keys', body: { id: key.id } };
    },
    admitted: 200,
  },
  {
    operation: 'store a credential',
    prepare: async () => ({
      method: 'POST',
      url: '/v1/credentials',
      body: { target: 'organization', target_id: (await workspace()).orgId, name: 'token', secret: 's3cret' },
    }),
    admitted: 201,
  },
  {
    operation: 'delete a credential',
    prepare: async () => {
      const { orgId } = await workspace();
      const stored = await call(app, 'POST', '/v1/credentials', {
        as: alice,
        body: { target: 'organization', target_id: orgId, name: 'token', secret: 's3cret' },
      });
      if (stored.status !== 201) throw new Error(`store credential: ${stored.status}`);
      return { method: 'DELETE', url: '/v1/credentials', body: { id: stored.body.credential.id } };
    },
    admitted: 200,
  },
  {
    operation: 'grant a membership',
    prepare: async () => ({
      method: 'POST',
      url: '/v1/members',
      body: { target: 'organization', target_id: (await workspace()).orgId, user_id: carol.user.id, role: 'read' },
    }),
    admitted: 200,
  },
  {
    operation: 'revoke a membership',
    prepare: async () => {
      const { blobId } = await workspace();
      await grant(app, alice.headers, 'blob', blobId, carol.user.id, 'write');
      return {
        method: 'DELETE',
        url: '/v1/members',
        body: { target: 'blob', target_id: blobId, user_id: carol.user.id },
      };
    },
    admitted: 200,
  },
  {
    operation: 'create an account',
    prepare: async () => ({ method: 'POST', url: '/v1/users', body: { name: 'new account' } }),
    admitted: 201,
  },
  {
    operation: 'retire an account',
    prepare: async (as) => ({
      method: 'DELETE',
      url: `/v1/users/${(await createServiceAccount(app, as.fixtures, 'doomed')).id}`,
      body: undefined,
    }),
    admitted: 200,
  },
  {
    operation: 'mint an acting token',
    prepare: async (as) => ({
      method: 'POST',
      url: '/v1/auth/core/impersonate',
      body: { user_id: (await createServiceAccount(app, as.fixtures, 'worker')).id },
    }),
    admitted: 200,
    tookEffect: async (t, body, request) => {
      const me = await call(app, 'GET', '/v1/users/me', { headers: { authorization: `Bearer ${body.acting_token}` } });
      t.equal(me.body.user?.id, (request.body as { user_id: string }).user_id, 'the acting token works');
    },
  },
  {
    operation: "change an organization's visibility",
    prepare: async () => ({
      method: 'PATCH',
      url: `/v1/orgs/${(await workspace()).orgId}`,
      body: { visibility: 'public' },
    }),
    admitted: 200,
  },
  {
    operation: "change a blob's visibility",
    prepare: async () => {
      const { orgId, blobId } = await workspace();
      return { method: 'PATCH', url: `/v1/blobs/${orgId}/${blobId}`, body: { visibility: 'public' } };
    },
    admitted: 200,
  },
];

/**
 * Everything the perimeter protects, in one comparable value: accounts and ownership, keys,
 * credentials, memberships and visibility. `last_used_at` is left out: using a key touches it.
 */
async function accessState(): Promise<unknown> {
  const { rows } = await db.query(`SELECT
    (SELECT json_agg(json_build_object('id', id, 'owner', owner_id) ORDER BY id) FROM users) AS users,
    (SELECT json_agg(json_build_object('id', id, 'role', role, 'target', target) ORDER BY id) FROM api_keys) AS keys,
    (SELECT json_agg(json_build_object('id', id, 'name', name) ORDER BY id) FROM credentials) AS credentials,
    (SELECT json_agg(json_build_object('id', id, 'user', user_id, 'role', role) ORDER BY id) FROM memberships) AS members,
    (SELECT json_agg(json_build_object('id', id, 'visibility', visibility) ORDER BY id) FROM orgs) AS orgs,
    (SELECT json_agg(json_build_object('id', id, 'visibility', visibility) ORDER BY id) FROM blobs) AS blobs`);
  return rows[0];
}

async function run(t: Test, as: Credential, row: Row, expected: { status: number; error?: string }): Promise<void> {
  const request = await row.prepare(as);
  const before = await accessState();
  const res = await call(app, request.method, request.url, {
    headers: as.headers,
    ...(request.body === undefined ? {} : { body: request.body }),
  });
  const label = `${row.operation} with ${as.name}`;
  t.equal(res.status, expected.status, label);
  if (expected.error) {
    t.equal(res.body.error, expected.error, `${label}: ${expected.error}`);
    t.same(await accessState(), before, `${label}: nothing changed`);
  } else {
    t.equal(res.body.status, 'success', label);
    if (row.tookEffect) await row.tookEffect(t, res.body, request);
    else t.notSame(await accessState(), before, `${label}: the change was made`);
  }
}

t.test('the perimeter table', async (t) => {
  for (const row of PERIMETER) {
    t.test(row.operation, async (t) => {
      await run(t, serviceKey, row, { status: 403, error: 'forbidden' });
      await run(t, acting, row, row.whileActing ?? { status: row.admitted });
      await run(t, humanBearer, row, { status: row.admitted });
      await run(t, humanKey, row, { status: row.admitted });
    });
  }
});

t.test("PATCH without a visibility change passes with the service account's key", async (t) => {
  const { orgId, blobId } = await workspace();
  const cases: Array<[string, string, unknown]> = [
    ['organization, same visibility', `/v1/orgs/${orgId}`, { visibility: 'private' }],
    ['organization, another field', `/v1/orgs/${orgId}`, { name: 'renamed by bot' }],
    ['organization, both', `/v1/orgs/${orgId}`, { name: 'again', visibility: 'private' }],
    ['blob, same visibility', `/v1/blobs/${orgId}/${blobId}`, { visibility: 'private' }],
    ['blob, another field', `/v1/blobs/${orgId}/${blobId}`, { name: 'renamed by bot' }],
  ];
  for (const [name, url, body] of cases) {
    const res = await call(app, 'PATCH', url, { headers: serviceKey.headers, body });
    t.equal(res.status, 200, name);
  }
  const { rows } = await db.query(
    'SELECT o.name, o.visibility, b.name AS blob_name FROM orgs o JOIN blobs b ON b.org_id = o.id WHERE o.id = $1::uuid',
    [orgId],
  );
  t.same(rows, [{ name: 'again', visibility: 'private', blob_name: 'renamed by bot' }]);
});

t.test('reads and listings of members, keys, credentials and accounts are ordinary work', async (t) => {
  const { orgId, blobId } = await workspace();
  for (const url of [
    `/v1/members/target/organization/${orgId}`,
    `/v1/members/target/blob/${blobId}`,
    `/v1/api-keys/target/organization/${orgId}`,
    `/v1/credentials/target/organization/${orgId}`,
    `/v1/users/target/organization/${orgId}`,
    `/v1/users/target/user/${bot.id}`,
    `/v1/api-keys/target/user/${bot.id}`,
    `/v1/orgs/${orgId}`,
  ]) {
    const res = await call(app, 'GET', url, { headers: serviceKey.headers });
    t.equal(res.status, 200, url);
  }
});

import t from 'tap';
import { createCredentialCipher } from '../shared/crypto/credential-cipher.ts';
import { findSealedCredential } from '../control-plane/sql/credentials.ts';
import { buildTestApp, call } from './helpers/app.ts';
import {
  grant,
  humans,
  insertBlob,
  insertOrg,
  insertServiceAccount,
  keyAuth,
  mintKey,
  tokenAuth,
} from './helpers/access.ts';

const { app, db, config } = await buildTestApp(t);
const [owner, bob, stranger] = await humans(app, 3);
const SECRET = 'sk-live-7f3a9c1e5b2d4680-correct-horse-battery-staple';

t.test('a credential is stored encrypted and answered as metadata only', async (t) => {
  const org = await insertOrg(db, owner!.user.id);
  const res = await call(app, 'POST', '/v1/credentials', {
    as: owner,
    body: { target: 'organization', target_id: org.alias, name: 'OPENAI_KEY', secret: SECRET },
  });
  t.equal(res.status, 201);
  const credential = res.body.credential;
  t.strictSame(Object.keys(credential).sort(), [
    'blob_ids',
    'created_at',
    'created_by',
    'id',
    'name',
    'target',
    'target_id',
  ]);
  t.match(credential, { name: 'OPENAI_KEY', target: 'organization', target_id: org.id, created_by: owner!.user.id });
  t.notOk(res.res.body.includes(SECRET));

  const { rows } = await db.query(
    'SELECT row_to_json(c)::text AS text, iv, auth_tag, ciphertext FROM credentials c WHERE id = $1',
    [credential.id],
  );
  const row = rows[0];
  t.notOk(row.text.includes(SECRET), 'no plaintext in the row');
  t.notOk(row.ciphertext.includes(Buffer.from(SECRET)), 'no plaintext in the ciphertext');
  t.notOk(row.text.includes(Buffer.from(SECRET).toString('hex')), 'nor its hex');
  t.equal(row.iv.length, 12);
  t.equal(row.auth_tag.length, 16);

  const cipher = createCredentialCipher(config.secrets.CREDENTIAL_KEY);
  const sealed = await findSealedCredential(db, 'organization', org.id, 'OPENAI_KEY');
  t.equal(cipher.decrypt(sealed!.sealed, sealed!.id), SECRET, 'the runner can open it');
  t.throws(() => cipher.decrypt(sealed!.sealed, '00000000-0000-4000-8000-000000000000'), 'bound to its record');
  t.throws(() => createCredentialCipher('another key').decrypt(sealed!.sealed, sealed!.id), 'and to the key');

  const list = await call(app, 'GET', `/v1/credentials/target/organization/${org.id}`, { as: owner });
  t.equal(list.status, 200);
  t.strictSame(list.body.credentials, [credential]);
});

t.test('names are unique per target', async (t) => {
  const org = await insertOrg(db, owner!.user.id);
  const body = { target: 'organization', target_id: org.id, name: 'TOKEN', secret: 'a' };
  t.equal((await call(app, 'POST', '/v1/credentials', { as: owner, body })).status, 201);
  const dup = await call(app, 'POST', '/v1/credentials', { as: owner, body });
  t.equal(dup.status, 409);
  t.equal(dup.body.error, 'conflict');
  const blob = await insertBlob(db, org.id);
  t.equal(
    (await call(app, 'POST', '/v1/credentials', { as: owner, body: { ...body, target: 'blob', target_id: blob.id } }))
      .status,
    201,
    'another target may reuse the name',
  );
});

t.test('storing and deleting need admin; listing needs read', async (t) => {
  const org = await insertOrg(db, owner!.user.id);
  await grant(app, owner!, 'organization', org.id, bob!.user.id, 'write');
  const stored = await call(app, 'POST', '/v1/credentials', {
    as: owner,
    body: { target: 'organization', target_id: org.id, name: 'DB', secret: SECRET },
  });
  const id = stored.body.credential.id;

  const writerStores = await call(app, 'POST', '/v1/credentials', {
    as: bob,
    body: { target: 'organization', target_id: org.id, name: 'X', secret: 'x' },
  });
  t.equal(writerStores.status, 403);
  t.equal(writerStores.body.error, 'forbidden');
  t.equal((await call(app, 'GET', `/v1/credentials/target/organization/${org.id}`, { as: bob })).status, 200);
  const writerDeletes = await call(app, 'DELETE', '/v1/credentials', { as: bob, body: { id } });
  t.equal(writerDeletes.status, 403);

  const strangerLists = await call(app, 'GET', `/v1/credentials/target/organization/${org.id}`, { as: stranger });
  t.equal(strangerLists.status, 404);
  const strangerDeletes = await call(app, 'DELETE', '/v1/credentials', { as: stranger, body: { id } });
  t.equal(strangerDeletes.status, 404);
  t.equal(strangerDeletes.body.error, 'not_found');

  const deleted = await call(app, 'DELETE', '/v1/credentials', { as: owner, body: { id } });
  t.equal(deleted.status, 200);
  t.equal(deleted.body.credential.id, id);
  t.equal((await call(app, 'DELETE', '/v1/credentials', { as: owner, body: { id } })).status, 404);
  const { rows } = await db.query('SELECT 1 FROM credentials WHERE id = $1', [id]);
  t.equal(rows.length, 0);
});

t.test("credentials of an account are its own and its owner's business", async (t) => {
  const bot = await insertServiceAccount(db, owner!.user.id);
  const self = await call(app, 'POST', '/v1/credentials', {
    as: bob,
    body: { target: 'user', target_id: 'me', name: 'GH', secret: 'x' },
  });
  t.equal(self.status, 201);
  t.equal(self.body.credential.target_id, bob!.user.id);
  t.equal(
    (
      await call(app, 'POST', '/v1/credentials', {
        as: owner,
        body: { target: 'user', target_id: bot.id, name: 'GH', secret: 'x' },
      })
    ).status,
    201,
  );
  const other = await call(app, 'POST', '/v1/credentials', {
    as: stranger,
    body: { target: 'user', target_id: bob!.user.id, name: 'GH2', secret: 'x' },
  });
  t.equal(other.status, 403);
  t.equal((await call(app, 'GET', `/v1/credentials/target/user/${bob!.user.id}`, { as: stranger })).status, 404);
  t.equal(
    (await call(app, 'DELETE', '/v1/credentials', { as: stranger, body: { id: self.body.credential.id } })).status,
    404,
  );
  const mine = await call(app, 'GET', '/v1/credentials/target/user/me', { as: bob });
  t.equal(mine.body.credentials.length, 1);
});

t.test("perimeter: a service account's own key may list but not store or delete", async (t) => {
  const org = await insertOrg(db, owner!.user.id);
  const bot = await insertServiceAccount(db, owner!.user.id);
  await grant(app, owner!, 'organization', org.id, bot.id, 'admin');
  const stored = await call(app, 'POST', '/v1/credentials', {
    as: owner,
    body: { target: 'organization', target_id: org.id, name: 'K', secret: 's' },
  });
  const as = keyAuth((await mintKey(app, owner!, 'user', bot.id, 'admin')).key);
  t.equal((await call(app, 'GET', `/v1/credentials/target/organization/${org.id}`, { as })).status, 200);
  const store = await call(app, 'POST', '/v1/credentials', {
    as,
    body: { target: 'organization', target_id: org.id, name: 'K2', secret: 's' },
  });
  t.equal(store.status, 403);
  t.equal(store.body.error, 'forbidden');
  const del = await call(app, 'DELETE', '/v1/credentials', { as, body: { id: stored.body.credential.id } });
  t.equal(del.status, 403);
  t.equal(del.body.error, 'forbidden');

  const acting = tokenAuth(await app.ctx.tokens.signActing(bot.id, owner!.user.id));
  t.equal(
    (
      await call(app, 'POST', '/v1/credentials', {
        as: acting,
        body: { target: 'organization', target_id: org.id, name: 'K3', secret: 's' },
      })
    ).status,
    201,
  );
  t.equal(
    (await call(app, 'DELETE', '/v1/credentials', { as: acting, body: { id: stored.body.credential.id } })).status,
    200,
  );
});

t.test('invalid bodies', async (t) => {
  const org = await insertOrg(db, owner!.user.id);
  const base = { target: 'organization', target_id: org.id, name: 'N', secret: 's' };
  for (const body of [
    { ...base, name: '' },
    { ...base, name: 'has space' },
    { ...base, secret: '' },
    { ...base, secret: 'x'.repeat(64 * 1024 + 1) },
    { ...base, extra: true },
    { target: 'organization', target_id: org.id, name: 'N' },
  ]) {
    const res = await call(app, 'POST', '/v1/credentials', { as: owner, body });
    t.equal(res.status, 400);
    t.equal(res.body.error, 'invalid_request_body');
  }
});

import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { Db } from '../../shared/db/db.ts';
import { call, signInAnonymous, type Caller } from './app.ts';

/**
 * Fixtures for the access tests. Organizations, blobs and service accounts are inserted directly,
 * so these tests exercise standing, keys and memberships without depending on the routes (and
 * quotas) that create them.
 */

function alias(prefix: string): string {
  return `${prefix}-${randomBytes(4).toString('hex')}`;
}

export type Visibility = 'private' | 'public';

export async function insertOrg(
  db: Db,
  ownerId: string,
  visibility: Visibility = 'private',
): Promise<{ id: string; alias: string }> {
  const { rows } = await db.query<{ id: string; alias: string }>(
    'INSERT INTO orgs (alias, owner_id, visibility) VALUES ($1, $2::uuid, $3) RETURNING id, alias',
    [alias('org'), ownerId, visibility],
  );
  return rows[0]!;
}

export async function insertBlob(
  db: Db,
  orgId: string,
  visibility: Visibility = 'private',
): Promise<{ id: string; alias: string; revisionId: string }> {
  const { rows } = await db.query<{ id: string; alias: string }>(
    `INSERT INTO blobs (alias, org_id, type, visibility) VALUES ($1, $2::uuid, 'svc.compute.workflow', $3) RETURNING id, alias`,
    [alias('blob'), orgId, visibility],
  );
  const blob = rows[0]!;
  const rev = await db.query<{ id: string }>(
    'INSERT INTO revisions (blob_id, number) VALUES ($1::uuid, 1) RETURNING id',
    [blob.id],
  );
  return { ...blob, revisionId: rev.rows[0]!.id };
}

export async function insertServiceAccount(db: Db, ownerId: string): Promise<{ id: string }> {
  const { rows } = await db.query<{ id: string }>(
    `INSERT INTO users (kind, name, owner_id) VALUES ('service', 'bot', $1::uuid) RETURNING id`,
    [ownerId],
  );
  return rows[0]!;
}

/** Headers authenticating with an API key. */
export function keyAuth(key: string): Caller {
  return { user: { id: '' }, token: '', refreshToken: '', headers: { 'x-api-key': key } };
}

/** Headers authenticating with a bearer or acting token. */
export function tokenAuth(token: string): Caller {
  return { user: { id: '' }, token, refreshToken: '', headers: { authorization: `Bearer ${token}` } };
}

/** Mints a key through the API; throws unless 201. Returns the key and its record. */
export async function mintKey(
  app: FastifyInstance,
  as: Caller,
  target: string,
  targetId: string,
  role: string,
  name?: string,
): Promise<{ key: string; record: Record<string, any> }> {
  const { status, body } = await call(app, 'POST', '/v1/api-keys', {
    as,
    body: { target, target_id: targetId, role, ...(name ? { name } : {}) },
  });
  if (status !== 201) throw new Error(`mint failed: ${status} ${JSON.stringify(body)}`);
  return { key: body.api_key.key, record: body.api_key };
}

/** Grants a membership through the API; throws unless 200. */
export async function grant(
  app: FastifyInstance,
  as: Caller,
  target: string,
  targetId: string,
  userId: string,
  role: string,
): Promise<void> {
  const { status, body } = await call(app, 'POST', '/v1/members', {
    as,
    body: { target, target_id: targetId, user_id: userId, role },
  });
  if (status !== 200) throw new Error(`grant failed: ${status} ${JSON.stringify(body)}`);
}

/** `n` anonymous humans. */
export async function humans(app: FastifyInstance, n: number): Promise<Caller[]> {
  return Promise.all(Array.from({ length: n }, () => signInAnonymous(app)));
}

import type { FastifyInstance } from 'fastify';
import { call } from './app.ts';

/** Request headers carrying one credential: a bearer or acting token, or an API key. */
export type Headers = Record<string, string>;

export const bearer = (token: string): Headers => ({ authorization: `Bearer ${token}` });
export const apiKey = (key: string): Headers => ({ 'x-api-key': key });

async function expectOk(what: string, promise: ReturnType<typeof call>, status = 200): Promise<any> {
  const res = await promise;
  if (res.status !== status) throw new Error(`${what} failed: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

/** `POST /v1/users` as `headers`; returns the new service account. */
export async function createServiceAccount(
  app: FastifyInstance,
  headers: Headers,
  name = 'bot',
  alias?: string,
): Promise<{ id: string } & Record<string, unknown>> {
  const body = await expectOk(
    'create service account',
    call(app, 'POST', '/v1/users', { headers, body: { name, ...(alias ? { alias } : {}) } }),
    201,
  );
  return body.user;
}

/** `POST /v1/api-keys` as `headers`; returns the secret key and the key record's id. */
export async function mintKey(
  app: FastifyInstance,
  headers: Headers,
  target: string,
  targetId: string,
  role: string,
): Promise<{ key: string; id: string }> {
  const body = await expectOk(
    'mint key',
    call(app, 'POST', '/v1/api-keys', { headers, body: { target, target_id: targetId, role } }),
    201,
  );
  return { key: body.api_key.key, id: body.api_key.id };
}

/** `POST /v1/auth/core/impersonate` as `headers`; returns the acting token's headers. */
export async function actAs(app: FastifyInstance, headers: Headers, serviceAccountId: string): Promise<Headers> {
  const body = await expectOk(
    'impersonate',
    call(app, 'POST', '/v1/auth/core/impersonate', { headers, body: { user_id: serviceAccountId } }),
  );
  return bearer(body.acting_token);
}

/** `POST /v1/orgs` as `headers`; returns the organization. */
export async function createOrg(
  app: FastifyInstance,
  headers: Headers,
  alias: string,
  visibility = 'private',
): Promise<{ id: string; visibility: string } & Record<string, unknown>> {
  const body = await expectOk(
    'create org',
    call(app, 'POST', '/v1/orgs', { headers, body: { alias, visibility } }),
    201,
  );
  return body.org;
}

/** `POST /v1/blobs/:org_id` (a workflow blob) as `headers`; returns the blob. */
export async function createBlob(
  app: FastifyInstance,
  headers: Headers,
  orgId: string,
  alias: string,
): Promise<{ id: string; visibility: string } & Record<string, unknown>> {
  const body = await expectOk(
    'create blob',
    call(app, 'POST', `/v1/blobs/${orgId}`, { headers, body: { type: 'svc.compute.workflow', alias } }),
    201,
  );
  return body.blob;
}

/** `POST /v1/members` as `headers`. */
export async function grant(
  app: FastifyInstance,
  headers: Headers,
  target: string,
  targetId: string,
  userId: string,
  role: string,
): Promise<void> {
  await expectOk(
    'grant membership',
    call(app, 'POST', '/v1/members', { headers, body: { target, target_id: targetId, user_id: userId, role } }),
  );
}

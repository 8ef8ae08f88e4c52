import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { call, type Caller } from './app.ts';

/** Who makes a request: a signed-in caller, or just the headers of some other credential. */
export type Requester = Pick<Caller, 'headers'>;

/** A fresh alias that no other test in the file will take. */
export function uniqueAlias(prefix: string): string {
  return `${prefix}-${randomBytes(4).toString('hex')}`;
}

/** Creates an organization through the API and returns its record; throws unless 201. */
export async function createOrg(
  app: FastifyInstance,
  as: Requester,
  fields: { alias?: string; name?: string; visibility?: 'private' | 'public' } = {},
): Promise<Record<string, any>> {
  const { status, body } = await call(app, 'POST', '/v1/orgs', {
    headers: as.headers,
    body: { alias: uniqueAlias('org'), ...fields },
  });
  if (status !== 201) throw new Error(`create org failed: ${status} ${JSON.stringify(body)}`);
  return body.org;
}

/** Creates a blob (and its first revision) through the API; throws unless 201. */
export async function createBlob(
  app: FastifyInstance,
  as: Requester,
  orgRef: string,
  fields: { type?: string; alias?: string; name?: string; visibility?: 'private' | 'public' } = {},
): Promise<{ blob: Record<string, any>; revision: Record<string, any> }> {
  const { status, body } = await call(app, 'POST', `/v1/blobs/${orgRef}`, {
    headers: as.headers,
    body: { type: 'svc.compute.workflow', alias: uniqueAlias('blob'), ...fields },
  });
  if (status !== 201) throw new Error(`create blob failed: ${status} ${JSON.stringify(body)}`);
  return { blob: body.blob, revision: body.revision };
}

/** Creates a revision of a blob through the API; throws unless 201. */
export async function createRevision(
  app: FastifyInstance,
  as: Requester,
  orgRef: string,
  blobRef: string,
  body: Record<string, unknown> = {},
): Promise<Record<string, any>> {
  const res = await call(app, 'POST', `/v1/blobs/${orgRef}/${blobRef}/revisions`, { headers: as.headers, body });
  if (res.status !== 201) throw new Error(`create revision failed: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.revision;
}

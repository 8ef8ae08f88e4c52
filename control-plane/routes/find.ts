import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { BLOB_TYPE_NAMES } from '../../shared/blob-types.ts';
import type { Queryable } from '../../shared/db/db.ts';
import { ServiceError } from '../../shared/errors.ts';
import { isUuid, refSchema } from '../../shared/ids.ts';
import { roleAtLeast } from '../../shared/roles.ts';
import { parseInput } from '../../shared/validate.ts';
import { blobStanding, loadBlob, loadOrg, orgStanding } from '../access/standing.ts';
import type { Principal } from '../auth/principal.ts';
import { routeSchema, success } from '../openapi/route-schema.ts';
import { ok } from '../reply.ts';
import { findById, type FoundKind } from '../sql/find.ts';

const params = z.strictObject({ id: refSchema });
const uuid = z.uuid();

const foundSchema = z
  .strictObject({
    kind: z.enum(['organization', 'blob', 'revision', 'session', 'definition', 'execution', 'schedule']),
    id: uuid.meta({ description: 'The id of what was found (an alias is answered with the id it names).' }),
    org_id: uuid,
    blob_id: uuid.nullable().meta({ description: 'The blob it is or belongs to; null for an organization.' }),
    blob_type: z
      .enum(BLOB_TYPE_NAMES as [string, ...string[]])
      .nullable()
      .meta({ description: "That blob's type; null for an organization." }),
    revision_id: uuid.nullable().meta({ description: 'The revision it is or belongs to, if any.' }),
    session_id: uuid.nullable().meta({ description: 'The session it is or runs in (sessions and executions).' }),
  })
  .meta({ id: 'Found' });

type Found = z.infer<typeof foundSchema>;

/** A readable blob's place; null when the blob does not exist or the caller may not read it. */
async function readableBlob(q: Queryable, principal: Principal, blobRef: string) {
  const found = await loadBlob(q, principal, null, blobRef);
  if (!found || !roleAtLeast(blobStanding(principal, found.org, found.blob), 'read')) return null;
  return found;
}

/**
 * What `ref` names among what the caller may read. A UUID is looked for among organizations,
 * blobs, revisions, sessions, definitions, executions and schedules; anything else is an
 * organization's or a blob's alias (the only aliases that are global). Readable means `read` on
 * the organization, or on the blob the thing belongs to, as reading it through its own path needs.
 */
async function find(q: Queryable, principal: Principal, ref: string): Promise<Found | null> {
  if (isUuid(ref)) {
    const row = await findById(q, ref);
    if (!row) return null;
    if (row.kind === 'organization') {
      const org = await loadOrg(q, principal, row.id);
      if (!org || !roleAtLeast(orgStanding(principal, org), 'read')) return null;
      return { ...row, blob_type: null };
    }
    const place = await readableBlob(q, principal, row.blob_id!);
    return place ? { ...row, blob_type: place.blob.type } : null;
  }
  const org = await loadOrg(q, principal, ref);
  if (org && roleAtLeast(orgStanding(principal, org), 'read')) {
    return {
      kind: 'organization',
      id: org.id,
      org_id: org.id,
      blob_id: null,
      blob_type: null,
      revision_id: null,
      session_id: null,
    };
  }
  const place = await readableBlob(q, principal, ref);
  if (!place) return null;
  return {
    kind: 'blob' satisfies FoundKind,
    id: place.blob.id,
    org_id: place.org.id,
    blob_id: place.blob.id,
    blob_type: place.blob.type,
    revision_id: null,
    session_id: null,
  };
}

/** Find by id: where an id (or an organization's or blob's alias) points (docs/resources.md, "Find by id"). */
export async function findRoutes(app: FastifyInstance): Promise<void> {
  const ctx = app.ctx;
  app.get(
    '/find/:id',
    {
      schema: routeSchema({
        tags: ['Find'],
        summary: 'Find what an id names',
        description:
          'Any id of an organization, blob, revision, session, definition, execution or schedule, or an organization or blob alias → what it is and the organization, blob (with its type), revision and session it belongs to, so a client holding a bare id can address it. Only what the caller may read is found; anything else is 404, as if it did not exist.',
        params,
        responses: { 200: success({ found: foundSchema }, 'What the id names.') },
        errors: ['not_found'],
      }),
    },
    async (request) => {
      const { id } = parseInput(params, request.params, 'path');
      const found = await find(ctx.db, request.principal, id);
      if (!found) throw new ServiceError('not_found', 'Nothing readable has that id.');
      return ok({ found });
    },
  );
}

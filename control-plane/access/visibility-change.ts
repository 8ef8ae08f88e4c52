import type { FastifyRequest } from 'fastify';
import { markAudit } from '../audit/audit-hook.ts';
import { requireHumanBehind } from './perimeter.ts';

/**
 * The perimeter rule of `PATCH /orgs/:id` and `PATCH /blobs/:org_id/:blob_id` (docs/access.md,
 * "The access perimeter"): only a change of `visibility` is governed, and only when the new value
 * differs from the stored one. Other fields, and a `visibility` equal to the stored one, pass.
 * A governed change is audited whether it is allowed or refused. Call it once the target is
 * resolved (so an unreadable one stays 404) and before anything is written.
 */
export function governVisibilityChange(
  request: FastifyRequest,
  target: { type: 'organization' | 'blob'; id: string },
  stored: string,
  requested: string | undefined,
): void {
  if (requested === undefined || requested === stored) return;
  const operation = target.type === 'organization' ? 'org.visibility.change' : 'blob.visibility.change';
  markAudit(request, { operation, target });
  requireHumanBehind(
    request.principal,
    `change the visibility of ${target.type === 'organization' ? 'an organization' : 'a blob'}`,
  );
}

import { ServiceError } from '../../shared/errors.ts';
import { limitInForce } from '../../shared/limits/in-force.ts';
import { limitExceeded } from '../../shared/limits/index.ts';
import { revisionFor } from '../access/standing.ts';
import type { Principal } from '../auth/principal.ts';
import type { BaseContext } from '../base-context.ts';
import { findDefinition } from '../sql/definitions.ts';
import { findSession } from '../workflow/session-ref.ts';

/** A schedule's target as the client names it (ids or aliases for the session and definition). */
export interface TargetRef {
  revision_id: string;
  session_id: string;
  definition_id: string;
}

/** A target checked and resolved to ids. */
export interface ResolvedTarget {
  revisionId: string;
  sessionId: string;
  definitionId: string;
  /** The target revision's blob: its limits apply to the fires (rule 5). */
  blobId: string;
}

function badTarget(field: string, message: string): ServiceError {
  return new ServiceError('invalid_request_body', `Invalid params: target.${field}: ${message}`);
}

/**
 * Checks a schedule's target for `principal`: a workflow revision the caller can write (403
 * `forbidden` otherwise — a revision the caller cannot see gets the same answer, so an id
 * reveals nothing), an active session of that revision, and a definition of that revision
 * (400 naming the field otherwise).
 */
export async function resolveTarget(
  ctx: BaseContext,
  principal: Principal,
  target: TargetRef,
): Promise<ResolvedTarget> {
  let scope;
  try {
    scope = await revisionFor(ctx.db, principal, target.revision_id, 'write');
  } catch (error) {
    if (error instanceof ServiceError && (error.code === 'not_found' || error.code === 'forbidden')) {
      throw new ServiceError('forbidden', 'target.revision_id: the schedule must target a revision you can write.');
    }
    throw error;
  }
  if (scope.blob.type !== 'svc.compute.workflow')
    throw badTarget('revision_id', `a schedule targets a workflow revision, not a ${scope.blob.type} one`);
  let session;
  try {
    session = await findSession(ctx.db, scope.revision.id, target.session_id);
  } catch {
    throw badTarget('session_id', 'no such session in the target revision');
  }
  if (session.status !== 'active') throw badTarget('session_id', 'the session is being deleted');
  const definition = await findDefinition(ctx.db, scope.revision.id, target.definition_id);
  if (definition === undefined) throw badTarget('definition_id', 'no such definition in the target revision');
  return { revisionId: scope.revision.id, sessionId: session.id, definitionId: definition.id, blobId: scope.blob.id };
}

/**
 * The input as stored (JSON text, null when left out), refused like `create_execution` would
 * refuse it now: past `workflow.execution_input_bytes` of the target's blob. A fire checks it
 * again with the value in force then.
 */
export async function checkedInput(ctx: BaseContext, target: ResolvedTarget, input: unknown): Promise<string | null> {
  if (input === undefined || input === null) return null;
  const json = JSON.stringify(input);
  const inForce = await limitInForce(ctx.db, { blobId: target.blobId }, 'workflow.execution_input_bytes');
  if (typeof inForce.value === 'number' && Buffer.byteLength(json, 'utf8') > inForce.value)
    throw limitExceeded(inForce);
  return json;
}

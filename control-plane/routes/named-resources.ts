/**
 * What the routes of organizations and blobs share: both are named resources, with an alias, a
 * display name and a visibility (docs/resources.md, "Common rules"), created under a lock and a
 * limit check and changed under the same role rule.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { Tx } from '../../shared/db/db.ts';
import type { AppContext } from '../context.ts';
import { sendCreated } from '../idempotency/idempotent.ts';
import { ok } from '../reply.ts';
import type { Visibility } from '../sql/orgs.ts';
import { claimingAlias } from '../sql/unique.ts';

/** A display name, and the two visibilities. */
export const nameSchema = z.string().max(200);
export const visibilitySchema = z.enum(['private', 'public']);

/** The named fields of a create's body: the alias, and the name and visibility when given. */
interface NamedBody {
  alias: string;
  name?: string | undefined;
  visibility?: Visibility | undefined;
}

/** What a named resource is inserted with: the name is '' and the visibility private unless given. */
interface NamedFields {
  alias: string;
  name: string;
  visibility: Visibility;
}

/** The steps of one kind's create, run in order in the creating transaction. */
export interface NamedCreate<Admitted, Row> {
  /** The kind in `alias_taken`'s message ("organization", "blob"). */
  what: string;
  /** Locks what the new row counts against and checks the caller's access and the limits (refusals throw). */
  admit(tx: Tx): Promise<Admitted>;
  /** Inserts the row; a unique violation on its alias is 409 `alias_taken`. */
  insert(tx: Tx, fields: NamedFields, admitted: Admitted): Promise<Row>;
  /** The 201 answer's data (what else the create makes with the row is made here, in the same transaction). */
  answer(tx: Tx, row: Row): Promise<Record<string, unknown>>;
}

/**
 * Answers the create of a named resource with 201, once per idempotency key (sendCreated): `input`
 * is what a retry must repeat to be the same request, its `body` the parsed body.
 */
export async function sendNamedCreate<Admitted, Row>(
  ctx: AppContext,
  request: FastifyRequest,
  reply: FastifyReply,
  input: { body: NamedBody; [param: string]: unknown },
  steps: NamedCreate<Admitted, Row>,
): Promise<FastifyReply> {
  const { body } = input;
  return sendCreated(ctx, request, reply, input, async (tx) => {
    const admitted = await steps.admit(tx);
    const fields = { alias: body.alias, name: body.name ?? '', visibility: body.visibility ?? 'private' };
    const row = await claimingAlias(steps.what, () => steps.insert(tx, fields, admitted));
    return { status: 201, body: ok(await steps.answer(tx, row)) };
  });
}

/**
 * The role a change of a named resource needs: `admin` when it changes the alias or the
 * visibility, `write` otherwise. A field set to its stored value is not a change
 * (docs/access.md, "The access perimeter").
 */
export function roleToChange(
  stored: { alias: string; visibility: Visibility },
  change: { alias?: string | undefined; visibility?: Visibility | undefined },
): 'admin' | 'write' {
  const aliasChanges = change.alias !== undefined && change.alias !== stored.alias;
  const visibilityChanges = change.visibility !== undefined && change.visibility !== stored.visibility;
  return aliasChanges || visibilityChanges ? 'admin' : 'write';
}

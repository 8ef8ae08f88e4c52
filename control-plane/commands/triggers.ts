import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { createCredentialCipher } from '../../shared/crypto/credential-cipher.ts';
import { ServiceError } from '../../shared/errors.ts';
import { isUuid, refSchema } from '../../shared/ids.ts';
import { newSecret } from '../../shared/webhooks/signature.ts';
import type { Queryable } from '../../shared/db/db.ts';
import type { AppContext } from '../context.ts';
import { findDefinition } from '../sql/definitions.ts';
import {
  countTriggers,
  deleteTrigger,
  findTrigger,
  insertTrigger,
  setTriggerSecret,
  triggerListing,
  triggerRecord,
  type TriggerRow,
} from '../sql/triggers.ts';
import { findActiveSession, findSession } from '../workflow/session-ref.ts';
import { readRecordPage, recordCursorParams } from '../workflow/record-cursor.ts';
import { defineCommand, WORKFLOW_BLOBS } from './command.ts';
import { triggerSchema } from '../openapi/records.ts';

const triggerResult = z.strictObject({ trigger: triggerSchema });
const withSecret = z.strictObject({
  trigger: triggerSchema,
  secret: z.string().meta({ description: 'The signing secret (`whsec_…`), shown in this answer only.' }),
});

/** The revision's trigger `ref` (404 otherwise: triggers have ids only). */
async function triggerOf(q: Queryable, revisionId: string, ref: string, lock = false): Promise<TriggerRow> {
  const row = isUuid(ref) ? await findTrigger(q, revisionId, ref, lock) : undefined;
  if (row === undefined) throw new ServiceError('not_found', 'No such trigger.');
  return row;
}

function cipherOf(ctx: AppContext) {
  return createCredentialCipher(ctx.config.secrets.CREDENTIAL_KEY);
}

/**
 * `create_trigger {session_id, definition_id}` → `trigger` and its `secret` (shown once). Who may
 * create a trigger is who may create an execution there: `write` on the revision, an active
 * session and a definition of this revision. A session holds at most TRIGGERS_PER_SESSION
 * triggers (409 `conflict` past it; counted under the session's row lock). The secret is sealed
 * before it is stored; requests to the trigger act as its creator until another writer rotates it.
 */
const createTrigger = defineCommand({
  name: 'create_trigger',
  result: withSecret,
  blobTypes: WORKFLOW_BLOBS,
  role: 'write',
  creates: true,
  params: z.strictObject({ session_id: refSchema, definition_id: refSchema }),
  async handler(ctx, principal, params, call) {
    const { org, blob, revision } = call.revision;
    const id = randomUUID();
    const secret = newSecret();
    const sealed = cipherOf(ctx).encrypt(secret, id);
    const row = await ctx.db.transaction(async (tx) => {
      const session = await findActiveSession(tx, revision.id, params.session_id, true);
      const definition = await findDefinition(tx, revision.id, params.definition_id);
      if (definition === undefined) throw new ServiceError('not_found', 'No such definition.');
      const bound = ctx.config.hooks.triggersPerSession;
      if (bound > 0 && (await countTriggers(tx, session.id)) >= bound)
        throw new ServiceError(
          'conflict',
          `The session holds ${bound} triggers, the most the service keeps in one session (TRIGGERS_PER_SESSION); delete one first.`,
        );
      return insertTrigger(tx, {
        id,
        revisionId: revision.id,
        sessionId: session.id,
        definitionId: definition.id,
        blobId: blob.id,
        orgId: org.id,
        sealed,
        createdBy: principal.userId,
      });
    });
    return { trigger: triggerRecord(row), secret };
  },
});

/** `get_trigger {trigger_id}` → `trigger` (never its secret). */
const getTrigger = defineCommand({
  name: 'get_trigger',
  result: triggerResult,
  blobTypes: WORKFLOW_BLOBS,
  role: 'write',
  params: z.strictObject({ trigger_id: refSchema }),
  async handler(ctx, _principal, params, call) {
    return { trigger: triggerRecord(await triggerOf(ctx.db, call.revision.revision.id, params.trigger_id)) };
  },
});

/** `list_triggers {session_id, start_session_id?}` → `triggers, last_session_id` (record cursor, 10, newest first). */
const listTriggers = defineCommand({
  name: 'list_triggers',
  result: z.strictObject({ triggers: z.array(triggerSchema), last_session_id: z.uuid().nullable() }),
  blobTypes: WORKFLOW_BLOBS,
  role: 'write',
  params: z.strictObject({ session_id: refSchema, ...recordCursorParams }),
  async handler(ctx, _principal, params, call) {
    const session = await findSession(ctx.db, call.revision.revision.id, params.session_id);
    const page = await readRecordPage(triggerListing(ctx.db, session.id), params.start_session_id);
    return { triggers: page.rows.map(triggerRecord), last_session_id: page.last_session_id };
  },
});

/**
 * `rotate_trigger_secret {trigger_id}` → `trigger` and its new `secret` (shown once). The old
 * secret stops verifying at once. Checked as a creation: the caller needs `write`, and the
 * trigger's requests act as the caller from now on.
 */
const rotateTriggerSecret = defineCommand({
  name: 'rotate_trigger_secret',
  result: withSecret,
  blobTypes: WORKFLOW_BLOBS,
  role: 'write',
  params: z.strictObject({ trigger_id: refSchema }),
  async handler(ctx, principal, params, call) {
    const secret = newSecret();
    const row = await ctx.db.transaction(async (tx) => {
      const found = await triggerOf(tx, call.revision.revision.id, params.trigger_id, true);
      return setTriggerSecret(tx, found.id, cipherOf(ctx).encrypt(secret, found.id), principal.userId);
    });
    return { trigger: triggerRecord(row), secret };
  },
});

/** `delete_trigger {trigger_id}` → `trigger` (as it was); its URL answers 404 from now on. */
const deleteTriggerCommand = defineCommand({
  name: 'delete_trigger',
  result: triggerResult,
  blobTypes: WORKFLOW_BLOBS,
  role: 'write',
  params: z.strictObject({ trigger_id: refSchema }),
  async handler(ctx, _principal, params, call) {
    const row = await ctx.db.transaction(async (tx) => {
      const found = await triggerOf(tx, call.revision.revision.id, params.trigger_id, true);
      return (await deleteTrigger(tx, found.id)) ?? found;
    });
    return { trigger: triggerRecord(row) };
  },
});

/** The trigger commands, in the order the docs list them. */
export const triggerCommands = [
  createTrigger,
  getTrigger,
  listTriggers,
  rotateTriggerSecret,
  deleteTriggerCommand,
] as const;

import { z } from 'zod';
import { aliasSchema, refSchema } from '../../shared/ids.ts';
import { appendSessionEvent } from '../../shared/events/store.ts';
import { heldBy, takeSlot } from '../../shared/limits/holdings.ts';
import { limitInForce } from '../../shared/limits/in-force.ts';
import { insertSession, markDeleting, removeDeletingHolder, sessionListing } from '../sql/sessions.ts';
import { claimingAlias } from '../sql/unique.ts';
import { readRecordPage, recordCursorParams } from '../workflow/record-cursor.ts';
import { findSession, sessionRecord } from '../workflow/session-ref.ts';
import { defineCommand, WORKFLOW_BLOBS } from './command.ts';
import { sessionSchema } from '../openapi/records.ts';

const sessionResult = z.strictObject({ session: sessionSchema });

/**
 * `create_session {alias?}` → `session`. Takes a slot of `workflow.sessions_per_revision` (the
 * revision's blob sets the value) in the same transaction as the insert, and records
 * `session.created` there too. An alias still held by a session being deleted is released by
 * finishing that removal now, so a deleted name is free at once, like its slot.
 */
const createSession = defineCommand({
  name: 'create_session',
  result: sessionResult,
  blobTypes: WORKFLOW_BLOBS,
  role: 'write',
  creates: true,
  params: z.strictObject({ alias: aliasSchema.optional() }),
  async handler(ctx, _principal, params, call) {
    const { blob, revision } = call.revision;
    const session = await ctx.db.transaction(async (tx) => {
      const inForce = await limitInForce(tx, { blobId: blob.id }, 'workflow.sessions_per_revision');
      await takeSlot(tx, 'workflow.sessions_per_revision', revision.id, inForce);
      const alias = params.alias ?? null;
      if (alias !== null) await removeDeletingHolder(tx, revision.id, alias);
      const row = await claimingAlias('session of this revision', () => insertSession(tx, revision.id, alias));
      await appendSessionEvent(tx, { sessionId: row.id, kind: 'session.created', attributes: { alias } });
      return row;
    });
    return { session: sessionRecord(session) };
  },
});

/**
 * `get_session {session_id}` → `session` with `held`: the counts of the quotas the session holds
 * (`workflow.executions_per_session`, `workflow.session_objects_per_session`). A session being
 * deleted is still shown, as `deleting`, until its rows are gone.
 */
const getSession = defineCommand({
  name: 'get_session',
  result: sessionResult,
  blobTypes: WORKFLOW_BLOBS,
  role: 'read',
  params: z.strictObject({ session_id: refSchema }),
  async handler(ctx, _principal, params, call) {
    const session = await findSession(ctx.db, call.revision.revision.id, params.session_id);
    return { session: { ...sessionRecord(session), held: await heldBy(ctx.db, 'session', session.id) } };
  },
});

/**
 * `delete_session {session_id}` → `session` (`deleting`). The status change frees the quota slot
 * and is recorded (`session.deleting`) in one transaction; the rows go in the background right
 * after. Deleting a session already `deleting` answers the same and schedules its removal again.
 */
const deleteSession = defineCommand({
  name: 'delete_session',
  result: sessionResult,
  blobTypes: WORKFLOW_BLOBS,
  role: 'write',
  params: z.strictObject({ session_id: refSchema }),
  async handler(ctx, _principal, params, call) {
    const session = await ctx.db.transaction(async (tx) => {
      const found = await findSession(tx, call.revision.revision.id, params.session_id);
      const row = await markDeleting(tx, found.id);
      // Not active any more: an earlier (or concurrent) delete already did the rest.
      if (row === undefined) return { ...found, status: 'deleting' as const };
      await appendSessionEvent(tx, { sessionId: row.id, kind: 'session.deleting' });
      return row;
    });
    ctx.sessionRemoval.schedule(session.id);
    return { session: sessionRecord(session) };
  },
});

/**
 * `list_sessions {start_session_id?}` → `sessions, last_session_id`: the record cursor, ten per
 * page, newest first, sessions being deleted included until removed.
 */
const listSessions = defineCommand({
  name: 'list_sessions',
  result: z.strictObject({ sessions: z.array(sessionSchema), last_session_id: z.uuid().nullable() }),
  blobTypes: WORKFLOW_BLOBS,
  role: 'read',
  params: z.strictObject({ ...recordCursorParams }),
  async handler(ctx, _principal, params, call) {
    const page = await readRecordPage(sessionListing(ctx.db, call.revision.revision.id), params.start_session_id);
    return { sessions: page.rows.map(sessionRecord), last_session_id: page.last_session_id };
  },
});

/** The session commands, in the order the docs list them. */
export const sessionCommands = [createSession, getSession, deleteSession, listSessions] as const;

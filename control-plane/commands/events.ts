import { z } from 'zod';
import { refSchema } from '../../shared/ids.ts';
import { eventPageParams, listEvents } from '../events/list.ts';
import { findRevisionExecution } from '../sql/sessions.ts';
import { findSession } from '../workflow/session-ref.ts';
import { defineCommand, WORKFLOW_BLOBS } from './command.ts';
import { eventSchema } from '../openapi/records.ts';

const eventPage = z.strictObject({ events: z.array(eventSchema), cursor: z.string().nullable() });

/**
 * `list_session_events {session_id, cursor?, limit?}` → `events, cursor`: what happened in the
 * session, oldest first (opaque cursor bound to the session; `limit` 1..200, default 50). A
 * session being deleted is still listed until its rows are gone.
 */
const listSessionEvents = defineCommand({
  name: 'list_session_events',
  result: eventPage,
  blobTypes: WORKFLOW_BLOBS,
  role: 'read',
  params: z.strictObject({ session_id: refSchema, ...eventPageParams }),
  async handler(ctx, _principal, params, call) {
    const session = await findSession(ctx.db, call.revision.revision.id, params.session_id);
    return { ...(await listEvents(ctx, ctx.db, 'session', session.id, params)) };
  },
});

/**
 * `list_execution_events {execution_id, cursor?, limit?}` → `events, cursor`: one execution's
 * run, oldest first. The execution must belong to a session of the revision named, else 404.
 */
const listExecutionEvents = defineCommand({
  name: 'list_execution_events',
  result: eventPage,
  blobTypes: WORKFLOW_BLOBS,
  role: 'read',
  params: z.strictObject({ execution_id: refSchema, ...eventPageParams }),
  async handler(ctx, _principal, params, call) {
    const execution = await findRevisionExecution(ctx.db, call.revision.revision.id, params.execution_id);
    return { ...(await listEvents(ctx, ctx.db, 'execution', execution.id, params)) };
  },
});

/** The event listings. */
export const eventCommands = [listSessionEvents, listExecutionEvents] as const;

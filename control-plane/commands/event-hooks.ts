import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { createCredentialCipher } from '../../shared/crypto/credential-cipher.ts';
import { ServiceError } from '../../shared/errors.ts';
import { isUuid, refSchema } from '../../shared/ids.ts';
import { newSecret } from '../../shared/webhooks/signature.ts';
import type { Queryable } from '../../shared/db/db.ts';
import {
  countEventHooks,
  deleteEventHook,
  eventHookListing,
  eventHookRecord,
  findEventHook,
  hookAttemptListing,
  hookAttemptRecord,
  insertEventHook,
  type EventHookRow,
} from '../sql/event-hooks.ts';
import { findActiveSession, findSession } from '../workflow/session-ref.ts';
import { readRecordPage, recordCursorParams } from '../workflow/record-cursor.ts';
import { defineCommand, WORKFLOW_BLOBS } from './command.ts';
import { eventHookSchema, HOOK_EVENTS, hookAttemptSchema } from '../openapi/records.ts';

const hookResult = z.strictObject({ event_hook: eventHookSchema });

/**
 * Where deliveries may go, as far as the URL alone says: http or https, no credentials in it (they
 * would be stored and listed in clear), no fragment. The address it names is checked by the
 * egress policy at every attempt, on the address actually connected to (docs/webhooks.md).
 */
const hookUrl = z
  .string()
  .max(2048)
  .refine((raw) => {
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      return false;
    }
    return (
      (url.protocol === 'https:' || url.protocol === 'http:') &&
      url.username === '' &&
      url.password === '' &&
      url.hash === ''
    );
  }, 'url must be an http:// or https:// URL without credentials or fragment');

/** The revision's event hook `ref` (404 otherwise: hooks have ids only). */
async function hookOf(q: Queryable, revisionId: string, ref: string, lock = false): Promise<EventHookRow> {
  const row = isUuid(ref) ? await findEventHook(q, revisionId, ref, lock) : undefined;
  if (row === undefined) throw new ServiceError('not_found', 'No such event hook.');
  return row;
}

/**
 * `create_event_hook {session_id, url, events}` → `event_hook` and its `secret` (shown once).
 * Who may create one is who may create an execution there: `write` on the revision and an active
 * session of it. Every end of one of the session's executions listed in `events` is then posted
 * to `url`, signed with the secret (docs/webhooks.md, "Event hooks"). A session holds at most
 * EVENT_HOOKS_PER_SESSION hooks (409 `conflict` past it).
 */
const createEventHook = defineCommand({
  name: 'create_event_hook',
  result: z.strictObject({
    event_hook: eventHookSchema,
    secret: z.string().meta({ description: 'The signing secret (`whsec_…`), shown in this answer only.' }),
  }),
  blobTypes: WORKFLOW_BLOBS,
  role: 'write',
  creates: true,
  params: z.strictObject({
    session_id: refSchema,
    url: hookUrl,
    events: z
      .array(z.enum(HOOK_EVENTS))
      .min(1)
      .max(HOOK_EVENTS.length)
      .refine((events) => new Set(events).size === events.length, 'events must not repeat'),
  }),
  async handler(ctx, principal, params, call) {
    const { org, revision } = call.revision;
    const id = randomUUID();
    const secret = newSecret();
    const sealed = createCredentialCipher(ctx.config.secrets.CREDENTIAL_KEY).encrypt(secret, id);
    const row = await ctx.db.transaction(async (tx) => {
      const session = await findActiveSession(tx, revision.id, params.session_id, true);
      const bound = ctx.config.hooks.eventHooksPerSession;
      if (bound > 0 && (await countEventHooks(tx, session.id)) >= bound)
        throw new ServiceError(
          'conflict',
          `The session holds ${bound} event hooks, the most the service keeps in one session (EVENT_HOOKS_PER_SESSION); delete one first.`,
        );
      return insertEventHook(tx, {
        id,
        revisionId: revision.id,
        sessionId: session.id,
        orgId: org.id,
        url: params.url,
        events: params.events,
        sealed,
        createdBy: principal.userId,
      });
    });
    return { event_hook: eventHookRecord(row), secret };
  },
});

/** `get_event_hook {hook_id}` → `event_hook` (never its secret). */
const getEventHook = defineCommand({
  name: 'get_event_hook',
  result: hookResult,
  blobTypes: WORKFLOW_BLOBS,
  role: 'write',
  params: z.strictObject({ hook_id: refSchema }),
  async handler(ctx, _principal, params, call) {
    return { event_hook: eventHookRecord(await hookOf(ctx.db, call.revision.revision.id, params.hook_id)) };
  },
});

/** `list_event_hooks {session_id, start_session_id?}` → `event_hooks, last_session_id` (record cursor). */
const listEventHooks = defineCommand({
  name: 'list_event_hooks',
  result: z.strictObject({ event_hooks: z.array(eventHookSchema), last_session_id: z.uuid().nullable() }),
  blobTypes: WORKFLOW_BLOBS,
  role: 'write',
  params: z.strictObject({ session_id: refSchema, ...recordCursorParams }),
  async handler(ctx, _principal, params, call) {
    const session = await findSession(ctx.db, call.revision.revision.id, params.session_id);
    const page = await readRecordPage(eventHookListing(ctx.db, session.id), params.start_session_id);
    return { event_hooks: page.rows.map(eventHookRecord), last_session_id: page.last_session_id };
  },
});

/** `delete_event_hook {hook_id}` → `event_hook` (as it was); its pending deliveries are dropped. */
const deleteEventHookCommand = defineCommand({
  name: 'delete_event_hook',
  result: hookResult,
  blobTypes: WORKFLOW_BLOBS,
  role: 'write',
  params: z.strictObject({ hook_id: refSchema }),
  async handler(ctx, _principal, params, call) {
    const row = await ctx.db.transaction(async (tx) => {
      const found = await hookOf(tx, call.revision.revision.id, params.hook_id, true);
      return (await deleteEventHook(tx, found.id)) ?? found;
    });
    return { event_hook: eventHookRecord(row) };
  },
});

/**
 * `list_event_hook_attempts {hook_id, start_session_id?}` → `attempts, last_session_id`: every
 * attempt to deliver to the hook, newest first (record cursor, 10 a page), with its outcome,
 * the receiver's HTTP status or the error that stopped it, and its duration.
 */
const listEventHookAttempts = defineCommand({
  name: 'list_event_hook_attempts',
  result: z.strictObject({ attempts: z.array(hookAttemptSchema), last_session_id: z.uuid().nullable() }),
  blobTypes: WORKFLOW_BLOBS,
  role: 'write',
  params: z.strictObject({ hook_id: refSchema, ...recordCursorParams }),
  async handler(ctx, _principal, params, call) {
    const hook = await hookOf(ctx.db, call.revision.revision.id, params.hook_id);
    const page = await readRecordPage(hookAttemptListing(ctx.db, hook.id), params.start_session_id);
    return { attempts: page.rows.map(hookAttemptRecord), last_session_id: page.last_session_id };
  },
});

/** The event hook commands, in the order the docs list them. */
export const eventHookCommands = [
  createEventHook,
  getEventHook,
  listEventHooks,
  deleteEventHookCommand,
  listEventHookAttempts,
] as const;

import { z } from 'zod';
import { ServiceError } from '../../shared/errors.ts';
import { refSchema } from '../../shared/ids.ts';
import type { EventStream } from '../../shared/events/store.ts';
import { findRevisionExecution } from '../sql/sessions.ts';
import { findSession } from '../workflow/session-ref.ts';
import { defineCommand, type CommandConnection, WORKFLOW_BLOBS } from './command.ts';

const subscribeParams = z
  .strictObject({ session_id: refSchema.optional(), execution_id: refSchema.optional() })
  .refine((p) => (p.session_id === undefined) !== (p.execution_id === undefined), {
    message: 'name exactly one of session_id and execution_id',
  });

/** Pushes go to the socket the call came on; REST has none to push to. */
function socketOf(connection: CommandConnection | null, command: string): CommandConnection {
  if (connection === null) {
    throw new ServiceError(
      'invalid_request_body',
      `${command} needs a WebSocket: call it as a JSON-RPC method on /v1.`,
    );
  }
  return connection;
}

/**
 * `subscribe {session_id} | {execution_id}` → `subscription` (beyond the specification). From
 * then on each new event of that session or execution arrives on the socket as the notification
 * `{"jsonrpc":"2.0","method":"event","params":{"subscription","event"}}`, in id order. Access is
 * checked here, once, like a read of the listing: the session or execution must belong to the
 * readable revision named, else 404. A socket holds at most 100 subscriptions (409 `conflict`
 * past it); they end when it closes.
 */
const subscribe = defineCommand({
  name: 'subscribe',
  result: z.strictObject({
    subscription: z
      .string()
      .meta({ description: 'The subscription id; events arrive as `event` notifications carrying it.' }),
  }),
  blobTypes: WORKFLOW_BLOBS,
  role: 'read',
  params: subscribeParams,
  async handler(ctx, _principal, params, call) {
    const connection = socketOf(call.connection, 'subscribe');
    const revisionId = call.revision.revision.id;
    let stream: EventStream;
    let ownerId: string;
    if (params.session_id !== undefined) {
      stream = 'session';
      ownerId = (await findSession(ctx.db, revisionId, params.session_id)).id;
    } else {
      stream = 'execution';
      ownerId = (await findRevisionExecution(ctx.db, revisionId, params.execution_id!)).id;
    }
    return { subscription: await ctx.events.subscribe({ connection, stream, ownerId, revisionId }) };
  },
});

/**
 * `unsubscribe {subscription}` → `subscription`: ends a subscription this socket made on this
 * revision (404 for any other). No event of it is pushed after the answer.
 */
const unsubscribe = defineCommand({
  name: 'unsubscribe',
  result: z.strictObject({ subscription: z.string() }),
  blobTypes: WORKFLOW_BLOBS,
  role: 'read',
  params: z.strictObject({ subscription: z.string().min(1).max(100) }),
  async handler(ctx, _principal, params, call) {
    const connection = socketOf(call.connection, 'unsubscribe');
    if (!ctx.events.unsubscribe(connection.id, params.subscription, call.revision.revision.id)) {
      throw new ServiceError('not_found', 'No such subscription on this socket.');
    }
    return { subscription: params.subscription };
  },
});

/** Live updates over the WebSocket. */
export const subscriptionCommands = [subscribe, unsubscribe] as const;

import { z } from 'zod';
import { ServiceError } from '../../shared/errors.ts';
import { refSchema } from '../../shared/ids.ts';
import { findUser, userProfile } from '../sql/users.ts';
import { defineCommand } from './command.ts';
import { userSchema } from '../openapi/records.ts';

/**
 * `get_user {user_id}` → `{user}`: the JSON-RPC twin of `GET /v1/users/:user_id`. `me` is the
 * caller, resolved before anything else (docs/auth.md, "User profiles"); the caller sees its
 * own full profile and another user's public fields.
 */
const getUser = defineCommand({
  name: 'get_user',
  result: z.strictObject({ user: userSchema }),
  params: z.strictObject({ user_id: refSchema }),
  async handler(ctx, principal, params) {
    const user = await findUser(ctx.db, params.user_id === 'me' ? principal.userId : params.user_id);
    if (!user) throw new ServiceError('not_found', 'No such user.');
    return { user: userProfile(user, user.id === principal.userId) };
  },
});

/** The account commands, in the order the docs list them. */
export const userCommands = [getUser] as const;

import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { refSchema } from '../../shared/ids.ts';
import { parseInput } from '../../shared/validate.ts';
import { COMMAND_MESSAGE_LIMIT, COMMANDS, createCommandRegistry, runRevisionCommand, type CommandRegistry } from '../commands/registry.ts';
import { ok } from '../reply.ts';

const pathParams = z.strictObject({ revision_id: refSchema, command: z.string().min(1).max(200) });

export interface CommandRoutesOptions {
  /** The registry the WebSocket endpoint uses too, so both transports answer alike. */
  commands?: CommandRegistry;
}

/**
 * `POST /v1/revisions/:revision_id/:command` with the params as the JSON body (contract §8): the
 * REST transport of the revision commands. Only commands a revision answers are reachable here;
 * `get_user` and the like are JSON-RPC methods with REST routes of their own.
 */
export async function commandRoutes(app: FastifyInstance, options: CommandRoutesOptions): Promise<void> {
  const ctx = app.ctx;
  const registry = options.commands ?? createCommandRegistry(COMMANDS);

  app.post('/revisions/:revision_id/:command', { bodyLimit: COMMAND_MESSAGE_LIMIT }, async (request) => {
    const { revision_id, command } = parseInput(pathParams, request.params, 'path');
    // A body-less POST is a command without params; anything else must be an object (the registry checks).
    const result = await runRevisionCommand(registry, ctx, request.principal, revision_id, command, request.body ?? {});
    // `ok` puts `status` first, so a result's own `status` (check_definition's verdict) wins.
    return ok(result);
  });
}

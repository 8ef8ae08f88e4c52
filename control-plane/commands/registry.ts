import { z } from 'zod';
import { ServiceError } from '../../shared/errors.ts';
import { refSchema } from '../../shared/ids.ts';
import { parseInput, zodProblems } from '../../shared/validate.ts';
import { commandKey, runKeyedCommand } from './keyed-command.ts';
import { requireRole, revisionFor } from '../access/standing.ts';
import type { Principal } from '../auth/principal.ts';
import type { AppContext } from '../context.ts';
import type { CommandConnection, CommandDefinition, CommandResult } from './command.ts';
import { userCommands } from './users.ts';
import { sessionCommands } from './sessions.ts';
import { eventCommands } from './events.ts';
import { subscriptionCommands } from './subscriptions.ts';
import { sessionObjectCommands } from './session-objects.ts';
import { threadItemCommands } from './thread-items.ts';
import { definitionCommands } from './definitions.ts';
import { sessionGraphCommands } from './session-graph.ts';
import { executionCommands } from './executions.ts';
import { scheduleCommands } from './schedules.ts';
import { triggerCommands } from './triggers.ts';
import { eventHookCommands } from './event-hooks.ts';
import { graphBlobCommands } from './graph-blobs.ts';
import { nlpCommands } from './nlp-records.ts';
import { PreparedParams } from '../bodies/prepared.ts';
import { modelCommands } from './models.ts';

/**
 * A command request (REST body or WebSocket message) may be this large, so that each command's
 * own ceilings answer with their own codes (`session_object_too_large` for a 5 MiB + 1 object)
 * rather than 413 (docs/commands.md, "REST").
 */
export const COMMAND_MESSAGE_LIMIT = 8 * 1024 * 1024;

/** Every command the service answers, on both transports. */
export const COMMANDS: readonly CommandDefinition[] = [
  ...userCommands,
  ...sessionCommands,
  ...eventCommands,
  ...subscriptionCommands,
  ...sessionObjectCommands,
  ...threadItemCommands,
  ...definitionCommands,
  ...sessionGraphCommands,
  ...executionCommands,
  ...scheduleCommands,
  ...triggerCommands,
  ...eventHookCommands,
  ...graphBlobCommands,
  ...nlpCommands,
  ...modelCommands,
];

/**
 * Commands by name. Immutable once built; one per app, shared by the REST and JSON-RPC transports.
 * One name may be answered by several blob types with a definition each (`list_executions` of a
 * workflow revision lists a session's executions, of a scheduler revision a schedule's runs).
 */
export interface CommandRegistry {
  /** The command `name` as a revision of `blobType` answers it; without a type, the first defined. */
  get(name: string, blobType?: string): CommandDefinition | undefined;
  readonly names: readonly string[];
}

export interface RegistryOptions {
  /**
   * Tests: every result of a command that declares its `result` schema is checked against it as it
   * would go over the wire; a mismatch fails the call with `internal_error` naming the command and
   * field (BuildAppOptions.checkResponses).
   */
  checkResults?: boolean;
}

/** The definition with its handler's results held to its `result` schema (RegistryOptions.checkResults). */
function checkingResults(definition: CommandDefinition): CommandDefinition {
  const result = definition.result;
  if (result === undefined) return definition;
  const handler = definition.handler.bind(definition) as (...args: unknown[]) => Promise<Record<string, unknown>>;
  return {
    ...definition,
    async handler(...args: unknown[]) {
      const value = await handler(...args);
      const checked = result.safeParse(JSON.parse(JSON.stringify(value)));
      if (!checked.success) {
        const problems = zodProblems(checked.error, 'result');
        process.stderr.write(`result check: ${definition.name}: ${problems}\n`);
        throw new ServiceError(
          'internal_error',
          `The result of ${definition.name} does not match its documented result: ${problems}`,
        );
      }
      return value;
    },
  } as CommandDefinition;
}

/**
 * Builds a registry; a name declared twice for the same blob type (or twice without one) is a
 * programming error and throws at startup.
 */
export function createCommandRegistry(
  given: readonly CommandDefinition[],
  options: RegistryOptions = {},
): CommandRegistry {
  const definitions = options.checkResults ? given.map(checkingResults) : given;
  const byName = new Map<string, CommandDefinition[]>();
  for (const definition of definitions) {
    const same = byName.get(definition.name) ?? [];
    const clash = same.some(
      (other) =>
        other.blobTypes === undefined ||
        definition.blobTypes === undefined ||
        other.blobTypes.some((type) => definition.blobTypes!.includes(type)),
    );
    if (clash) throw new Error(`command ${definition.name} is defined twice`);
    byName.set(definition.name, [...same, definition]);
  }
  return {
    get(name, blobType) {
      const all = byName.get(name);
      if (all === undefined) return undefined;
      if (blobType === undefined) return all[0];
      return all.find((d) => d.blobTypes !== undefined && d.blobTypes.some((type) => type === blobType));
    },
    names: [...byName.keys()],
  };
}

export interface RunOptions {
  /** The WebSocket connection the call arrived on; absent over REST. */
  connection?: CommandConnection | null;
  /** REST: the `Idempotency-Key` header as received, for a creating command (`creates`). */
  idempotencyKey?: string | string[] | undefined;
  /** REST: told when a creating command's answer is a stored one given back to a retry. */
  onReplayed?: () => void;
}

// A method name is echoed in messages; an 8 MiB one must not come back whole.
function shown(name: string): string {
  return JSON.stringify(name.length > 100 ? `${name.slice(0, 100)}…` : name);
}

/** Named params only: JSON-RPC's positional (array) form has no names to validate against. */
function paramsObject(params: unknown): Record<string, unknown> {
  if (params === undefined) return {};
  if (typeof params !== 'object' || params === null || Array.isArray(params)) {
    throw new ServiceError('invalid_request_body', 'Invalid params: params must be an object of named parameters.');
  }
  return params as Record<string, unknown>;
}

const revisionIdSchema = z.strictObject({ revision_id: refSchema });

/**
 * Runs a command called by name, as JSON-RPC does: a command that names no revision runs on its
 * params; any other name is answered about the revision its `revision_id` names, exactly as
 * `POST /v1/revisions/:revision_id/:command` would answer it (see runRevisionCommand).
 */
export async function runCommand(
  registry: CommandRegistry,
  ctx: AppContext,
  principal: Principal,
  name: string,
  params: unknown,
  options: RunOptions = {},
): Promise<CommandResult> {
  const input = paramsObject(params);
  const command = registry.get(name);
  if (command !== undefined && command.blobTypes === undefined) {
    return command.handler(ctx, principal, parseInput(command.params, input, 'params'), {
      connection: options.connection ?? null,
    });
  }
  if (!Object.hasOwn(input, 'revision_id')) {
    if (command === undefined) throw new ServiceError('unknown_command', `No command ${shown(name)}.`);
    throw new ServiceError(
      'invalid_request_body',
      'Invalid params: revision_id: this command needs the revision it runs on.',
    );
  }
  const { revision_id, ...rest } = input;
  const { revision_id: revisionId } = parseInput(revisionIdSchema, { revision_id }, 'params');
  return runRevisionCommand(registry, ctx, principal, revisionId, name, rest, { ...options, keyInParams: true });
}

/**
 * Runs a command on a revision; REST's only entry and JSON-RPC's for revision commands, so both
 * answer the same input with the same error. Order: the revision must be readable (404
 * `not_found`, existence never leaks), then its blob type must answer the command (404
 * `unknown_command`), then the caller needs the command's role (403 `forbidden`), then the
 * params must pass the schema (400 `invalid_request_body`).
 */
export async function runRevisionCommand(
  registry: CommandRegistry,
  ctx: AppContext,
  principal: Principal,
  revisionId: string,
  name: string,
  params: unknown,
  options: RunOptions & { keyInParams?: boolean } = {},
): Promise<CommandResult> {
  const scope = await revisionFor(ctx.db, principal, revisionId, 'read');
  const command = registry.get(name, scope.blob.type);
  if (
    command === undefined ||
    command.blobTypes === undefined ||
    !command.blobTypes.some((type) => type === scope.blob.type)
  ) {
    throw new ServiceError('unknown_command', `A ${scope.blob.type} revision has no command ${shown(name)}.`);
  }
  requireRole(scope.role, command.role, 'revision');
  // A creating command's idempotency key is checked with its params (docs/commands.md).
  const { params: input, key } = commandKey(command, paramsObject(params), {
    header: options.idempotencyKey,
    inParams: options.keyInParams,
  });
  // A large body's params were parsed by a body thread (control-plane/bodies/), never with a key.
  const prepared = params instanceof PreparedParams ? params : null;
  if (prepared !== null && key !== undefined) throw new Error('prepared params with an idempotency key');
  const parsed = prepared?.parsedBy(command.params) ?? parseInput(command.params, input, 'params');
  const call = { connection: options.connection ?? null, revision: scope };
  if (key === undefined) return command.handler(ctx, principal, parsed, call);
  const keyed = { key, name: command.name, revisionId: scope.revision.id, params: parsed };
  return runKeyedCommand(
    ctx,
    principal,
    keyed,
    (joined) => command.handler(joined, principal, parsed, call),
    options.onReplayed,
  );
}

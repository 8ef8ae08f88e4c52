import type { z } from 'zod';
import type { BlobType } from '../../shared/blob-types.ts';
import type { Role } from '../../shared/roles.ts';
import type { BlobRow } from '../sql/blobs.ts';
import type { OrgRow } from '../sql/orgs.ts';
import type { RevisionRow } from '../sql/revisions.ts';
import type { Principal } from '../auth/principal.ts';
import type { AppContext } from '../context.ts';
import type { CommandConnection } from '../events/connection.ts';

export type { CommandConnection };

/** The revision a revision-scoped command runs against, resolved and access-checked. */
export interface RevisionScope {
  org: OrgRow;
  blob: BlobRow;
  revision: RevisionRow;
  /** The caller's standing on the revision's blob (already at least the command's `role`). */
  role: Role;
}

/** What a handler learns about the call beyond its params. */
interface CommandCall {
  /** Null over REST. */
  connection: CommandConnection | null;
}

/** A command's result: the response fields without `status` (REST adds it, JSON-RPC does not). */
export type CommandResult = Record<string, unknown>;

/** A command that names no revision (`get_user`). JSON-RPC only: the REST command route takes a revision. */
export interface PlainCommand<S extends z.ZodType = z.ZodType> {
  readonly name: string;
  /** A strict schema (`z.strictObject`) of the params; failures are `invalid_request_body` / -32602. */
  readonly params: S;
  /** The result's fields, for the API documents (control-plane/openapi/) and the tests' response check; without it the result is documented as an object. */
  readonly result?: z.ZodType;
  readonly blobTypes?: undefined;
  handler(ctx: AppContext, principal: Principal, params: z.output<S>, call: CommandCall): Promise<CommandResult>;
}

/**
 * A command a revision answers. Its params arrive with `revision_id` (the REST path, or a param
 * over JSON-RPC); the registry strips it, resolves the revision and checks access and blob type
 * before the handler runs, so `params` never holds `revision_id`.
 */
export interface RevisionCommand<S extends z.ZodType = z.ZodType> {
  readonly name: string;
  readonly params: S;
  /** The result's fields, for the API documents (control-plane/openapi/) and the tests' response check; without it the result is documented as an object. */
  readonly result?: z.ZodType;
  /** The blob types whose revisions answer the command; any other type answers `unknown_command`. */
  readonly blobTypes: readonly BlobType[];
  /** The standing needed on the revision's blob: `read` for reads, `write` for product writes. */
  readonly role: Role;
  /**
   * The command creates something new at every call (a session, an execution…), so a retry
   * would create it twice: it takes an idempotency key (the `Idempotency-Key` header over REST,
   * the `idempotency_key` param over JSON-RPC; docs/commands.md). The registry then runs the
   * handler in the key's transaction (control-plane/idempotency/). Other commands refuse the
   * param as an unknown one.
   */
  readonly creates?: boolean;
  handler(
    ctx: AppContext,
    principal: Principal,
    params: z.output<S>,
    call: CommandCall & { revision: RevisionScope },
  ): Promise<CommandResult>;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- a registry holds commands of every params type
export type CommandDefinition = PlainCommand<any> | RevisionCommand<any>;

/** `blobTypes` of the commands a workflow revision answers (sessions, events, definitions, executions…). */
export const WORKFLOW_BLOBS = ['svc.compute.workflow'] as const satisfies readonly BlobType[];

/**
 * Declares a command. Identity function: it exists so the handler's `params` is typed from the
 * schema, and so every command reads the same way in `control-plane/commands/*.ts`.
 */
export function defineCommand<S extends z.ZodType>(definition: PlainCommand<S>): PlainCommand<S>;
export function defineCommand<S extends z.ZodType>(definition: RevisionCommand<S>): RevisionCommand<S>;
export function defineCommand(definition: CommandDefinition): CommandDefinition {
  return definition;
}

/**
 * `wsctl orgs|blobs|revisions|keys|sessions …`: the resource routes of docs/api.md over the typed
 * REST client. Listings print one line per row; single records print as JSON.
 */
import type { Command } from 'commander';
import { ok } from '../client/src/index.ts';
import { CliError, type CliContext } from './context.ts';
import { printRecord, printRows } from './input.ts';

type Visibility = 'private' | 'public';
type Target = 'organization' | 'blob' | 'user';
type Role = 'read' | 'write' | 'admin';

function oneOf<T extends string>(value: string, allowed: readonly T[], what: string): T {
  if (!(allowed as readonly string[]).includes(value))
    throw new CliError('invalid_arguments', `${what} must be one of ${allowed.join(', ')}.`, 2);
  return value as T;
}

/** Registers the resource groups; returns them, for the files that add to them. */
export function registerResources(
  program: Command,
  context: () => CliContext,
): { orgs: Command; blobs: Command; revisions: Command; sessions: Command } {
  const orgs = program.command('orgs').description('organizations');
  orgs
    .command('list')
    .description("the signed-in account's organizations")
    .action(async () => {
      const ctx = context();
      const rest = await ctx.rest();
      const { orgs: rows } = await ok(rest.GET('/v1/users/{user_id}/orgs', { params: { path: { user_id: 'me' } } }));
      printRows(ctx, rows, ['id', 'alias', 'visibility', 'name']);
    });
  orgs
    .command('create <alias>')
    .option('--name <name>')
    .option('--visibility <visibility>', 'private or public')
    .action(async (alias: string, options: { name?: string; visibility?: string }) => {
      const ctx = context();
      const rest = await ctx.rest();
      const body: { alias: string; name?: string; visibility?: Visibility } = { alias };
      if (options.name !== undefined) body.name = options.name;
      if (options.visibility !== undefined)
        body.visibility = oneOf(options.visibility, ['private', 'public'] as const, '--visibility');
      printRecord(ctx, (await ok(rest.POST('/v1/orgs', { body }))).org);
    });
  orgs.command('get <org>').action(async (id: string) => {
    const ctx = context();
    const rest = await ctx.rest();
    printRecord(ctx, (await ok(rest.GET('/v1/orgs/{id}', { params: { path: { id } } }))).org);
  });
  orgs.command('delete <org>').action(async (id: string) => {
    const ctx = context();
    const rest = await ctx.rest();
    printRecord(ctx, (await ok(rest.DELETE('/v1/orgs/{id}', { params: { path: { id } } }))).org);
  });

  const blobs = program.command('blobs').description('blobs of an organization');
  blobs.command('list <org>').action(async (id: string) => {
    const ctx = context();
    const rest = await ctx.rest();
    const { blobs: rows } = await ok(rest.GET('/v1/orgs/{id}/blobs', { params: { path: { id } } }));
    printRows(ctx, rows, ['id', 'alias', 'type', 'status']);
  });
  blobs
    .command('create <org> <alias>')
    .description('a blob and its first revision')
    .requiredOption('--type <type>', 'svc.compute.workflow, svc.compute.scheduler, …')
    .option('--name <name>')
    .option('--visibility <visibility>', 'private or public')
    .action(async (org: string, alias: string, options: { type: string; name?: string; visibility?: string }) => {
      const ctx = context();
      const rest = await ctx.rest();
      const body: { type: string; alias: string; name?: string; visibility?: Visibility } = {
        type: options.type,
        alias,
      };
      if (options.name !== undefined) body.name = options.name;
      if (options.visibility !== undefined)
        body.visibility = oneOf(options.visibility, ['private', 'public'] as const, '--visibility');
      const { blob, revision } = await ok(rest.POST('/v1/blobs/{org_id}', { params: { path: { org_id: org } }, body }));
      printRecord(ctx, { blob, revision });
    });
  blobs.command('get <org> <blob>').action(async (org: string, blob: string) => {
    const ctx = context();
    const rest = await ctx.rest();
    printRecord(
      ctx,
      (await ok(rest.GET('/v1/blobs/{org_id}/{blob_id}', { params: { path: { org_id: org, blob_id: blob } } }))).blob,
    );
  });
  blobs.command('delete <org> <blob>').action(async (org: string, blob: string) => {
    const ctx = context();
    const rest = await ctx.rest();
    printRecord(
      ctx,
      (await ok(rest.DELETE('/v1/blobs/{org_id}/{blob_id}', { params: { path: { org_id: org, blob_id: blob } } })))
        .blob,
    );
  });

  const revisions = program.command('revisions').description("a blob's revisions");
  revisions.command('list <org> <blob>').action(async (org: string, blob: string) => {
    const ctx = context();
    const rest = await ctx.rest();
    const rows: Array<Record<string, unknown>> = [];
    let cursor: string | undefined;
    do {
      const query: { limit: number; cursor?: string } = { limit: 200 };
      if (cursor !== undefined) query.cursor = cursor;
      const page = await ok(
        rest.GET('/v1/blobs/{org_id}/{blob_id}/revisions', { params: { path: { org_id: org, blob_id: blob }, query } }),
      );
      rows.push(...page.revisions);
      cursor = page.cursor ?? undefined;
    } while (cursor !== undefined);
    printRows(ctx, rows, ['id', 'number', 'status', 'created_at']);
  });
  revisions
    .command('create <org> <blob>')
    .option('--copy-from <revision>', 'a revision of the same blob whose contents to copy')
    .action(async (org: string, blob: string, options: { copyFrom?: string }) => {
      const ctx = context();
      const rest = await ctx.rest();
      const body: { copy_from?: string } = {};
      if (options.copyFrom !== undefined) body.copy_from = options.copyFrom;
      printRecord(
        ctx,
        (
          await ok(
            rest.POST('/v1/blobs/{org_id}/{blob_id}/revisions', {
              params: { path: { org_id: org, blob_id: blob } },
              body,
            }),
          )
        ).revision,
      );
    });
  revisions.command('get <revision>').action(async (id: string) => {
    const ctx = context();
    const rest = await ctx.rest();
    printRecord(ctx, (await ok(rest.GET('/v1/revisions/{id}', { params: { path: { id } } }))).revision);
  });
  revisions.command('delete <revision>').action(async (id: string) => {
    const ctx = context();
    const rest = await ctx.rest();
    printRecord(ctx, (await ok(rest.DELETE('/v1/revisions/{id}', { params: { path: { id } } }))).revision);
  });

  const keys = program.command('keys').description('API keys');
  const targets = ['organization', 'blob', 'user'] as const;
  keys
    .command('list <target> <target_id>')
    .description('target: organization, blob or user')
    .action(async (target: string, targetId: string) => {
      const ctx = context();
      const rest = await ctx.rest();
      const path = { target: oneOf<Target>(target, targets, 'target'), target_id: targetId };
      const { api_keys } = await ok(rest.GET('/v1/api-keys/target/{target}/{target_id}', { params: { path } }));
      printRows(ctx, api_keys, ['id', 'name', 'role', 'prefix', 'created_at']);
    });
  keys
    .command('create <target> <target_id>')
    .description('mints a key; its secret is printed once')
    .requiredOption('--role <role>', 'read, write or admin')
    .option('--name <name>')
    .action(async (target: string, targetId: string, options: { role: string; name?: string }) => {
      const ctx = context();
      const rest = await ctx.rest();
      const body: { target: Target; target_id: string; role: Role; name?: string } = {
        target: oneOf<Target>(target, targets, 'target'),
        target_id: targetId,
        role: oneOf<Role>(options.role, ['read', 'write', 'admin'] as const, '--role'),
      };
      if (options.name !== undefined) body.name = options.name;
      printRecord(ctx, (await ok(rest.POST('/v1/api-keys', { body }))).api_key);
    });
  keys.command('revoke <key_id>').action(async (id: string) => {
    const ctx = context();
    const rest = await ctx.rest();
    printRecord(ctx, (await ok(rest.DELETE('/v1/api-keys', { body: { id } }))).api_key);
  });

  const sessions = program.command('sessions').description("a workflow revision's sessions");
  sessions
    .command('create')
    .requiredOption('--revision <revision>')
    .option('--alias <alias>')
    .action(async (options: { revision: string; alias?: string }) => {
      const ctx = context();
      const rest = await ctx.rest();
      const body: { alias?: string } = {};
      if (options.alias !== undefined) body.alias = options.alias;
      printRecord(
        ctx,
        (
          await ok(
            rest.POST('/v1/revisions/{revision_id}/create_session', {
              params: { path: { revision_id: options.revision } },
              body,
            }),
          )
        ).session,
      );
    });
  return { orgs, blobs, revisions, sessions };
}

/**
 * `wsctl orgs|blobs update`, `users|orgs|blobs limits` and `blobs|revisions metadata get|set`:
 * the PATCH routes, the limits reads (docs/limits.md) and the metadata listings
 * (docs/resources.md) of docs/api.md.
 */
import type { Command } from 'commander';
import { ok } from '../client/src/index.ts';
import { CliError, type CliContext } from './context.ts';
import { printRecord, printRows, readJsonValue } from './input.ts';

/** A group of a limits read (docs/limits.md, "Limits reads"). */
interface LimitGroup {
  id: string;
  limits: ReadonlyArray<Record<string, unknown>>;
}

/** One row per limit, in catalog order, with its group: `-o json` keeps every field. */
function printLimits(ctx: CliContext, groups: LimitGroup[]): void {
  const rows = groups.flatMap((group) => group.limits.map((limit) => ({ group: group.id, ...limit })));
  printRows(ctx, rows, ['id', 'value', 'source', 'default', 'held', 'unit']);
}

function visibility(value: string | undefined): 'private' | 'public' | undefined {
  if (value === undefined || value === 'private' || value === 'public') return value;
  throw new CliError('invalid_arguments', '--visibility must be one of private, public.', 2);
}

function nonEmpty<T extends object>(body: T): T {
  if (Object.keys(body).length === 0) throw new CliError('invalid_arguments', 'Give at least one field to change.', 2);
  return body;
}

/** The entries of `metadata set`: a JSON array (or @file holding one). */
async function entriesOf(ctx: CliContext, value: string): Promise<unknown[]> {
  const entries = await readJsonValue(ctx, value, 'entries');
  if (!Array.isArray(entries)) throw new CliError('invalid_arguments', 'entries must be a JSON array.', 2);
  return entries;
}

/** Registers on the groups resources.ts and users.ts made. */
export function registerSettings(
  groups: { orgs: Command; blobs: Command; revisions: Command; users: Command },
  context: () => CliContext,
): void {
  const { orgs, blobs, revisions, users } = groups;
  orgs
    .command('update <org>')
    .description('changes the name, alias, visibility or owner (the owner alone transfers it)')
    .option('--name <name>')
    .option('--alias <alias>')
    .option('--visibility <visibility>', 'private or public')
    .option('--owner <user>', 'the new owner (an id or alias)')
    .action(async (id: string, options: { name?: string; alias?: string; visibility?: string; owner?: string }) => {
      const ctx = context();
      const body = nonEmpty({
        ...(options.name !== undefined && { name: options.name }),
        ...(options.alias !== undefined && { alias: options.alias }),
        ...(options.visibility !== undefined && { visibility: visibility(options.visibility) }),
        ...(options.owner !== undefined && { owner_id: options.owner }),
      });
      const rest = await ctx.rest();
      printRecord(ctx, (await ok(rest.PATCH('/v1/orgs/{id}', { params: { path: { id } }, body }))).org);
    });
  blobs
    .command('update <org> <blob>')
    .description('changes the name, alias or visibility')
    .option('--name <name>')
    .option('--alias <alias>')
    .option('--visibility <visibility>', 'private or public')
    .action(async (org: string, blob: string, options: { name?: string; alias?: string; visibility?: string }) => {
      const ctx = context();
      const body = nonEmpty({
        ...(options.name !== undefined && { name: options.name }),
        ...(options.alias !== undefined && { alias: options.alias }),
        ...(options.visibility !== undefined && { visibility: visibility(options.visibility) }),
      });
      const rest = await ctx.rest();
      const params = { path: { org_id: org, blob_id: blob } };
      printRecord(ctx, (await ok(rest.PATCH('/v1/blobs/{org_id}/{blob_id}', { params, body }))).blob);
    });

  users
    .command('limits [user]')
    .description('the limits a new organization of the user starts with (default me)')
    .action(async (user = 'me') => {
      const ctx = context();
      const rest = await ctx.rest();
      printLimits(
        ctx,
        (await ok(rest.GET('/v1/users/{user_id}/limits', { params: { path: { user_id: user } } }))).groups,
      );
    });
  orgs
    .command('limits <org>')
    .description("the organization's limits in force, where each came from, and what it holds")
    .action(async (id: string) => {
      const ctx = context();
      const rest = await ctx.rest();
      printLimits(ctx, (await ok(rest.GET('/v1/orgs/{id}/limits', { params: { path: { id } } }))).groups);
    });
  blobs
    .command('limits <org> <blob>')
    .description("the blob's limits in force")
    .action(async (org: string, blob: string) => {
      const ctx = context();
      const rest = await ctx.rest();
      const params = { path: { org_id: org, blob_id: blob } };
      printLimits(ctx, (await ok(rest.GET('/v1/blobs/{org_id}/{blob_id}/limits', { params }))).groups);
    });

  const blobMetadata = blobs.command('metadata').description("a blob's metadata listings");
  blobMetadata.command('get <org> <blob> <alias>').action(async (org: string, blob: string, alias: string) => {
    const ctx = context();
    const rest = await ctx.rest();
    const params = { path: { org_id: org, blob_id: blob, alias } };
    const { status: _, ...listing } = await ok(rest.GET('/v1/blobs/{org_id}/{blob_id}/metadata/{alias}', { params }));
    printRecord(ctx, listing);
  });
  blobMetadata
    .command('set <org> <blob> <alias> <entries>')
    .description('replaces the listing: entries is a JSON array, or @file')
    .action(async (org: string, blob: string, alias: string, value: string) => {
      const ctx = context();
      const body = { entries: await entriesOf(ctx, value) };
      const rest = await ctx.rest();
      const params = { path: { org_id: org, blob_id: blob, alias } };
      const { status: _, ...listing } = await ok(
        rest.PUT('/v1/blobs/{org_id}/{blob_id}/metadata/{alias}', { params, body }),
      );
      printRecord(ctx, listing);
    });
  const revisionMetadata = revisions.command('metadata').description("a revision's metadata listings");
  revisionMetadata.command('get <revision> <alias>').action(async (id: string, alias: string) => {
    const ctx = context();
    const rest = await ctx.rest();
    const { status: _, ...listing } = await ok(
      rest.GET('/v1/revisions/{id}/metadata/{alias}', { params: { path: { id, alias } } }),
    );
    printRecord(ctx, listing);
  });
  revisionMetadata
    .command('set <revision> <alias> <entries>')
    .description('replaces the listing: entries is a JSON array, or @file')
    .action(async (id: string, alias: string, value: string) => {
      const ctx = context();
      const body = { entries: await entriesOf(ctx, value) };
      const rest = await ctx.rest();
      const { status: _, ...listing } = await ok(
        rest.PUT('/v1/revisions/{id}/metadata/{alias}', { params: { path: { id, alias } }, body }),
      );
      printRecord(ctx, listing);
    });
}

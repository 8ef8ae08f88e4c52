/**
 * `wsctl users …` (profiles: get, update oneself, delete, organizations, who stands where) and
 * `wsctl service-accounts …` (create, list, impersonate): the user routes of docs/api.md. An
 * acting token from `impersonate --save-as` is kept in a profile of its own like any sign-in; it
 * lasts its 60 minutes and has no refresh token (docs/access.md).
 */
import type { Command } from 'commander';
import { ok } from '../client/src/index.ts';
import { CliError, type CliContext } from './context.ts';
import { printRecord, printRows } from './input.ts';

type Rows = Array<Record<string, unknown>>;

const path = (user: string) => ({ params: { path: { user_id: user } } });

/** The three kinds of target whose accounts `users list` shows. */
function listTarget(value: string): 'organization' | 'blob' | 'user' {
  if (value !== 'organization' && value !== 'blob' && value !== 'user')
    throw new CliError('invalid_arguments', 'target must be one of organization, blob, user.', 2);
  return value;
}

/** `users list`'s rows: `{user, role?, via?}` flattened to the user's fields beside role and via. */
function standingRows(users: ReadonlyArray<{ user: Record<string, unknown>; role?: string; via?: string }>): Rows {
  return users.map(({ user, role, via }) => ({ ...user, role, via }));
}

/** Registers `users` and `service-accounts`; returns `users`, which settings.ts adds `limits` to. */
export function registerUsers(program: Command, context: () => CliContext): Command {
  const users = program.command('users').description('user profiles (USER: an id, an alias or me)');
  users
    .command('get [user]')
    .description("a user's profile: the full one for oneself, public fields otherwise (default me)")
    .action(async (user = 'me') => {
      const ctx = context();
      const rest = await ctx.rest();
      printRecord(ctx, (await ok(rest.GET('/v1/users/{user_id}', path(user)))).user);
    });
  users
    .command('update [user]')
    .description('changes the name or alias of oneself (or of the service account an acting profile is)')
    .option('--name <name>')
    .option('--alias <alias>')
    .option('--no-alias', 'removes the alias')
    .action(async (user: string | undefined, options: { name?: string; alias?: string | false }) => {
      const ctx = context();
      const body: { name?: string; alias?: string | null } = {};
      if (options.name !== undefined) body.name = options.name;
      if (options.alias !== undefined) body.alias = options.alias === false ? null : options.alias;
      if (Object.keys(body).length === 0)
        throw new CliError('invalid_arguments', 'Give --name, --alias or --no-alias.', 2);
      const rest = await ctx.rest();
      printRecord(ctx, (await ok(rest.PATCH('/v1/users/{user_id}', { ...path(user ?? 'me'), body }))).user);
    });
  users
    .command('delete <user>')
    .description(
      "retires a service account one owns, or deletes one's own account (refused while it owns organizations)",
    )
    .action(async (user: string) => {
      const ctx = context();
      const rest = await ctx.rest();
      printRecord(ctx, (await ok(rest.DELETE('/v1/users/{user_id}', path(user)))).user);
    });
  users
    .command('orgs [user]')
    .description("a user's organizations: all of one's own, another's public ones (default me)")
    .action(async (user = 'me') => {
      const ctx = context();
      const rest = await ctx.rest();
      const { orgs } = await ok(rest.GET('/v1/users/{user_id}/orgs', path(user)));
      printRows(ctx, orgs, ['id', 'alias', 'visibility', 'name']);
    });
  users
    .command('list <target> <target_id>')
    .description('who stands on an organization or blob (role and how), or the service accounts a user owns')
    .action(async (target: string, targetId: string) => {
      const ctx = context();
      const rest = await ctx.rest();
      const { users: rows } = await ok(
        rest.GET('/v1/users/target/{target}/{target_id}', {
          params: { path: { target: listTarget(target), target_id: targetId } },
        }),
      );
      printRows(ctx, standingRows(rows as never), ['id', 'alias', 'kind', 'name', 'role', 'via']);
    });

  const accounts = program.command('service-accounts').description('service accounts and acting tokens');
  accounts
    .command('create <name>')
    .description('a service account owned by the signed-in account')
    .option('--alias <alias>')
    .action(async (name: string, options: { alias?: string }) => {
      const ctx = context();
      const rest = await ctx.rest();
      const body: { name: string; alias?: string } = { name };
      if (options.alias !== undefined) body.alias = options.alias;
      printRecord(ctx, (await ok(rest.POST('/v1/users', { body }))).user);
    });
  accounts
    .command('list [owner]')
    .description('the service accounts an account owns (default me)')
    .action(async (owner = 'me') => {
      const ctx = context();
      const rest = await ctx.rest();
      const { users: rows } = await ok(
        rest.GET('/v1/users/target/{target}/{target_id}', { params: { path: { target: 'user', target_id: owner } } }),
      );
      printRows(ctx, standingRows(rows as never), ['id', 'alias', 'name', 'created_at']);
    });
  accounts
    .command('impersonate <account>')
    .description('mints a 60-minute acting token for a service account one owns')
    .option('--save-as <profile>', 'keep it in this profile (else it is printed, once)')
    .action(async (account: string, options: { saveAs?: string }) => {
      const ctx = context();
      const profile = await ctx.profile();
      const rest = await ctx.rest();
      const answer = await ok(rest.POST('/v1/auth/core/impersonate', { body: { user_id: account } }));
      if (options.saveAs === undefined) {
        printRecord(ctx, answer);
        return;
      }
      if (options.saveAs === ctx.profileName)
        throw new CliError('invalid_arguments', '--save-as names the profile in use; give another.', 2);
      const expires = new Date(Date.now() + answer.expires_in * 1000).toISOString();
      await ctx.saveAs(options.saveAs, {
        url: profile.url,
        user_id: answer.user.id,
        access_token: answer.acting_token,
        access_expires_at: expires,
      });
      ctx.output.out(
        `acting as ${answer.user.id} until ${expires} (profile ${options.saveAs}; no refresh: impersonate again after)`,
      );
    });
  return users;
}

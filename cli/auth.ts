/**
 * `wsctl login` (anonymous, an identity provider's ID token, refresh token, API key), `logout`, `whoami`. A secret is read from
 * stdin (`-`) or the environment (`env:NAME`), never taken from the command line, so it appears
 * in neither the shell's history nor the process list.
 */
import type { Command } from 'commander';
import { createRestClient, ok } from '../client/src/index.ts';
import { CliContext, CliError, tokensOf, type Io } from './context.ts';
import { originOf, printRecord, readSecret } from './input.ts';

interface LoginOptions {
  url: string;
  anonymous?: boolean;
  refreshToken?: string;
  apiKey?: string;
  googleIdToken?: string;
}

export function registerAuth(program: Command, context: () => CliContext, env: Io['env']): void {
  program
    .command('login')
    .description('sign in and store the credential in the profile (mode 0600)')
    .requiredOption('--url <url>', 'the service, e.g. http://127.0.0.1:8080', env.WSCTL_URL)
    .option('--anonymous', 'sign up as a new anonymous user')
    .option('--refresh-token <source>', 'sign in with a refresh token: - (stdin) or env:NAME')
    .option('--api-key <source>', 'use an API key: - (stdin) or env:NAME')
    .option('--google-id-token <source>', "sign in with an identity provider's ID token: - (stdin) or env:NAME")
    .action(async (options: LoginOptions) => {
      const ctx = context();
      const chosen = [options.anonymous, options.refreshToken, options.apiKey, options.googleIdToken].filter(
        (v) => v !== undefined,
      ).length;
      if (chosen !== 1)
        throw new CliError(
          'invalid_arguments',
          'Give exactly one of --anonymous, --refresh-token, --api-key, --google-id-token.',
          2,
        );
      const url = originOf(options.url);
      ctx.target = url;
      const rest = createRestClient({ baseUrl: url });
      if (options.apiKey !== undefined) {
        const apiKey = await readSecret(ctx, options.apiKey, '--api-key');
        const keyed = createRestClient({ baseUrl: url, credential: { apiKey } });
        const { user } = await ok(keyed.GET('/v1/users/{user_id}', { params: { path: { user_id: 'me' } } }));
        await ctx.save({ url, user_id: user.id, api_key: apiKey, ...(await keptOps(ctx)) });
        ctx.output.out(`signed in to ${url} as ${user.id} with an API key (profile ${ctx.profileName})`);
        return;
      }
      const answer = options.anonymous
        ? await ok(rest.POST('/v1/auth/anonymous', { body: {} }))
        : options.googleIdToken !== undefined
          ? await ok(
              rest.POST('/v1/auth/google', {
                body: { id_token: await readSecret(ctx, options.googleIdToken, '--google-id-token') },
              }),
            )
          : await ok(
              rest.POST('/v1/auth/refresh', {
                body: { refresh_token: await readSecret(ctx, options.refreshToken!, '--refresh-token') },
              }),
            );
      await ctx.save({ url, ...tokensOf(answer), ...(await keptOps(ctx)) });
      ctx.output.out(`signed in to ${url} as ${answer.user.id} (profile ${ctx.profileName})`);
    });

  program
    .command('logout')
    .description('forget the profile')
    .action(async () => {
      const ctx = context();
      ctx.output.out((await ctx.remove()) ? `profile ${ctx.profileName} removed` : `no profile ${ctx.profileName}`);
    });

  program
    .command('whoami')
    .description('the signed-in account')
    .action(async () => {
      const ctx = context();
      const rest = await ctx.rest();
      const { user } = await ok(rest.GET('/v1/users/{user_id}', { params: { path: { user_id: 'me' } } }));
      printRecord(ctx, user);
    });
}

/** The profile's operations API settings, kept across a new sign-in. */
async function keptOps(ctx: CliContext): Promise<{ ops_url?: string; ops_token?: string }> {
  const previous = await ctx.existing();
  return previous?.ops_url && previous.ops_token ? { ops_url: previous.ops_url, ops_token: previous.ops_token } : {};
}

/**
 * `wsctl ops …`: the operations GraphQL API (docs/operations.md) on its own port, with its token:
 * limit overrides, runners, queues and the retention sweep. A GraphQL error prints as
 * `error: <extensions.code>: <message>` like any other refusal.
 */
import type { Command } from 'commander';
import { CliError, type CliContext } from './context.ts';
import { originOf, printRecord, printRows, readJsonValue, readSecret } from './input.ts';

/** One GraphQL request to the operations API; GraphQL errors become a CliError. */
export async function opsQuery<T>(
  ctx: CliContext,
  query: string,
  variables: Record<string, unknown> = {},
  target?: { url: string; token: string },
): Promise<T> {
  const { url, token } = target ?? (await ctx.ops());
  const headers: Record<string, string> = {
    authorization: `Bearer ${token}`,
    'content-type': 'application/json',
    'x-ops-actor': 'wsctl',
  };
  const response = await fetch(new URL('/graphql', url), {
    method: 'POST',
    headers,
    body: JSON.stringify({ query, variables }),
  });
  let body: { data?: T; errors?: Array<{ message: string; extensions?: { code?: string } }> };
  try {
    body = (await response.json()) as typeof body;
  } catch {
    throw new CliError('internal_error', `The operations API answered HTTP ${response.status} without JSON.`);
  }
  const first = body.errors?.[0];
  if (first) throw new CliError(first.extensions?.code ?? 'graphql_error', first.message);
  if (!response.ok || body.data === undefined)
    throw new CliError('internal_error', `The operations API answered HTTP ${response.status}.`);
  return body.data;
}

const TARGET_TYPES = ['user', 'org', 'blob'];

function targetType(value: string): string {
  if (!TARGET_TYPES.includes(value))
    throw new CliError('invalid_arguments', `The target type must be one of ${TARGET_TYPES.join(', ')}.`, 2);
  return value;
}

const OVERRIDE_FIELDS = 'override { limitId targetType targetId value setBy setAt } previous { value setBy setAt }';

export function registerOps(program: Command, context: () => CliContext): void {
  const ops = program.command('ops').description('the operations API (its own port and token)');
  ops
    .command('login')
    .description("stores the operations API's address and token in the profile")
    .requiredOption('--url <url>', 'e.g. http://127.0.0.1:8081')
    .requiredOption('--token <source>', 'OPS_TOKEN: - (stdin) or env:NAME')
    .action(async (options: { url: string; token: string }) => {
      const ctx = context();
      // An operator may have no account of the service: the profile can hold the ops API alone.
      const profile = (await ctx.existing()) ?? { url: '' };
      const target = { url: originOf(options.url), token: await readSecret(ctx, options.token, '--token') };
      // Checked before it is kept: a wrong token is refused here, not at the next command.
      const { health } = await opsQuery<{ health: { status: string; version: string } }>(
        ctx,
        '{ health { status version } }',
        {},
        target,
      );
      await ctx.save({ ...profile, ops_url: target.url, ops_token: target.token });
      ctx.output.out(`operations API ${target.url}: ${health.status} (version ${health.version})`);
    });

  const limits = ops.command('limits').description('limit overrides');
  limits
    .command('set <limit_id> <target_type> <target_id> <value>')
    .description('value is JSON: 10, true, null, ["@ws/uuid"]; target_type user, org or blob')
    .action(async (limitId: string, type: string, targetId: string, value: string) => {
      const ctx = context();
      const parsed = await readJsonValue(ctx, value, 'value');
      const data = await opsQuery<{ setLimitOverride: unknown }>(
        ctx,
        `mutation ($limitId: String!, $targetType: LimitTargetType!, $targetId: String!, $value: LimitValue) {
          setLimitOverride(limitId: $limitId, targetType: $targetType, targetId: $targetId, value: $value) { ${OVERRIDE_FIELDS} } }`,
        { limitId, targetType: targetType(type), targetId, value: parsed },
      );
      printRecord(ctx, data.setLimitOverride);
    });
  limits
    .command('clear <limit_id> <target_type> <target_id>')
    .action(async (limitId: string, type: string, targetId: string) => {
      const ctx = context();
      const data = await opsQuery<{ clearLimitOverride: unknown }>(
        ctx,
        `mutation ($limitId: String!, $targetType: LimitTargetType!, $targetId: String!) {
        clearLimitOverride(limitId: $limitId, targetType: $targetType, targetId: $targetId) { ${OVERRIDE_FIELDS} } }`,
        { limitId, targetType: targetType(type), targetId },
      );
      printRecord(ctx, data.clearLimitOverride);
    });
  limits
    .command('list <target_type> <target_id>')
    .description('overrides stored for a target')
    .action(async (type: string, targetId: string) => {
      const ctx = context();
      const data = await opsQuery<{ limitOverrides: Array<Record<string, unknown>> }>(
        ctx,
        `query ($targetType: LimitTargetType!, $targetId: String!) {
        limitOverrides(targetType: $targetType, targetId: $targetId) { limitId value setBy setAt } }`,
        { targetType: targetType(type), targetId },
      );
      printRows(ctx, data.limitOverrides, ['limitId', 'value', 'setBy', 'setAt']);
    });

  ops
    .command('runners')
    .description('registered runners, newest first')
    .action(async () => {
      const ctx = context();
      const data = await opsQuery<{ runners: Array<Record<string, unknown>> }>(
        ctx,
        '{ runners { id host pid alive heartbeatAt stoppedAt } }',
      );
      printRows(ctx, data.runners, ['id', 'host', 'pid', 'alive', 'heartbeatAt', 'stoppedAt']);
    });
  ops
    .command('queues')
    .description('job queues and their counts')
    .action(async () => {
      const ctx = context();
      const data = await opsQuery<{ queues: Array<Record<string, unknown>> }>(
        ctx,
        '{ queues { name readyCount activeCount deferredCount failedCount countedAt } }',
      );
      printRows(ctx, data.queues, ['name', 'readyCount', 'activeCount', 'deferredCount', 'failedCount', 'countedAt']);
    });
  const retention = ops.command('retention').description('the retention sweep');
  retention
    .command('sweep')
    .description('runs a sweep now and prints what it removed')
    .action(async () => {
      const ctx = context();
      const data = await opsQuery<{ runRetentionSweep: unknown }>(
        ctx,
        'mutation { runRetentionSweep { id status startedAt finishedAt executionsRemoved runsRemoved error } }',
      );
      printRecord(ctx, data.runRetentionSweep);
    });
}

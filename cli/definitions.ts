/**
 * `wsctl definition push FILE.json|yaml` and `definition check`: the graph is checked with
 * `check_definition` first, and its issues are printed one per line with their path
 * (`node.field`, or `(graph).field` for the graph itself) before anything is created.
 */
import type { Command } from 'commander';
import { ApiError, ok, type DefinitionIssue, type paths } from '../client/src/index.ts';
import { CliError, type CliContext } from './context.ts';
import { printRecord, printRows, readDocument } from './input.ts';

// The file's graph is sent as it was read: the service validates it (that is the point of check).
type CheckBody = NonNullable<
  paths['/v1/revisions/{revision_id}/check_definition']['post']['requestBody']
>['content']['application/json'];
type CreateBody = NonNullable<
  paths['/v1/revisions/{revision_id}/create_definition']['post']['requestBody']
>['content']['application/json'];

/** The path of an issue: `greet.config.seconds`, `greet`, `(graph).start`. */
function issuePath(issue: DefinitionIssue): string {
  const node = issue.node ?? '(graph)';
  return issue.field ? `${node}.${issue.field}` : node;
}

/** A file holds either a graph (`{start, nodes}`) or `{alias?, category?, graph}`. */
function definitionOf(document: unknown): { graph: unknown; alias?: string; category?: 'workflow' | 'playground' } {
  if (typeof document === 'object' && document !== null && 'graph' in document) {
    return document as { graph: unknown; alias?: string; category?: 'workflow' | 'playground' };
  }
  return { graph: document };
}

async function check(ctx: CliContext, revision: string, graph: unknown): Promise<void> {
  const rest = await ctx.rest();
  const verdict = await ok(
    rest.POST('/v1/revisions/{revision_id}/check_definition', {
      params: { path: { revision_id: revision } },
      body: { graph } as CheckBody,
    }),
  );
  const { errors = [], warnings = [] } = verdict as { errors?: DefinitionIssue[]; warnings?: DefinitionIssue[] };
  for (const issue of warnings) ctx.output.err(`warning: ${issuePath(issue)}: ${issue.code}: ${issue.message}`);
  for (const issue of errors) ctx.output.out(`${issuePath(issue)}: ${issue.code}: ${issue.message}`);
  if ((verdict as { status: string }).status !== 'success') {
    throw new CliError(
      'invalid_definition',
      `check_definition found ${errors.length} error${errors.length === 1 ? '' : 's'}; nothing was created.`,
    );
  }
}

export function registerDefinitions(program: Command, context: () => CliContext): void {
  const definition = program.command('definition').description('workflow definitions');
  definition
    .command('delete <definition>')
    .description('deletes a definition (id or alias), freeing its slot')
    .requiredOption('--revision <revision>')
    .action(async (id: string, options: { revision: string }) => {
      const ctx = context();
      const rest = await ctx.rest();
      const answer = await ok(
        rest.POST('/v1/revisions/{revision_id}/delete_definition', {
          params: { path: { revision_id: options.revision } },
          body: { definition_id: id },
        }),
      );
      printRecord(ctx, answer.definition);
    });
  definition
    .command('push <file>')
    .description('checks a definition (JSON or YAML) and creates it on a workflow revision')
    .requiredOption('--revision <revision>', 'the workflow revision')
    .option('--alias <alias>', "the definition's alias (else the file's alias, if any)")
    .option('--category <category>', 'workflow or playground', undefined)
    .option(
      '--replace',
      'replace the definition holding the alias (deleted, then created; put back if the create fails)',
    )
    .action(
      async (file: string, options: { revision: string; alias?: string; category?: string; replace?: boolean }) => {
        const ctx = context();
        const found = definitionOf(await readDocument(ctx, file));
        await check(ctx, options.revision, found.graph);
        const category = options.category ?? found.category ?? 'workflow';
        if (category !== 'workflow' && category !== 'playground')
          throw new CliError('invalid_arguments', '--category must be workflow or playground.', 2);
        const body: { graph: unknown; category: 'workflow' | 'playground'; alias?: string } = {
          graph: found.graph,
          category,
        };
        const alias = options.alias ?? found.alias;
        if (alias !== undefined) body.alias = alias;
        const rest = await ctx.rest();
        const create = (created: { graph: unknown; category: 'workflow' | 'playground'; alias?: string }) =>
          ok(
            rest.POST('/v1/revisions/{revision_id}/create_definition', {
              params: { path: { revision_id: options.revision } },
              body: created as CreateBody,
            }),
          );
        let replaced: { graph: unknown; category: 'workflow' | 'playground'; alias?: string } | undefined;
        if (options.replace) {
          if (alias === undefined) throw new CliError('invalid_arguments', '--replace needs an alias.', 2);
          // Checked above, so the create below fails only on a race or a limit; the old one is then put back.
          const { definition: old } = await ok(
            rest.POST('/v1/revisions/{revision_id}/delete_definition', {
              params: { path: { revision_id: options.revision } },
              body: { definition_id: alias },
            }),
          ).catch((error: unknown) => {
            if (error instanceof ApiError && error.error === 'not_found') return { definition: undefined };
            throw error;
          });
          if (old) replaced = { graph: old.graph, category: old.category, alias };
        }
        let answer: Awaited<ReturnType<typeof create>>;
        try {
          answer = await create(body);
        } catch (error) {
          if (replaced) {
            await create(replaced);
            ctx.output.err(`the previous definition ${alias} was put back`);
          }
          throw error;
        }
        printRecord(ctx, answer.definition);
      },
    );
  definition
    .command('check <file>')
    .description('checks a definition without creating it')
    .requiredOption('--revision <revision>')
    .action(async (file: string, options: { revision: string }) => {
      const ctx = context();
      await check(ctx, options.revision, definitionOf(await readDocument(ctx, file)).graph);
      ctx.output.out('ok');
    });
  definition
    .command('list')
    .requiredOption('--revision <revision>')
    .option('--category <category>', 'workflow or playground (default: both)')
    .action(async (options: { revision: string; category?: string }) => {
      const ctx = context();
      if (options.category !== undefined && options.category !== 'workflow' && options.category !== 'playground')
        throw new CliError('invalid_arguments', '--category must be workflow or playground.', 2);
      const rpc = await ctx.rpc();
      try {
        const { definitions } = await rpc.call('list_definitions', {
          revision_id: options.revision,
          ...(options.category !== undefined && { category: options.category }),
        });
        printRows(ctx, definitions as unknown as Array<Record<string, unknown>>, [
          'id',
          'alias',
          'category',
          'created_at',
        ]);
      } finally {
        await rpc.close();
      }
    });
}

import { z } from 'zod';
import { ServiceError } from '../../shared/errors.ts';
import { aliasSchema, refSchema } from '../../shared/ids.ts';
import { validateGraph, type GraphVerdict } from '../../shared/workflow/validate-graph.ts';
import type { AppContext } from '../context.ts';
import { takeSlot, type QuotaId } from '../../shared/limits/holdings.ts';
import { limitInForce, limitsInForce } from '../../shared/limits/in-force.ts';
import {
  deleteDefinition,
  definitionRecord,
  findDefinition,
  insertDefinition,
  listDefinitions,
  type DefinitionCategory,
} from '../sql/definitions.ts';
import { claimingAlias } from '../sql/unique.ts';
import { defineCommand, type RevisionScope, WORKFLOW_BLOBS } from './command.ts';
import { definitionSchema, graphIssueSchema, workflowGraphSchema } from '../openapi/records.ts';

const categorySchema = z.enum(['workflow', 'playground']);

/**
 * A graph param must be a JSON object; everything inside it is validated by validateGraph, so
 * that each problem comes back as an issue naming its node and field.
 */
const graphParam = workflowGraphSchema(
  'The workflow graph (docs/workflow.md); any object is taken, and problems in it come back as issues.',
);

/** The quota a definition of each category takes in its revision. */
const QUOTA_OF: Record<DefinitionCategory, QuotaId> = {
  workflow: 'workflow.definitions_per_revision',
  playground: 'workflow.playgrounds_per_revision',
};

const FOREIGN_KEY_VIOLATION = '23503';

/**
 * Validates `graph` for the revision in `scope`. `logic.code` imports are checked against
 * `workflow.code_imports` in force for the revision's blob, the blob whose sessions will run it;
 * a node's `timeout_seconds` against `workflow.code_run_seconds` / `workflow.execution_seconds` there.
 */
async function verdictFor(ctx: AppContext, scope: RevisionScope, graph: unknown): Promise<GraphVerdict> {
  const limits = await limitsInForce(ctx.db, { blobId: scope.blob.id });
  return validateGraph(graph, {
    codeCheck: ctx.codeCheck,
    codeImports: limits['workflow.code_imports'].value,
    ceilings: {
      'workflow.code_run_seconds': limits['workflow.code_run_seconds'].value,
      'workflow.execution_seconds': limits['workflow.execution_seconds'].value,
    },
  });
}

/** `list_definitions {category?}` → `definitions`: unpaginated; the category filter applies after the read. */
const listDefinitionsCommand = defineCommand({
  name: 'list_definitions',
  result: z.strictObject({ definitions: z.array(definitionSchema) }),
  blobTypes: WORKFLOW_BLOBS,
  role: 'read',
  params: z.strictObject({ category: categorySchema.optional() }),
  async handler(ctx, _principal, params, call) {
    const rows = await listDefinitions(ctx.db, call.revision.revision.id);
    const kept = params.category === undefined ? rows : rows.filter((row) => row.category === params.category);
    return { definitions: kept.map(definitionRecord) };
  },
});

/**
 * `create_definition {alias?, category, graph}` → `definition` (and the validation `warnings`).
 * A graph with errors is refused with 400 `invalid_definition` carrying `errors`; it is validated
 * before the transaction so compiling code holds no lock. The category's quota is taken under
 * the revision's row lock in the transaction that inserts the row.
 */
const createDefinitionCommand = defineCommand({
  name: 'create_definition',
  result: z.strictObject({ definition: definitionSchema, warnings: z.array(graphIssueSchema) }),
  blobTypes: WORKFLOW_BLOBS,
  role: 'write',
  creates: true,
  params: z.strictObject({ alias: aliasSchema.optional(), category: categorySchema, graph: graphParam }),
  async handler(ctx, _principal, params, call) {
    const { revision, blob } = call.revision;
    const verdict = await verdictFor(ctx, call.revision, params.graph);
    if (verdict.errors.length > 0) {
      const count = verdict.errors.length;
      throw new ServiceError(
        'invalid_definition',
        `The graph failed validation with ${count} error${count === 1 ? '' : 's'} (see errors).`,
        { errors: verdict.errors },
      );
    }
    const quota = QUOTA_OF[params.category];
    const definition = await ctx.db.transaction(async (tx) => {
      const inForce = await limitInForce(tx, { blobId: blob.id }, quota);
      await takeSlot(tx, quota, revision.id, inForce);
      try {
        return await claimingAlias('definition in this revision', () =>
          insertDefinition(tx, {
            revisionId: revision.id,
            alias: params.alias ?? null,
            category: params.category,
            graph: params.graph,
          }),
        );
      } catch (error) {
        // The revision was deleted after access was checked: it is gone, not a server fault.
        if ((error as { code?: unknown }).code === FOREIGN_KEY_VIOLATION)
          throw new ServiceError('not_found', 'No such revision.', {}, { cause: error });
        throw error;
      }
    });
    return { definition: definitionRecord(definition), warnings: verdict.warnings };
  },
});

/** `delete_definition {definition_id}` (id or alias) → the deleted `definition`; its slot is freed with the row. */
const deleteDefinitionCommand = defineCommand({
  name: 'delete_definition',
  result: z.strictObject({ definition: definitionSchema }),
  blobTypes: WORKFLOW_BLOBS,
  role: 'write',
  params: z.strictObject({ definition_id: refSchema }),
  async handler(ctx, _principal, params, call) {
    const deleted = await ctx.db.transaction(async (tx) => {
      const found = await findDefinition(tx, call.revision.revision.id, params.definition_id, true);
      return found ? deleteDefinition(tx, found.id) : undefined;
    });
    if (!deleted) throw new ServiceError('not_found', 'No such definition.');
    return { definition: definitionRecord(deleted) };
  },
});

/**
 * `check_definition {graph}` → `{status, errors?, warnings}`: a verdict, not a refusal. An invalid
 * graph answers HTTP 200 with `status: 'failure'` (docs/workflow.md, "`check_definition {graph}`"),
 * and over JSON-RPC the result keeps `status`.
 */
const checkDefinitionCommand = defineCommand({
  name: 'check_definition',
  result: z.union([
    z.strictObject({ status: z.literal('success'), warnings: z.array(graphIssueSchema) }),
    z.strictObject({
      status: z.literal('failure'),
      errors: z.array(graphIssueSchema).min(1),
      warnings: z.array(graphIssueSchema),
    }),
  ]),
  blobTypes: WORKFLOW_BLOBS,
  role: 'read',
  params: z.strictObject({ graph: graphParam }),
  async handler(ctx, _principal, params, call) {
    const verdict = await verdictFor(ctx, call.revision, params.graph);
    return verdict.errors.length > 0
      ? { status: 'failure', errors: verdict.errors, warnings: verdict.warnings }
      : { status: 'success', warnings: verdict.warnings };
  },
});

/** The definition commands of a workflow revision, in the order docs/workflow.md lists them. */
export const definitionCommands = [
  listDefinitionsCommand,
  createDefinitionCommand,
  deleteDefinitionCommand,
  checkDefinitionCommand,
] as const;

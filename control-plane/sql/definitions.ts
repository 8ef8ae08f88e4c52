import type { Queryable, Tx } from '../../shared/db/db.ts';
import { refColumn } from '../../shared/ids.ts';
import type { WorkflowGraph } from '../../shared/workflow/graph.ts';

export type DefinitionCategory = 'workflow' | 'playground';

export interface DefinitionRow {
  id: string;
  alias: string | null;
  revision_id: string;
  category: DefinitionCategory;
  graph: WorkflowGraph;
  created_at: string;
}

const DEFINITION_COLUMNS = 'd.id, d.alias, d.revision_id, d.category, d.graph, d.created_at';

/** The definition record (docs/workflow.md, "The definition record"). */
export function definitionRecord(row: DefinitionRow): Record<string, unknown> {
  return {
    id: row.id,
    alias: row.alias,
    category: row.category,
    revision_id: row.revision_id,
    graph: row.graph,
    created_at: row.created_at,
  };
}

/** Every definition of the revision, oldest first (`list_definitions` is unpaginated). */
export async function listDefinitions(q: Queryable, revisionId: string): Promise<DefinitionRow[]> {
  const { rows } = await q.query<DefinitionRow>(
    `SELECT ${DEFINITION_COLUMNS} FROM definitions d WHERE d.revision_id = $1::uuid ORDER BY d.created_at, d.id`,
    [revisionId],
  );
  return rows;
}

/**
 * Inserts a definition. Call it after taking the category's slot in the same transaction; a
 * duplicate alias violates `definitions_alias_key` (wrap in `claimingAlias`).
 */
export async function insertDefinition(
  q: Queryable,
  fields: { revisionId: string; alias: string | null; category: DefinitionCategory; graph: unknown },
): Promise<DefinitionRow> {
  const { rows } = await q.query<DefinitionRow>(
    `INSERT INTO definitions AS d (revision_id, alias, category, graph) VALUES ($1::uuid, $2::text, $3::text, $4::jsonb)
     RETURNING ${DEFINITION_COLUMNS}`,
    [fields.revisionId, fields.alias, fields.category, JSON.stringify(fields.graph)],
  );
  return rows[0]!;
}

/** The revision's definition named by id or alias; `lock` takes its row lock (delete). */
export async function findDefinition(
  q: Queryable,
  revisionId: string,
  ref: string,
  lock = false,
): Promise<DefinitionRow | undefined> {
  const { rows } = await q.query<DefinitionRow>(
    `SELECT ${DEFINITION_COLUMNS} FROM definitions d WHERE d.revision_id = $1::uuid AND d.${refColumn(ref)} = $2${lock ? ' FOR UPDATE' : ''}`,
    [revisionId, ref],
  );
  return rows[0];
}

/** Deletes a definition; removing the row frees its slot (quotas count rows). */
export async function deleteDefinition(q: Queryable, id: string): Promise<DefinitionRow | undefined> {
  const { rows } = await q.query<DefinitionRow>(
    `DELETE FROM definitions d WHERE d.id = $1::uuid RETURNING ${DEFINITION_COLUMNS}`,
    [id],
  );
  return rows[0];
}

/**
 * Copies every definition of `fromId` into `toId` (Create Revision with `copy_from`): new ids,
 * the same alias, category, graph and `created_at`, so the copy lists in the source's order.
 */
export async function copyDefinitions(tx: Tx, fromId: string, toId: string): Promise<void> {
  await tx.query(
    `INSERT INTO definitions (revision_id, alias, category, graph, created_at)
     SELECT $2::uuid, alias, category, graph, created_at FROM definitions WHERE revision_id = $1::uuid`,
    [fromId, toId],
  );
}

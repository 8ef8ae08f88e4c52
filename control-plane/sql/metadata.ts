import type { Queryable } from '../../shared/db/db.ts';
import { ServiceError } from '../../shared/errors.ts';

const FOREIGN_KEY_VIOLATION = '23503';

/** A metadata listing: the JSON entries stored under one alias of a blob or a revision. */
export interface MetadataRow {
  alias: string;
  entries: unknown[];
  updated_at: string;
}

/** Where a listing hangs: the table and key column differ, the statements do not. */
export type MetadataOwner = { kind: 'blob'; id: string } | { kind: 'revision'; id: string };

const TABLES = {
  blob: { table: 'blob_metadata', key: 'blob_id' },
  revision: { table: 'revision_metadata', key: 'revision_id' },
} as const;

/** The listing under `alias`, or undefined when none is stored. */
export async function getMetadata(q: Queryable, owner: MetadataOwner, alias: string): Promise<MetadataRow | undefined> {
  const { table, key } = TABLES[owner.kind];
  const { rows } = await q.query<MetadataRow>(
    `SELECT alias, entries, updated_at FROM ${table} WHERE ${key} = $1::uuid AND alias = $2`,
    [owner.id, alias],
  );
  return rows[0];
}

/**
 * Replaces the listing under `alias` (creating it when absent) in one statement. A blob or
 * revision deleted since it was resolved fails the foreign key: that is `not_found`.
 */
export async function putMetadata(
  q: Queryable,
  owner: MetadataOwner,
  alias: string,
  entries: unknown[],
): Promise<MetadataRow> {
  const { table, key } = TABLES[owner.kind];
  const { rows } = await q
    .query<MetadataRow>(
      `INSERT INTO ${table} (${key}, alias, entries) VALUES ($1::uuid, $2, $3::jsonb)
     ON CONFLICT (${key}, alias) DO UPDATE SET entries = EXCLUDED.entries, updated_at = now()
     RETURNING alias, entries, updated_at`,
      [owner.id, alias, JSON.stringify(entries)],
    )
    .catch((error: unknown) => {
      if ((error as { code?: unknown }).code === FOREIGN_KEY_VIOLATION)
        throw new ServiceError('not_found', `No such ${owner.kind}.`, {}, { cause: error });
      throw error;
    });
  return rows[0]!;
}

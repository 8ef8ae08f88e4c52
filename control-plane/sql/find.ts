/** Where an id points: the resource it names and the chain above it (docs/resources.md, "Find by id"). */
import type { Queryable } from '../../shared/db/db.ts';
import { preparedQuery } from '../../shared/db/prepared-query.ts';

/** The kinds of resource an id can name here, in the order they are looked for. */
export type FoundKind = 'organization' | 'blob' | 'revision' | 'session' | 'definition' | 'execution' | 'schedule';

interface FoundRow {
  kind: FoundKind;
  id: string;
  org_id: string;
  blob_id: string | null;
  revision_id: string | null;
  session_id: string | null;
}

// Each branch is a primary-key probe: ids are UUIDs from one generator, so at most one answers.
const FIND_SQL = `
  SELECT 'organization' AS kind, o.id, o.id AS org_id, NULL::uuid AS blob_id, NULL::uuid AS revision_id, NULL::uuid AS session_id
    FROM orgs o WHERE o.id = $1::uuid
  UNION ALL
  SELECT 'blob', b.id, b.org_id, b.id, NULL, NULL FROM blobs b WHERE b.id = $1::uuid
  UNION ALL
  SELECT 'revision', r.id, b.org_id, b.id, r.id, NULL
    FROM revisions r JOIN blobs b ON b.id = r.blob_id WHERE r.id = $1::uuid
  UNION ALL
  SELECT 'session', s.id, b.org_id, b.id, r.id, s.id
    FROM sessions s JOIN revisions r ON r.id = s.revision_id JOIN blobs b ON b.id = r.blob_id WHERE s.id = $1::uuid
  UNION ALL
  SELECT 'definition', d.id, b.org_id, b.id, r.id, NULL
    FROM definitions d JOIN revisions r ON r.id = d.revision_id JOIN blobs b ON b.id = r.blob_id WHERE d.id = $1::uuid
  UNION ALL
  SELECT 'execution', e.id, b.org_id, b.id, r.id, s.id
    FROM executions e JOIN sessions s ON s.id = e.session_id JOIN revisions r ON r.id = s.revision_id
    JOIN blobs b ON b.id = r.blob_id WHERE e.id = $1::uuid
  UNION ALL
  SELECT 'schedule', sc.id, b.org_id, b.id, r.id, NULL
    FROM schedules sc JOIN revisions r ON r.id = sc.revision_id JOIN blobs b ON b.id = r.blob_id WHERE sc.id = $1::uuid
  LIMIT 1`;

/** The resource a UUID names, whatever its kind, with its organization, blob, revision and session; no access check. */
export async function findById(q: Queryable, id: string): Promise<FoundRow | undefined> {
  const { rows } = await preparedQuery<FoundRow>(q, 'cp_find_by_id', FIND_SQL, [id]);
  return rows[0];
}

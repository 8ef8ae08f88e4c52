import type { Queryable } from '../../shared/db/db.ts';
import type { SealedSecret } from '../../shared/crypto/credential-cipher.ts';
import type { Role } from '../../shared/roles.ts';
import { tableListing, type RecordSource } from './table-listing.ts';

export interface TriggerRow {
  id: string;
  revision_id: string;
  session_id: string;
  definition_id: string;
  created_by: string;
  acting_as: string;
  created_at: string;
  secret_set_at: string;
}

// The sealed secret is never selected here: no listing or answer can carry it by mistake.
const COLUMNS =
  't.id, t.revision_id, t.session_id, t.definition_id, t.created_by, t.acting_as, t.created_at, t.secret_set_at';

/** The path a trigger answers on, relative to the service's base URL. */
function triggerPath(id: string): string {
  return `/v1/hooks/${id}`;
}

/** The trigger record (docs/webhooks.md, "Triggers"): never its secret. */
export function triggerRecord(row: TriggerRow): Record<string, unknown> {
  return {
    id: row.id,
    path: triggerPath(row.id),
    revision_id: row.revision_id,
    session_id: row.session_id,
    definition_id: row.definition_id,
    created_by: row.created_by,
    acting_as: row.acting_as,
    created_at: row.created_at,
    secret_set_at: row.secret_set_at,
  };
}

export interface NewTrigger {
  /** Drawn at random by the caller: it is the URL, and the cipher's associated data. */
  id: string;
  revisionId: string;
  sessionId: string;
  definitionId: string;
  blobId: string;
  orgId: string;
  sealed: SealedSecret;
  createdBy: string;
}

export async function insertTrigger(q: Queryable, t: NewTrigger): Promise<TriggerRow> {
  const { rows } = await q.query<TriggerRow>(
    `INSERT INTO triggers AS t (id, revision_id, session_id, definition_id, blob_id, org_id, iv, auth_tag, ciphertext, created_by, acting_as)
     VALUES ($1::uuid, $2::uuid, $3::uuid, $4::uuid, $5::uuid, $6::uuid, $7::bytea, $8::bytea, $9::bytea, $10::uuid, $10::uuid)
     RETURNING ${COLUMNS}`,
    [
      t.id,
      t.revisionId,
      t.sessionId,
      t.definitionId,
      t.blobId,
      t.orgId,
      t.sealed.iv,
      t.sealed.authTag,
      t.sealed.ciphertext,
      t.createdBy,
    ],
  );
  return rows[0]!;
}

/** Triggers a session holds (for the TRIGGERS_PER_SESSION bound), its row locked by the caller. */
export async function countTriggers(q: Queryable, sessionId: string): Promise<number> {
  const { rows } = await q.query<{ n: number }>('SELECT count(*)::int AS n FROM triggers WHERE session_id = $1::uuid', [
    sessionId,
  ]);
  return rows[0]!.n;
}

/** The revision's trigger `id`, or undefined. */
export async function findTrigger(
  q: Queryable,
  revisionId: string,
  id: string,
  lock = false,
): Promise<TriggerRow | undefined> {
  const { rows } = await q.query<TriggerRow>(
    `SELECT ${COLUMNS} FROM triggers t WHERE t.id = $1::uuid AND t.revision_id = $2::uuid${lock ? ' FOR UPDATE' : ''}`,
    [id, revisionId],
  );
  return rows[0];
}

/** Seals a new secret on trigger `id`; its requests now act as `actingAs`. */
export async function setTriggerSecret(
  q: Queryable,
  id: string,
  sealed: SealedSecret,
  actingAs: string,
): Promise<TriggerRow> {
  const { rows } = await q.query<TriggerRow>(
    `UPDATE triggers t SET iv = $2::bytea, auth_tag = $3::bytea, ciphertext = $4::bytea, acting_as = $5::uuid, secret_set_at = now()
      WHERE t.id = $1::uuid RETURNING ${COLUMNS}`,
    [id, sealed.iv, sealed.authTag, sealed.ciphertext, actingAs],
  );
  return rows[0]!;
}

export async function deleteTrigger(q: Queryable, id: string): Promise<TriggerRow | undefined> {
  const { rows } = await q.query<TriggerRow>(`DELETE FROM triggers t WHERE t.id = $1::uuid RETURNING ${COLUMNS}`, [id]);
  return rows[0];
}

/** A session's triggers, newest first (record cursor). */
export function triggerListing(q: Queryable, sessionId: string): RecordSource<TriggerRow> {
  return tableListing<TriggerRow>(q, {
    table: 'triggers',
    alias: 't',
    columns: COLUMNS,
    scopeColumn: 'session_id',
    scopeId: sessionId,
  });
}

/** What a signed request needs of its trigger: where it runs, the sealed secret, and who it acts as. */
export interface TriggerTarget {
  id: string;
  revision_id: string;
  session_id: string;
  definition_id: string;
  blob_id: string;
  org_id: string;
  iv: Buffer;
  auth_tag: Buffer;
  ciphertext: Buffer;
  /** The acting account owns the session's organization. */
  acting_owns: boolean;
  /** Its highest membership on that organization or blob. */
  acting_role: Role | null;
}

/**
 * The trigger of a request, with the acting account's standing on the session's blob read in the
 * same statement (ownership of the organization, or the highest membership on it or on the blob),
 * as a schedule's fire reads it: the request runs with the standing of whoever set the secret.
 */
export async function triggerTarget(q: Queryable, id: string): Promise<TriggerTarget | undefined> {
  const { rows } = await q.query<TriggerTarget>(
    `SELECT t.id, t.revision_id, t.session_id, t.definition_id, t.blob_id, t.org_id, t.iv, t.auth_tag, t.ciphertext,
            o.owner_id = t.acting_as AS acting_owns,
            (SELECT m.role FROM memberships m
              WHERE m.user_id = t.acting_as AND (m.org_id = t.org_id OR m.blob_id = t.blob_id)
              ORDER BY array_position(ARRAY['read', 'write', 'admin'], m.role) DESC LIMIT 1) AS acting_role
       FROM triggers t JOIN orgs o ON o.id = t.org_id
      WHERE t.id = $1::uuid`,
    [id],
  );
  return rows[0];
}

/**
 * The execution a message already made, when the trigger accepted it within the replay window;
 * otherwise records it as making `executionId` and returns undefined. Older receipts of the
 * trigger go in the same statement, so they never accumulate past one window of traffic.
 */
export async function claimReceipt(
  q: Queryable,
  triggerId: string,
  messageId: string,
  windowSeconds: number,
): Promise<string | undefined> {
  // Two deliveries of one message at once wait for each other here: the second sees the first's receipt.
  await q.query('SELECT pg_advisory_xact_lock(hashtextextended($1::text, 31))', [`${triggerId}/${messageId}`]);
  await q.query(
    `DELETE FROM trigger_receipts WHERE trigger_id = $1::uuid AND received_at < now() - make_interval(secs => $2::int)`,
    [triggerId, windowSeconds * 2],
  );
  const { rows } = await q.query<{ execution_id: string }>(
    'SELECT execution_id FROM trigger_receipts WHERE trigger_id = $1::uuid AND message_id = $2',
    [triggerId, messageId],
  );
  return rows[0]?.execution_id;
}

/** Records that message `messageId` made `executionId` (in the transaction that took claimReceipt's lock). */
export async function insertReceipt(
  q: Queryable,
  triggerId: string,
  messageId: string,
  executionId: string,
): Promise<void> {
  await q.query(
    `INSERT INTO trigger_receipts (trigger_id, message_id, execution_id) VALUES ($1::uuid, $2, $3::uuid)
     ON CONFLICT (trigger_id, message_id) DO UPDATE SET execution_id = EXCLUDED.execution_id, received_at = now()`,
    [triggerId, messageId, executionId],
  );
}

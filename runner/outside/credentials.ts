/**
 * Credentials as workflows read them (`ctx.credentials.get(name)`, `{{credentials.NAME}}`): the
 * credential of that name stored on the session's blob, else on the blob's organization when it is
 * not restricted to other blobs. Never a credential of a user or of another organization: the
 * lookup is keyed by the execution's own blob and organization ids, which the runner read from the
 * execution row, never from the code.
 */
import type { Db } from '../../shared/db/db.ts';
import { createCredentialCipher, type CredentialCipher } from '../../shared/crypto/credential-cipher.ts';
import { ServiceError } from '../../shared/errors.ts';

/** The grammar of credential names (control-plane/routes/credentials.ts). */
const CREDENTIAL_NAME_RE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

/** Opens credentials for runs of one execution's blob and organization. */
export interface CredentialReader {
  /** The secret named `name`, or a `not_found` refusal naming what was looked for. */
  get(scope: { orgId: string; blobId: string }, name: string): Promise<string>;
}

/** A reader over `db` opening secrets with `CREDENTIAL_KEY`. */
export function credentialReader(db: Db, credentialKey: string): CredentialReader {
  const cipher: CredentialCipher = createCredentialCipher(credentialKey);
  return {
    async get(scope, name) {
      if (typeof name !== 'string' || !CREDENTIAL_NAME_RE.test(name))
        throw new ServiceError('invalid_request_body', 'A credential name is 1-128 characters of A-Z a-z 0-9 . _ -.');
      // The blob's own credential wins over the organization's of the same name.
      const { rows } = await db.query<{ id: string; iv: Buffer; auth_tag: Buffer; ciphertext: Buffer }>(
        `SELECT id, iv, auth_tag, ciphertext FROM credentials
          WHERE name = $3
            AND (blob_id = $2::uuid
                 OR (org_id = $1::uuid AND (blob_ids IS NULL OR $2::uuid = ANY (blob_ids))))
          ORDER BY (blob_id IS NOT NULL) DESC
          LIMIT 1`,
        [scope.orgId, scope.blobId, name],
      );
      const row = rows[0];
      if (!row)
        throw new ServiceError(
          'not_found',
          `No credential named ${name} is stored on this session's blob or its organization (or it is restricted to other blobs).`,
        );
      return cipher.decrypt({ iv: row.iv, authTag: row.auth_tag, ciphertext: row.ciphertext }, row.id);
    },
  };
}

import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';

/** A secret sealed with AES-256-GCM: all three parts are stored, none of them is the secret. */
export interface SealedSecret {
  iv: Buffer;
  authTag: Buffer;
  ciphertext: Buffer;
}

/** Seals and opens stored credentials. `aad` binds a sealed secret to its record (its id). */
export interface CredentialCipher {
  encrypt(plaintext: string, aad: string): SealedSecret;
  /** Throws when the key, the associated data or any stored part does not match. */
  decrypt(sealed: SealedSecret, aad: string): string;
}

const ALGORITHM = 'aes-256-gcm';
const IV_BYTES = 12;
// The info string versions the derivation: a new scheme takes a new info, never reuses this one.
const HKDF_INFO = 'workspace-service/credentials/aes-256-gcm/v1';

/**
 * Derives the 256-bit key from `CREDENTIAL_KEY` with HKDF-SHA256, so the configured secret may be
 * any length and is never used directly as an AES key. Each encryption draws a fresh 12-byte IV;
 * with random IVs a key should seal fewer than 2^32 secrets, far beyond what this store holds.
 */
export function createCredentialCipher(credentialKey: string): CredentialCipher {
  if (credentialKey.length === 0) throw new Error('CREDENTIAL_KEY is empty');
  const key = Buffer.from(hkdfSync('sha256', credentialKey, Buffer.alloc(0), HKDF_INFO, 32));
  return {
    encrypt(plaintext, aad) {
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv(ALGORITHM, key, iv);
      cipher.setAAD(Buffer.from(aad, 'utf8'));
      const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
      return { iv, authTag: cipher.getAuthTag(), ciphertext };
    },
    decrypt(sealed, aad) {
      try {
        // A pinned tag length refuses a truncated tag, which would weaken the forgery bound.
        const decipher = createDecipheriv(ALGORITHM, key, sealed.iv, { authTagLength: 16 });
        decipher.setAAD(Buffer.from(aad, 'utf8'));
        decipher.setAuthTag(sealed.authTag);
        return Buffer.concat([decipher.update(sealed.ciphertext), decipher.final()]).toString('utf8');
      } catch (error) {
        throw new Error('the credential could not be decrypted (wrong key or tampered record)', { cause: error });
      }
    },
  };
}

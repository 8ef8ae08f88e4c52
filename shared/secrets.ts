import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** Secret names as they appear in the environment and in `.data/secrets.json`. */
export const SECRET_NAMES = ['TOKEN_SIGNING_KEY', 'CURSOR_KEY', 'CREDENTIAL_KEY', 'OPS_TOKEN'] as const;
type SecretName = (typeof SECRET_NAMES)[number];
export type Secrets = Record<SecretName, string>;

/**
 * Secrets come from the environment. Any that is missing is read from `<dataDir>/secrets.json`,
 * which is generated once (random 32 bytes each, mode 0600) so local runs keep their tokens
 * valid across restarts. Several processes may race to create the file: `wx` lets one win and
 * the others read its content.
 */
export function loadSecrets(env: Record<string, string | undefined>, dataDir: string): Secrets {
  const fromEnv = Object.fromEntries(SECRET_NAMES.flatMap((n) => (env[n] ? [[n, env[n]]] : []))) as Partial<Secrets>;
  if (SECRET_NAMES.every((n) => fromEnv[n])) return fromEnv as Secrets;
  const file = join(dataDir, 'secrets.json');
  let stored: Partial<Secrets>;
  try {
    stored = JSON.parse(readFileSync(file, 'utf8')) as Partial<Secrets>;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw new Error(`cannot read ${file}`, { cause: error });
    mkdirSync(dataDir, { recursive: true });
    const generated = Object.fromEntries(
      SECRET_NAMES.map((n) => [n, randomBytes(32).toString('base64url')]),
    ) as Secrets;
    try {
      writeFileSync(file, JSON.stringify(generated, null, 2) + '\n', { flag: 'wx', mode: 0o600 });
      stored = generated;
    } catch (raced) {
      if ((raced as NodeJS.ErrnoException).code !== 'EEXIST') throw raced;
      stored = JSON.parse(readFileSync(file, 'utf8')) as Partial<Secrets>;
    }
  }
  for (const n of SECRET_NAMES) {
    if (!fromEnv[n] && !stored[n]) throw new Error(`secret ${n} is missing from the environment and ${file}`);
  }
  return { ...stored, ...fromEnv } as Secrets;
}

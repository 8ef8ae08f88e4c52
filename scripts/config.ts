/**
 * `npm run config`: the configuration this machine's environment resolves to, as JSON, secrets
 * masked (whether each came from the environment or DATA_DIR/secrets.json is shown, never its
 * value); an invalid configuration prints every problem and exits 2, as the processes do.
 */
import { join } from 'node:path';
import { loadConfigOrExit } from '../shared/config.ts';
import { SECRET_NAMES } from '../shared/secrets.ts';

const config = loadConfigOrExit();
// The file's absolute path, so a script can read OPS_TOKEN from it whatever DATA_DIR is.
const secretsFile = join(config.dataDir, 'secrets.json');
const masked = Object.fromEntries(
  SECRET_NAMES.map((name) => [name, process.env[name] ? '(set in the environment)' : `(from ${secretsFile})`]),
);
const databaseUrl =
  config.databaseUrl === undefined
    ? '(unset: the embedded PostgreSQL)'
    : config.databaseUrl.replace(/\/\/([^:/@]+):[^@]*@/, '//$1:***@');
const modelStore =
  config.modelStore === null
    ? 'postgres'
    : { ...config.modelStore, secretAccessKey: config.modelStore.secretAccessKey ? '***' : undefined };
process.stdout.write(
  `${JSON.stringify({ ...config, databaseUrl, secretsFile, secrets: masked, modelStore }, null, 2)}\n`,
);

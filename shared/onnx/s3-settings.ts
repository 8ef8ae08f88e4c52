/**
 * Where model bytes live (docs/blob-types.md "Storage"): PostgreSQL large objects by default, or an
 * S3-compatible bucket when `MODEL_STORE=s3`. Read from the environment by every process that
 * touches model bytes (the control plane, its model host, the runners' model hosts).
 */
export interface S3Settings {
  bucket: string;
  region: string;
  /** An S3-compatible endpoint (MinIO, s3rver, R2...); unset: AWS. */
  endpoint: string | undefined;
  accessKeyId: string | undefined;
  secretAccessKey: string | undefined;
  /** Path-style URLs (`endpoint/bucket/key`), as most S3-compatible servers want. */
  forcePathStyle: boolean;
  /** Key prefix of model objects. */
  prefix: string;
}

/** The S3 settings when `MODEL_STORE=s3`, null for the default store; throws on an incomplete setting. */
export function s3SettingsFrom(env: Record<string, string | undefined>): S3Settings | null {
  const store = env.MODEL_STORE ?? 'postgres';
  if (store === 'postgres') return null;
  if (store !== 's3') throw new Error(`MODEL_STORE must be postgres or s3, got ${store}`);
  const bucket = env.S3_BUCKET ?? '';
  if (bucket === '') throw new Error('MODEL_STORE=s3 needs S3_BUCKET');
  return {
    bucket,
    region: env.S3_REGION || 'us-east-1',
    endpoint: env.S3_ENDPOINT || undefined,
    accessKeyId: env.S3_ACCESS_KEY_ID || undefined,
    secretAccessKey: env.S3_SECRET_ACCESS_KEY || undefined,
    forcePathStyle: env.S3_FORCE_PATH_STYLE !== 'false',
    prefix: env.S3_PREFIX ?? 'models/',
  };
}

/** The settings as the environment of a child process (the model host). */
export function s3Env(settings: S3Settings | null): Record<string, string> {
  if (settings === null) return { MODEL_STORE: 'postgres' };
  return {
    MODEL_STORE: 's3',
    S3_BUCKET: settings.bucket,
    S3_REGION: settings.region,
    S3_FORCE_PATH_STYLE: String(settings.forcePathStyle),
    S3_PREFIX: settings.prefix,
    ...(settings.endpoint ? { S3_ENDPOINT: settings.endpoint } : {}),
    ...(settings.accessKeyId ? { S3_ACCESS_KEY_ID: settings.accessKeyId } : {}),
    ...(settings.secretAccessKey ? { S3_SECRET_ACCESS_KEY: settings.secretAccessKey } : {}),
  };
}

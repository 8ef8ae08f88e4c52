-- Memberships, API keys and stored credentials. Each row names its target through one foreign key
-- per target kind, so deleting an organization, blob or user removes what was granted on it in
-- the same statement, and a key or membership whose account is deleted or retired goes with it.

-- A membership gives `role` on an organization (and every blob in it) or on one blob.
CREATE TABLE memberships (
  id         uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  org_id     uuid REFERENCES orgs (id) ON DELETE CASCADE,
  blob_id    uuid REFERENCES blobs (id) ON DELETE CASCADE,
  user_id    uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  role       text NOT NULL CHECK (role IN ('read', 'write', 'admin')),
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  CHECK ((org_id IS NULL) <> (blob_id IS NULL))
);
-- One membership per account and target; these are also the upsert's conflict targets and serve
-- the standing lookup (target + user).
CREATE UNIQUE INDEX memberships_org_user_key ON memberships (org_id, user_id) WHERE org_id IS NOT NULL;
CREATE UNIQUE INDEX memberships_blob_user_key ON memberships (blob_id, user_id) WHERE blob_id IS NOT NULL;
CREATE INDEX memberships_user_idx ON memberships (user_id);

-- An API key is `wsk_<public_id>_<secret>`. Only a SHA-256 of the whole key is stored; the key is
-- found by `public_id` and the hash compared in constant time. `user_id` is the account the key
-- authenticates as: the target account for a `user` key, the minter for an organization or blob key.
CREATE TABLE api_keys (
  id             uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  public_id      text NOT NULL UNIQUE,
  secret_hash    bytea NOT NULL,
  name           text NOT NULL DEFAULT '',
  target         text NOT NULL CHECK (target IN ('organization', 'blob', 'user')),
  org_id         uuid REFERENCES orgs (id) ON DELETE CASCADE,
  blob_id        uuid REFERENCES blobs (id) ON DELETE CASCADE,
  target_user_id uuid REFERENCES users (id) ON DELETE CASCADE,
  role           text NOT NULL CHECK (role IN ('read', 'write', 'admin')),
  user_id        uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  created_by     uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  created_at     timestamptz NOT NULL DEFAULT now(),
  last_used_at   timestamptz,
  CHECK (num_nonnulls(org_id, blob_id, target_user_id) = 1),
  CHECK ((target = 'organization') = (org_id IS NOT NULL)),
  CHECK ((target = 'blob') = (blob_id IS NOT NULL)),
  CHECK ((target = 'user') = (target_user_id IS NOT NULL))
);
CREATE INDEX api_keys_org_idx ON api_keys (org_id) WHERE org_id IS NOT NULL;
CREATE INDEX api_keys_blob_idx ON api_keys (blob_id) WHERE blob_id IS NOT NULL;
CREATE INDEX api_keys_target_user_idx ON api_keys (target_user_id) WHERE target_user_id IS NOT NULL;
CREATE INDEX api_keys_user_idx ON api_keys (user_id);
CREATE INDEX api_keys_created_by_idx ON api_keys (created_by);

-- A stored secret for the runners (AES-256-GCM; the row id is the associated data, so a sealed
-- secret copied onto another row does not decrypt). Names are unique per target.
CREATE TABLE credentials (
  id             uuid PRIMARY KEY,
  name           text NOT NULL,
  target         text NOT NULL CHECK (target IN ('organization', 'blob', 'user')),
  org_id         uuid REFERENCES orgs (id) ON DELETE CASCADE,
  blob_id        uuid REFERENCES blobs (id) ON DELETE CASCADE,
  target_user_id uuid REFERENCES users (id) ON DELETE CASCADE,
  iv             bytea NOT NULL,
  auth_tag       bytea NOT NULL,
  ciphertext     bytea NOT NULL,
  created_by     uuid REFERENCES users (id) ON DELETE SET NULL,
  created_at     timestamptz NOT NULL DEFAULT now(),
  CHECK (num_nonnulls(org_id, blob_id, target_user_id) = 1),
  CHECK ((target = 'organization') = (org_id IS NOT NULL)),
  CHECK ((target = 'blob') = (blob_id IS NOT NULL)),
  CHECK ((target = 'user') = (target_user_id IS NOT NULL))
);
CREATE UNIQUE INDEX credentials_org_name_key ON credentials (org_id, name) WHERE org_id IS NOT NULL;
CREATE UNIQUE INDEX credentials_blob_name_key ON credentials (blob_id, name) WHERE blob_id IS NOT NULL;
CREATE UNIQUE INDEX credentials_user_name_key ON credentials (target_user_id, name) WHERE target_user_id IS NOT NULL;

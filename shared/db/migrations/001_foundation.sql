-- Accounts, organizations, blobs, revisions, metadata, refresh tokens and runner registrations.
-- Deletes cascade down the ownership tree so "delete with everything inside" is one statement.

CREATE TABLE users (
  id           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  alias        text UNIQUE,
  name         text NOT NULL DEFAULT '',
  kind         text NOT NULL CHECK (kind IN ('human', 'service')),
  email        text,
  anonymous    boolean NOT NULL DEFAULT false,
  owner_id     uuid REFERENCES users (id) ON DELETE CASCADE,
  oidc_issuer  text,
  oidc_subject text,
  created_at   timestamptz NOT NULL DEFAULT now(),
  UNIQUE (oidc_issuer, oidc_subject),
  CHECK ((kind = 'service') = (owner_id IS NOT NULL))
);
CREATE INDEX users_owner_idx ON users (owner_id) WHERE owner_id IS NOT NULL;

CREATE TABLE orgs (
  id         uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  alias      text NOT NULL UNIQUE,
  name       text NOT NULL DEFAULT '',
  visibility text NOT NULL DEFAULT 'private' CHECK (visibility IN ('private', 'public')),
  owner_id   uuid NOT NULL REFERENCES users (id),
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX orgs_owner_idx ON orgs (owner_id);

CREATE TABLE blobs (
  id         uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  alias      text NOT NULL UNIQUE,
  org_id     uuid NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
  type       text NOT NULL,
  name       text NOT NULL DEFAULT '',
  visibility text NOT NULL DEFAULT 'private' CHECK (visibility IN ('private', 'public')),
  status     text NOT NULL DEFAULT 'ready' CHECK (status IN ('ready', 'failed')),
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX blobs_org_idx ON blobs (org_id, created_at);

CREATE TABLE revisions (
  id         uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  blob_id    uuid NOT NULL REFERENCES blobs (id) ON DELETE CASCADE,
  number     integer NOT NULL,
  status     text NOT NULL DEFAULT 'ready' CHECK (status IN ('pending', 'ready', 'failed')),
  created_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (blob_id, number)
);

CREATE TABLE blob_metadata (
  blob_id    uuid NOT NULL REFERENCES blobs (id) ON DELETE CASCADE,
  alias      text NOT NULL,
  entries    jsonb NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (blob_id, alias)
);

CREATE TABLE revision_metadata (
  revision_id uuid NOT NULL REFERENCES revisions (id) ON DELETE CASCADE,
  alias       text NOT NULL,
  entries     jsonb NOT NULL,
  updated_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (revision_id, alias)
);

-- Only a hash of each refresh token is stored. A family is one sign-in's chain of rotations:
-- presenting a rotated token again revokes the whole family.
CREATE TABLE refresh_tokens (
  id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  user_id     uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  family_id   uuid NOT NULL,
  token_hash  bytea NOT NULL UNIQUE,
  created_at  timestamptz NOT NULL DEFAULT now(),
  expires_at  timestamptz NOT NULL,
  rotated_at  timestamptz,
  revoked_at  timestamptz
);
CREATE INDEX refresh_tokens_family_idx ON refresh_tokens (family_id);

-- Each runner process registers itself and heartbeats; the ops API lists them.
CREATE TABLE runners (
  id           uuid PRIMARY KEY,
  host         text NOT NULL,
  pid          integer NOT NULL,
  version      text NOT NULL,
  started_at   timestamptz NOT NULL DEFAULT now(),
  heartbeat_at timestamptz NOT NULL DEFAULT now(),
  stopped_at   timestamptz
);

-- Limit overrides set by the operator (ops API), and their history. The catalog itself (defaults,
-- most permissive values, Set on) lives in code, shared/limits/catalog.ts: a catalog change is a
-- deploy, not a migration. Values are validated on write against that catalog.

-- One override: the value of one limit for one user, organization or blob. `value` is JSON as the
-- limit takes it (integer, boolean, list of module names); JSON `null` is a real value (retention:
-- kept forever), so the column is NOT NULL and "no override" is the absence of a row.
-- The generated columns give each target kind a foreign key, so deleting a user, organization or
-- blob removes its overrides in the same statement (ids are never reused, but rows should not
-- outlive what they name).
CREATE TABLE limit_overrides (
  limit_id    text NOT NULL,
  target_type text NOT NULL CHECK (target_type IN ('user', 'org', 'blob')),
  target_id   uuid NOT NULL,
  value       jsonb NOT NULL,
  set_by      text NOT NULL,
  set_at      timestamptz NOT NULL DEFAULT now(),
  user_id     uuid GENERATED ALWAYS AS (CASE WHEN target_type = 'user' THEN target_id END) STORED
              REFERENCES users (id) ON DELETE CASCADE,
  org_id      uuid GENERATED ALWAYS AS (CASE WHEN target_type = 'org' THEN target_id END) STORED
              REFERENCES orgs (id) ON DELETE CASCADE,
  blob_id     uuid GENERATED ALWAYS AS (CASE WHEN target_type = 'blob' THEN target_id END) STORED
              REFERENCES blobs (id) ON DELETE CASCADE,
  -- Leading with the target serves the per-request read: every override of one target.
  PRIMARY KEY (target_type, target_id, limit_id)
);
-- The ops API lists who has an override of a given limit.
CREATE INDEX limit_overrides_limit_idx ON limit_overrides (limit_id);
-- The cascades look rows up by these.
CREATE INDEX limit_overrides_user_idx ON limit_overrides (user_id) WHERE user_id IS NOT NULL;
CREATE INDEX limit_overrides_org_idx ON limit_overrides (org_id) WHERE org_id IS NOT NULL;
CREATE INDEX limit_overrides_blob_idx ON limit_overrides (blob_id) WHERE blob_id IS NOT NULL;

-- Every set and clear, with the value before and after (SQL NULL: no override; JSON null: the
-- value null). No foreign keys: the history outlives the targets it names, like audit_log.
CREATE TABLE limit_override_changes (
  id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  limit_id    text NOT NULL,
  target_type text NOT NULL CHECK (target_type IN ('user', 'org', 'blob')),
  target_id   uuid NOT NULL,
  action      text NOT NULL CHECK (action IN ('set', 'clear')),
  old_value   jsonb,
  new_value   jsonb,
  changed_by  text NOT NULL,
  changed_at  timestamptz NOT NULL DEFAULT now(),
  CHECK ((action = 'set') = (new_value IS NOT NULL))
);
CREATE INDEX limit_override_changes_target_idx ON limit_override_changes (target_type, target_id, changed_at);

-- Model bytes in an S3-compatible bucket (MODEL_STORE=s3, docs/blob-types.md "Storage"): the row
-- names the object instead of a large object. An object cannot be deleted from inside PostgreSQL,
-- so a row that goes or changes leaves its key here, and the control plane deletes those objects.
ALTER TABLE models ADD COLUMN object_key text;
ALTER TABLE models DROP CONSTRAINT models_check;
ALTER TABLE models ADD CONSTRAINT models_bytes_check CHECK (((oid IS NULL) AND (object_key IS NULL)) = (error IS NOT NULL) AND (oid IS NULL OR object_key IS NULL));

CREATE TABLE model_object_deletions (
  object_key text PRIMARY KEY,
  queued_at  timestamptz NOT NULL DEFAULT now()
);

CREATE OR REPLACE FUNCTION models_unlink_bytes() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF OLD.oid IS NOT NULL AND (TG_OP = 'DELETE' OR NEW.oid IS DISTINCT FROM OLD.oid) THEN
    PERFORM lo_unlink(OLD.oid);
  END IF;
  IF OLD.object_key IS NOT NULL AND (TG_OP = 'DELETE' OR NEW.object_key IS DISTINCT FROM OLD.object_key) THEN
    INSERT INTO model_object_deletions (object_key) VALUES (OLD.object_key) ON CONFLICT DO NOTHING;
  END IF;
  RETURN NULL;
END $$;

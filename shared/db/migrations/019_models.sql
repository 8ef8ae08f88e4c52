-- ONNX models (docs/blob-types.md "ONNX models"): the bytes of a revision's model in a PostgreSQL
-- large object (one database holds everything and every host reads it), with what ONNX Runtime
-- reported when it opened it. A model that could not be opened keeps no bytes: `oid` is null and
-- `error` says why (the revision is `failed`).
CREATE TABLE models (
  revision_id uuid PRIMARY KEY REFERENCES revisions (id) ON DELETE CASCADE,
  oid         oid,
  size        bigint NOT NULL,
  sha256      text NOT NULL,
  inputs      jsonb,
  outputs     jsonb,
  error       text,
  created_at  timestamptz NOT NULL DEFAULT now(),
  CHECK ((oid IS NULL) = (error IS NOT NULL))
);

-- A large object is not owned by the row naming it: unlink it when the row goes or is replaced.
CREATE FUNCTION models_unlink_bytes() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF OLD.oid IS NOT NULL AND (TG_OP = 'DELETE' OR NEW.oid IS DISTINCT FROM OLD.oid) THEN
    PERFORM lo_unlink(OLD.oid);
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER models_unlink_bytes AFTER UPDATE OR DELETE ON models FOR EACH ROW EXECUTE FUNCTION models_unlink_bytes();

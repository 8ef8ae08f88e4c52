-- An organization's credential may be restricted to named blobs of the organization: only runs of
-- those blobs' sessions resolve it. NULL: every blob of the organization.
ALTER TABLE credentials ADD COLUMN blob_ids uuid[];
ALTER TABLE credentials ADD CONSTRAINT credentials_blob_ids_org_only CHECK (blob_ids IS NULL OR target = 'organization');

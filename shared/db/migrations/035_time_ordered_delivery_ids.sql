-- Event hook deliveries and their attempts are appended with every ended execution a hook
-- subscribes to, like the rows of migration 023: time-ordered UUIDv7 ids (uuid_v7(), that
-- migration's function) put each insert on the right-hand pages of their primary keys instead of
-- a random page. A delivery's id is its `webhook-id` header: still a canonical UUID, unique per
-- message. Rows that exist keep their ids.
ALTER TABLE hook_deliveries ALTER COLUMN id SET DEFAULT uuid_v7();
ALTER TABLE hook_attempts ALTER COLUMN id SET DEFAULT uuid_v7();

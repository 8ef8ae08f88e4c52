-- Session contents: keyset positions for the opaque-cursor listings of objects and thread items.

-- An object's position in list_session_objects. Taken when its alias is first written and kept
-- when the alias is replaced, so a page walk sees every alias once and new aliases at the end.
ALTER TABLE session_objects ADD COLUMN seq bigint GENERATED ALWAYS AS IDENTITY;
CREATE INDEX session_objects_listing_idx ON session_objects (session_id, seq);

-- list_session_thread_items without a thread filter walks every thread of a session by seq.
CREATE INDEX thread_items_session_idx ON thread_items (session_id, seq);

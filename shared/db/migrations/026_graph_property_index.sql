-- A graph query's start by label with `where` (and a step's node filter) matched the properties
-- by reading every node of the label in the session and discarding the others: work in
-- proportion to the label's size (a 60,000-element graph read thousands of rows for one match).
-- A GIN index of the properties' paths answers `properties @> $where` directly; the planner
-- combines it with the (scope, kind, label) index or takes whichever is narrower.
CREATE INDEX graph_elements_properties_idx ON graph_elements USING gin (properties jsonb_path_ops);
CREATE INDEX revision_graph_elements_properties_idx ON revision_graph_elements USING gin (properties jsonb_path_ops);

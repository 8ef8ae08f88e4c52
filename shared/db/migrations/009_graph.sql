-- Session graphs: keyset order for list_session_graph_neighbors. A node's edges are read in the
-- edges' seq order after a position, so each page is an index range scan however many edges the
-- node has (the (session_id, source|target, label) indexes of 005 serve the query hops).
CREATE INDEX graph_edges_out_seq_idx ON graph_elements (session_id, source, seq) WHERE kind = 'edge';
CREATE INDEX graph_edges_in_seq_idx ON graph_elements (session_id, target, seq) WHERE kind = 'edge';

-- An execution row is updated several times in its life (claim, every node step, end). Leaving a
-- quarter of each page free lets those updates stay on the page as HOT updates, which write no
-- index entries; a full page forces a new tuple elsewhere plus an entry in every index.
ALTER TABLE executions SET (fillfactor = 75);

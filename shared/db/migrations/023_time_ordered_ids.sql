-- Time-ordered identifiers for the rows that are appended all day: executions (and through their
-- ids the execution_events index on execution_id), sessions, session objects, thread items and
-- schedule runs. A random v4 id puts every insert on a random page of each index on it; once those
-- indexes outgrow shared_buffers, every insert reads a page and writes a full-page image (a year
-- of history measured 1.3 of them and 15.9 KB of WAL per execution). A UUIDv7 starts with the
-- Unix time in milliseconds, so new rows land on the right-hand pages that are already in memory.
--
-- uuid_v7() is built from gen_random_uuid() (PostgreSQL 13+) rather than PostgreSQL 18's uuidv7(),
-- so every supported server has it: the first 48 bits become the millisecond clock, and setting
-- bits 52 and 53 turns the version nibble from 4 (0100) into 7 (0111); the variant bits and the
-- other 74 random bits stay as gen_random_uuid() drew them. Ids are still canonical lower-case
-- UUIDs (docs/resources.md, "Common rules"); rows that exist keep their ids.
CREATE FUNCTION uuid_v7() RETURNS uuid
  LANGUAGE sql VOLATILE PARALLEL SAFE
AS $$
  SELECT encode(
    set_bit(
      set_bit(
        overlay(uuid_send(gen_random_uuid())
                PLACING substring(int8send((extract(epoch FROM clock_timestamp()) * 1000)::bigint) FROM 3)
                FROM 1 FOR 6),
        52, 1),
      53, 1),
    'hex')::uuid
$$;

ALTER TABLE executions ALTER COLUMN id SET DEFAULT uuid_v7();
ALTER TABLE sessions ALTER COLUMN id SET DEFAULT uuid_v7();
ALTER TABLE session_objects ALTER COLUMN id SET DEFAULT uuid_v7();
ALTER TABLE thread_items ALTER COLUMN id SET DEFAULT uuid_v7();
ALTER TABLE schedule_runs ALTER COLUMN id SET DEFAULT uuid_v7();

-- An episode's project in its owner's postings, so that a project's full-text candidates are
-- found by the index alone.
--
-- A read with a project P keeps P's episodes and those of no project. The text query found
-- a word's episodes through `owner_tsv` (migration 0012) and checked the project on each row
-- it read: with half of a user's 100,000 episodes elsewhere, it read two rows for every one it
-- kept (979 heap rows for 500 in `EXPLAIN ANALYZE`), 0.8 of a 1.6 ms selection. Each row's
-- `owner_tsv` now also holds one lexeme naming its project, "<tag>: project P", or
-- "<tag>: no project". A parser never makes a lexeme with a space in it, so neither can be a
-- word. A query that may read many rows adds `& ('<tag>: project P' | '<tag>: no project')`
-- to its words, and the index returns only the rows it keeps (`many_rows` in
-- sinks/postgres/queries/retrieval.py: for a handful of rows the project's long postings cost
-- the index more than the rows they spare).
--
-- The column is redefined, which rewrites the table and rebuilds the index once, under an
-- exclusive lock (docs/operations.md, "Upgrades and schema migrations").

CREATE FUNCTION memstream_owner_tsv(tenant text, owner text, project text, config regconfig, content text)
RETURNS tsvector
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN memstream_owner_tsv(tenant, owner, config, content)
    || array_to_tsvector(ARRAY[memstream_owner_tag(tenant, owner) || coalesce(': project ' || project, ': no project')]);

ALTER TABLE episodes DROP COLUMN owner_tsv;
ALTER TABLE episodes ADD COLUMN owner_tsv tsvector
    GENERATED ALWAYS AS (memstream_owner_tsv(tenant_id, user_id, project_id, text_config, content)) STORED;
CREATE INDEX episodes_owner_lexemes ON episodes USING gin (owner_tsv);

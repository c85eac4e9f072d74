-- Full-text candidates of one user through postings of that user alone.
--
-- The GIN index of migration 0009 keys episodes by (tenant_id, user_id, tsv): to find one
-- user's episodes holding a word it intersects the word's postings with the tenant's and the
-- user's, which hold every row of them (100k entries for a user of 100k episodes: 2.7 ms of
-- a 3.2 ms index scan). Here each lexeme is stored a second time, prefixed with a tag of its
-- owner ("<tag>:deploy"), so a word's postings are already one user's. The tag is a hash: two
-- owners sharing one (1 in 2^64) only read each other's rows into a candidate set that the
-- query's tenant and user conditions, and row-level security, then filter out.
--
-- No positions (the index only filters; ranking reads tsv), and the tag is computed by the
-- database (memstream_owner_tag) for the query too, so there is one definition of it.

CREATE FUNCTION memstream_owner_tag(tenant text, owner text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN left(md5(tenant || chr(31) || owner), 16);

CREATE FUNCTION memstream_owner_tsv(tenant text, owner text, config regconfig, content text) RETURNS tsvector
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN array_to_tsvector(ARRAY(
    SELECT memstream_owner_tag(tenant, owner) || ':' || lexeme
      FROM unnest(tsvector_to_array(to_tsvector(config, content))) AS lexeme
));

ALTER TABLE episodes ADD COLUMN owner_tsv tsvector
    GENERATED ALWAYS AS (memstream_owner_tsv(tenant_id, user_id, text_config, content)) STORED;
CREATE INDEX episodes_owner_lexemes ON episodes USING gin (owner_tsv);
DROP INDEX episodes_owner_tsv;

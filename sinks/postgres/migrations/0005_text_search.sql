-- Full text in the tenant's language: each row remembers the text-search configuration it was
-- indexed with, and its tsvector follows it (changing a tenant's language re-indexes its rows
-- by updating that one column).

ALTER TABLE tenant_settings ADD COLUMN text_search_config regconfig;

-- The configuration of a new row: the tenant's, else the deployment's (the connection's
-- memstream.text_search_config, set from MEMSTREAM_TEXT_SEARCH_CONFIG), else english.
CREATE FUNCTION memstream_text_config() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.text_config IS NULL THEN
        NEW.text_config := coalesce(
            (SELECT s.text_search_config FROM tenant_settings s WHERE s.tenant_id = NEW.tenant_id),
            nullif(current_setting('memstream.text_search_config', true), '')::regconfig,
            'english'::regconfig);
    END IF;
    RETURN NEW;
END
$$;

ALTER TABLE episodes DROP COLUMN tsv;
ALTER TABLE episodes ADD COLUMN text_config regconfig;
UPDATE episodes SET text_config = 'english';
ALTER TABLE episodes ALTER COLUMN text_config SET NOT NULL;
ALTER TABLE episodes ADD COLUMN tsv tsvector GENERATED ALWAYS AS (to_tsvector(text_config, content)) STORED;
CREATE INDEX episodes_tsv ON episodes USING gin (tsv);
-- Bulk inserts set text_config once per batch (sinks/postgres/episodes.py); the trigger
-- covers every other insert, and costs nothing when the column is set.
CREATE TRIGGER episodes_text_config BEFORE INSERT ON episodes
    FOR EACH ROW WHEN (NEW.text_config IS NULL) EXECUTE FUNCTION memstream_text_config();

ALTER TABLE facts DROP COLUMN tsv;
ALTER TABLE facts ADD COLUMN text_config regconfig;
UPDATE facts SET text_config = 'english';
ALTER TABLE facts ALTER COLUMN text_config SET NOT NULL;
ALTER TABLE facts ADD COLUMN tsv tsvector
    GENERATED ALWAYS AS (to_tsvector(text_config, entity || ' ' || summary)) STORED;
CREATE INDEX facts_tsv ON facts USING gin (tsv);
CREATE TRIGGER facts_text_config BEFORE INSERT ON facts
    FOR EACH ROW WHEN (NEW.text_config IS NULL) EXECUTE FUNCTION memstream_text_config();

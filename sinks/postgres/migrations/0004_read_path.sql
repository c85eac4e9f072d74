-- The read path: per-tenant ranking settings, and indexes the filters use.

ALTER TABLE tenant_settings
    ADD COLUMN rrf_vector_weight    real CHECK (rrf_vector_weight >= 0),
    ADD COLUMN rrf_text_weight      real CHECK (rrf_text_weight >= 0),
    ADD COLUMN search_half_life_days real CHECK (search_half_life_days > 0);

CREATE INDEX episodes_tags ON episodes USING gin (tags);
CREATE INDEX facts_owner ON facts (tenant_id, user_id, embedding_model) WHERE valid_to IS NULL;

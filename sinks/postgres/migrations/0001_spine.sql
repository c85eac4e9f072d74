-- The spine: the durable event log and episodic memory.
-- Runs as the owner role. The app role gets privileges from the migrator (grants.py),
-- never ownership.

CREATE EXTENSION IF NOT EXISTS vector;

-- Every accepted event, append-only. This is the durable history that replay and
-- audit consumers read (the embedded broker keeps nothing across a restart).
CREATE TABLE event_log (
    tenant_id        text        NOT NULL,
    event_id         uuid        NOT NULL,
    seq              bigint      GENERATED ALWAYS AS IDENTITY,
    agent_id         text        NOT NULL,
    user_id          text        NOT NULL,
    project_id       text,
    session_id       text        NOT NULL,
    role             text        NOT NULL,
    content          text        NOT NULL,
    event_time       timestamptz NOT NULL,
    tool_name        text,
    tool_status      text,
    tags             text[]      NOT NULL DEFAULT '{}',
    metadata         jsonb       NOT NULL DEFAULT '{}',
    schema_id        integer     NOT NULL,
    source_topic     text        NOT NULL,
    source_partition integer     NOT NULL,
    source_offset    bigint      NOT NULL,
    recorded_at      timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (tenant_id, event_id)
);
CREATE UNIQUE INDEX event_log_seq ON event_log (seq);
CREATE INDEX event_log_session ON event_log (tenant_id, session_id, event_time);
CREATE INDEX event_log_user ON event_log (tenant_id, user_id, event_time);

CREATE FUNCTION memstream_forbid_change() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'table % is append-only: % is not allowed', TG_TABLE_NAME, TG_OP
        USING ERRCODE = 'insufficient_privilege';
END
$$;

CREATE TRIGGER event_log_no_update BEFORE UPDATE OR DELETE ON event_log
    FOR EACH ROW EXECUTE FUNCTION memstream_forbid_change();
CREATE TRIGGER event_log_no_truncate BEFORE TRUNCATE ON event_log
    FOR EACH STATEMENT EXECUTE FUNCTION memstream_forbid_change();

-- Episodic memory: one row per turn, embedded, full-text indexed.
-- The vector column has no fixed dimension so models can change; every row records
-- its model and dimension, and search only compares vectors of the model in use.
CREATE TABLE episodes (
    tenant_id       text        NOT NULL,
    event_id        uuid        NOT NULL,
    agent_id        text        NOT NULL,
    user_id         text        NOT NULL,
    project_id      text,
    session_id      text        NOT NULL,
    role            text        NOT NULL,
    memory_type     text        NOT NULL DEFAULT 'episodic',
    content         text        NOT NULL,
    token_count     integer     NOT NULL,
    importance      real        NOT NULL DEFAULT 0.5 CHECK (importance BETWEEN 0 AND 1),
    tags            text[]      NOT NULL DEFAULT '{}',
    metadata        jsonb       NOT NULL DEFAULT '{}',
    embedding       vector      NOT NULL,
    embedding_model text        NOT NULL,
    embedding_dim   integer     NOT NULL,
    tsv             tsvector    GENERATED ALWAYS AS (to_tsvector('english'::regconfig, content)) STORED,
    created_at      timestamptz NOT NULL,
    ingested_at     timestamptz NOT NULL DEFAULT clock_timestamp(),
    expires_at      timestamptz,
    PRIMARY KEY (tenant_id, event_id),
    CONSTRAINT episodes_dim_matches CHECK (vector_dims(embedding) = embedding_dim)
);
-- Exact vector search scans one user's rows through this index (see README: vector index).
CREATE INDEX episodes_owner ON episodes (tenant_id, user_id, embedding_model, project_id);
CREATE INDEX episodes_tsv ON episodes USING gin (tsv);
CREATE INDEX episodes_expiry ON episodes (expires_at) WHERE expires_at IS NOT NULL;

-- Long-term memory: versioned facts, the relational graph, procedural skills, access
-- statistics, archiving, and per-tenant retention policy.

-- Tenants the pipeline has seen (ids only, no content: maintenance iterates over them).
CREATE TABLE tenants (
    tenant_id  text        PRIMARY KEY,
    first_seen timestamptz NOT NULL DEFAULT now()
);

-- Episodes: access statistics (forgetting "not accessed for N days") and archiving
-- (compaction keeps the originals, no longer served, behind the summary that replaced them).
ALTER TABLE episodes
    ADD COLUMN last_accessed_at timestamptz,
    ADD COLUMN access_count     integer     NOT NULL DEFAULT 0,
    ADD COLUMN archived_at      timestamptz,
    ADD COLUMN archived_into    uuid;
CREATE INDEX episodes_user_day ON episodes (tenant_id, user_id, created_at) WHERE archived_at IS NULL;

-- Semantic memory ------------------------------------------------------------------------
-- One current version per (tenant, user, subject_key); older versions stay as history with
-- when (valid_from/valid_to), why (change_reason) and which event changed them.
CREATE TABLE facts (
    tenant_id        text        NOT NULL,
    fact_id          uuid        NOT NULL,
    user_id          text        NOT NULL,
    agent_id         text        NOT NULL,
    session_id       text        NOT NULL,
    project_id       text,
    scope            text        NOT NULL CHECK (scope IN ('global', 'project', 'session')),
    subject_key      text        NOT NULL,
    entity           text        NOT NULL,
    category         text        NOT NULL,
    summary          text        NOT NULL,
    importance       real        NOT NULL DEFAULT 0.5 CHECK (importance BETWEEN 0 AND 1),
    shared           boolean     NOT NULL DEFAULT false,
    embedding        vector      NOT NULL,
    embedding_model  text        NOT NULL,
    embedding_dim    integer     NOT NULL,
    tsv              tsvector    GENERATED ALWAYS AS (
                         to_tsvector('english'::regconfig, entity || ' ' || summary)) STORED,
    version          integer     NOT NULL,
    valid_from       timestamptz NOT NULL,
    valid_to         timestamptz,
    superseded_by    uuid,
    change_reason    text        NOT NULL,
    source_event_id  uuid        NOT NULL,
    sources          uuid[]      NOT NULL DEFAULT '{}',
    extractor        text        NOT NULL,
    recorded_at      timestamptz NOT NULL DEFAULT clock_timestamp(),
    expires_at       timestamptz,
    last_accessed_at timestamptz,
    access_count     integer     NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant_id, fact_id),
    CONSTRAINT facts_dim_matches CHECK (vector_dims(embedding) = embedding_dim),
    CONSTRAINT facts_project_scope CHECK ((scope = 'project') = (project_id IS NOT NULL))
);
CREATE UNIQUE INDEX facts_current ON facts (tenant_id, user_id, subject_key) WHERE valid_to IS NULL;
CREATE INDEX facts_history ON facts (tenant_id, user_id, subject_key, version);
CREATE INDEX facts_tsv ON facts USING gin (tsv);
ALTER TABLE facts ENABLE ROW LEVEL SECURITY;
ALTER TABLE facts FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON facts
    USING (tenant_id = memstream_current_tenant())
    WITH CHECK (tenant_id = memstream_current_tenant());
CREATE POLICY agent_visibility ON facts AS RESTRICTIVE FOR SELECT
    USING (shared OR memstream_current_agent() IS NULL OR agent_id = memstream_current_agent());

-- Relational memory -----------------------------------------------------------------------
-- Edges come from facts: when a fact version is superseded, its edges close too.
CREATE TABLE edges (
    tenant_id       text        NOT NULL,
    edge_id         uuid        NOT NULL,
    user_id         text        NOT NULL,
    agent_id        text        NOT NULL,
    project_id      text,
    subject         text        NOT NULL,
    predicate       text        NOT NULL,
    object          text        NOT NULL,
    fact_id         uuid        NOT NULL,
    source_event_id uuid        NOT NULL,
    shared          boolean     NOT NULL DEFAULT false,
    valid_from      timestamptz NOT NULL,
    valid_to        timestamptz,
    PRIMARY KEY (tenant_id, edge_id)
);
CREATE UNIQUE INDEX edges_current ON edges (tenant_id, user_id, subject, predicate, object)
    WHERE valid_to IS NULL;
CREATE INDEX edges_by_subject ON edges (tenant_id, subject) WHERE valid_to IS NULL;
CREATE INDEX edges_by_object ON edges (tenant_id, object) WHERE valid_to IS NULL;
CREATE INDEX edges_by_fact ON edges (tenant_id, fact_id);
ALTER TABLE edges ENABLE ROW LEVEL SECURITY;
ALTER TABLE edges FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON edges
    USING (tenant_id = memstream_current_tenant())
    WITH CHECK (tenant_id = memstream_current_tenant());
CREATE POLICY agent_visibility ON edges AS RESTRICTIVE FOR SELECT
    USING (shared OR memstream_current_agent() IS NULL OR agent_id = memstream_current_agent());

-- Procedural memory -----------------------------------------------------------------------
CREATE TABLE skills (
    tenant_id       text        NOT NULL,
    skill_id        uuid        NOT NULL DEFAULT gen_random_uuid(),
    name            text        NOT NULL,
    description     text        NOT NULL DEFAULT '',
    steps           jsonb       NOT NULL DEFAULT '[]',
    attempts        integer     NOT NULL DEFAULT 0,
    successes       integer     NOT NULL DEFAULT 0,
    last_used_at    timestamptz,
    last_feedback   text,
    embedding       vector      NOT NULL,
    embedding_model text        NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, skill_id),
    UNIQUE (tenant_id, name),
    CHECK (successes <= attempts)
);
-- One row per tool outcome: a redelivered outcome is counted once.
CREATE TABLE skill_runs (
    tenant_id  text        NOT NULL,
    event_id   uuid        NOT NULL,
    skill_id   uuid        NOT NULL,
    user_id    text        NOT NULL,
    success    boolean     NOT NULL,
    feedback   text,
    at         timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, event_id)
);
ALTER TABLE skills ENABLE ROW LEVEL SECURITY;
ALTER TABLE skills FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON skills
    USING (tenant_id = memstream_current_tenant())
    WITH CHECK (tenant_id = memstream_current_tenant());
ALTER TABLE skill_runs ENABLE ROW LEVEL SECURITY;
ALTER TABLE skill_runs FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON skill_runs
    USING (tenant_id = memstream_current_tenant())
    WITH CHECK (tenant_id = memstream_current_tenant());

-- Retention policy, per tenant ------------------------------------------------------------
ALTER TABLE tenant_settings
    ADD COLUMN compact_after_days   integer CHECK (compact_after_days > 0),
    ADD COLUMN min_importance       real    CHECK (min_importance BETWEEN 0 AND 1),
    ADD COLUMN max_age_days         integer CHECK (max_age_days > 0),
    ADD COLUMN max_per_user         integer CHECK (max_per_user > 0),
    ADD COLUMN unaccessed_days      integer CHECK (unaccessed_days > 0),
    ADD COLUMN decay_half_life_days real    CHECK (decay_half_life_days > 0);

-- Erasure now covers the long-term tables too.
CREATE OR REPLACE FUNCTION memstream_erase_user(p_user text)
RETURNS TABLE (erasure_id uuid, erased_at timestamptz, episodes bigint, events bigint, sessions text[])
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    v_tenant text := memstream_current_tenant();
    v_ref    text;
    v_facts  bigint;
    v_edges  bigint;
    v_runs   bigint;
BEGIN
    IF v_tenant IS NULL THEN
        RAISE EXCEPTION 'app.tenant_id is not set' USING ERRCODE = 'insufficient_privilege';
    END IF;
    v_ref := memstream_user_ref(v_tenant, p_user);
    PERFORM pg_advisory_xact_lock(memstream_user_lock(v_tenant, p_user));
    SELECT coalesce(array_agg(DISTINCT s.session_id), '{}') INTO sessions
        FROM (SELECT l.session_id FROM event_log l WHERE l.tenant_id = v_tenant AND l.user_id = p_user
              UNION SELECT e.session_id FROM episodes e WHERE e.tenant_id = v_tenant AND e.user_id = p_user
              UNION SELECT f.session_id FROM facts f WHERE f.tenant_id = v_tenant AND f.user_id = p_user) s;
    INSERT INTO erasures AS x (tenant_id, user_ref) VALUES (v_tenant, v_ref)
        RETURNING x.erasure_id, x.erased_at INTO erasure_id, erased_at;
    DELETE FROM episodes e WHERE e.tenant_id = v_tenant AND e.user_id = p_user;
    GET DIAGNOSTICS episodes = ROW_COUNT;
    DELETE FROM edges g WHERE g.tenant_id = v_tenant AND g.user_id = p_user;
    GET DIAGNOSTICS v_edges = ROW_COUNT;
    DELETE FROM facts f WHERE f.tenant_id = v_tenant AND f.user_id = p_user;
    GET DIAGNOSTICS v_facts = ROW_COUNT;
    DELETE FROM skill_runs r WHERE r.tenant_id = v_tenant AND r.user_id = p_user;
    GET DIAGNOSTICS v_runs = ROW_COUNT;
    PERFORM set_config('memstream.lawful_erasure', 'on', true);
    DELETE FROM event_log l WHERE l.tenant_id = v_tenant AND l.user_id = p_user;
    GET DIAGNOSTICS events = ROW_COUNT;
    PERFORM set_config('memstream.lawful_erasure', 'off', true);
    INSERT INTO audit_log (tenant_id, actor, action, subject, detail)
        VALUES (v_tenant, coalesce(nullif(current_setting('app.actor', true), ''), 'unknown'),
                'user.erase', v_ref,
                jsonb_build_object('erasure_id', erasure_id, 'episodes', episodes, 'events', events,
                                   'facts', v_facts, 'edges', v_edges, 'skill_runs', v_runs,
                                   'sessions', cardinality(sessions)));
    RETURN NEXT;
END
$$;
REVOKE EXECUTE ON FUNCTION memstream_erase_user(text) FROM PUBLIC;

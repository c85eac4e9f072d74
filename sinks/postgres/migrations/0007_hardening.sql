-- Isolation and privacy, hardened: a scope for system turns, agent visibility on the event
-- log, procedural memory per user and agent, and erasure that client-chosen times cannot get
-- around.

-- API keys: 'system' lets a key publish turns with role system (they speak for the operator).
ALTER TABLE api_keys DROP CONSTRAINT api_keys_scopes_check;
ALTER TABLE api_keys ADD CONSTRAINT api_keys_scopes_check
    CHECK (cardinality(scopes) > 0 AND scopes <@ ARRAY['ingest', 'read', 'admin', 'system']::text[]);

-- The event log: an agent-bound session sees its own events and shared ones, like episodes
-- (the previous session of a user is resolved over what the reader may see).
CREATE POLICY agent_visibility ON event_log AS RESTRICTIVE FOR SELECT
    USING (shared OR memstream_current_agent() IS NULL OR agent_id = memstream_current_agent());

-- Procedural memory ------------------------------------------------------------------------
-- A skill belongs to a user (its name and embedding, one row per tenant, user and name); its
-- record — attempts, successes, steps, last feedback — is the runs the reader may see,
-- aggregated when read, so an agent's private outcomes never reach another agent, and one
-- user's never reach another user. Ids are derived (md5 of tenant, user and name): a rebuild
-- from the event log gives a skill the same id.
CREATE FUNCTION memstream_skill_id(p_tenant text, p_user text, p_name text) RETURNS uuid
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN md5(convert_to(p_tenant || chr(31) || p_user || chr(31) || p_name, 'UTF8'))::uuid;

-- The rewrite below reads every tenant's rows: row-level security is lifted for the owner
-- inside this transaction only.
ALTER TABLE skills NO FORCE ROW LEVEL SECURITY;
ALTER TABLE skill_runs NO FORCE ROW LEVEL SECURITY;
ALTER TABLE event_log NO FORCE ROW LEVEL SECURITY;

ALTER TABLE skill_runs
    ADD COLUMN agent_id text,
    ADD COLUMN shared   boolean NOT NULL DEFAULT false,
    ADD COLUMN steps    jsonb   NOT NULL DEFAULT '[]';
UPDATE skill_runs r SET agent_id = l.agent_id, shared = l.shared,
       steps = CASE WHEN pg_input_is_valid(l.metadata->>'steps', 'jsonb')
                     AND jsonb_typeof((l.metadata->>'steps')::jsonb) = 'array'
                    THEN (l.metadata->>'steps')::jsonb ELSE '[]'::jsonb END
    FROM event_log l WHERE l.tenant_id = r.tenant_id AND l.event_id = r.event_id;
UPDATE skill_runs SET agent_id = 'unknown' WHERE agent_id IS NULL;
ALTER TABLE skill_runs ALTER COLUMN agent_id SET NOT NULL;

ALTER TABLE skills ADD COLUMN user_id text;
INSERT INTO skills (tenant_id, skill_id, user_id, name, description, steps, embedding, embedding_model, created_at)
SELECT DISTINCT ON (r.tenant_id, r.user_id, k.name)
       r.tenant_id, memstream_skill_id(r.tenant_id, r.user_id, k.name), r.user_id, k.name, k.description, '[]',
       k.embedding, k.embedding_model, k.created_at
  FROM skill_runs r JOIN skills k ON k.tenant_id = r.tenant_id AND k.skill_id = r.skill_id
 WHERE k.user_id IS NULL
 ORDER BY r.tenant_id, r.user_id, k.name;
-- (the old, tenant-wide rows still hold the (tenant, name) key: moved aside first)
UPDATE skill_runs r SET skill_id = memstream_skill_id(r.tenant_id, r.user_id, k.name)
  FROM skills k WHERE k.tenant_id = r.tenant_id AND k.skill_id = r.skill_id AND k.user_id IS NULL;
DELETE FROM skills WHERE user_id IS NULL;
ALTER TABLE skills
    DROP CONSTRAINT skills_tenant_id_name_key,
    DROP CONSTRAINT skills_check,
    DROP COLUMN steps,
    DROP COLUMN attempts,
    DROP COLUMN successes,
    DROP COLUMN last_used_at,
    DROP COLUMN last_feedback,
    ALTER COLUMN user_id SET NOT NULL,
    ADD CONSTRAINT skills_user_name UNIQUE (tenant_id, user_id, name);
CREATE INDEX skill_runs_by_skill ON skill_runs (tenant_id, skill_id, at);

ALTER TABLE skills FORCE ROW LEVEL SECURITY;
ALTER TABLE skill_runs FORCE ROW LEVEL SECURITY;
ALTER TABLE event_log FORCE ROW LEVEL SECURITY;

CREATE POLICY agent_visibility ON skill_runs AS RESTRICTIVE FOR SELECT
    USING (shared OR memstream_current_agent() IS NULL OR agent_id = memstream_current_agent());

-- Erasure -----------------------------------------------------------------------------------
-- The ids of every event an erasure removed: a turn sent again with its original id is never
-- stored again, whatever time it claims.
CREATE TABLE erased_events (
    tenant_id  text NOT NULL,
    event_id   uuid NOT NULL,
    erasure_id uuid NOT NULL,
    PRIMARY KEY (tenant_id, event_id)
);
ALTER TABLE erased_events ENABLE ROW LEVEL SECURITY;
ALTER TABLE erased_events FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON erased_events
    USING (tenant_id = memstream_current_tenant())
    WITH CHECK (tenant_id = memstream_current_tenant());

-- An erased user stays forgotten until an operator records their renewed consent: only
-- events after that consent are stored again.
CREATE TABLE consents (
    tenant_id    text        NOT NULL,
    user_ref     text        NOT NULL,
    consented_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    consent_id   uuid        NOT NULL DEFAULT gen_random_uuid(),
    PRIMARY KEY (tenant_id, user_ref, consented_at)
);
ALTER TABLE consents ENABLE ROW LEVEL SECURITY;
ALTER TABLE consents FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON consents
    USING (tenant_id = memstream_current_tenant())
    WITH CHECK (tenant_id = memstream_current_tenant());

-- The one rule every writer applies: an event is forgotten when its id was erased, or when its
-- user was erased and no consent recorded after that erasure precedes the event.
CREATE FUNCTION memstream_forgotten(p_tenant text, p_user text, p_event uuid, p_time timestamptz)
RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE
RETURN EXISTS (SELECT 1 FROM erased_events x WHERE x.tenant_id = p_tenant AND x.event_id = p_event)
    OR EXISTS (SELECT 1 FROM erasures e
                WHERE e.tenant_id = p_tenant AND e.user_ref = memstream_user_ref(p_tenant, p_user)
                  AND NOT EXISTS (SELECT 1 FROM consents c
                                   WHERE c.tenant_id = e.tenant_id AND c.user_ref = e.user_ref
                                     AND c.consented_at > e.erased_at AND p_time > c.consented_at));

CREATE OR REPLACE FUNCTION memstream_erase_user(p_user text)
RETURNS TABLE (erasure_id uuid, erased_at timestamptz, episodes bigint, events bigint, sessions text[])
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    v_tenant text := memstream_current_tenant();
    v_ref    text;
    v_facts  bigint;
    v_edges  bigint;
    v_runs   bigint;
    v_skills bigint;
    v_ids    bigint;
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
    INSERT INTO erased_events (tenant_id, event_id, erasure_id)
        SELECT v_tenant, i.event_id, erasure_id
          FROM (SELECT l.event_id FROM event_log l WHERE l.tenant_id = v_tenant AND l.user_id = p_user
                UNION SELECT e.event_id FROM episodes e WHERE e.tenant_id = v_tenant AND e.user_id = p_user
                UNION SELECT r.event_id FROM skill_runs r WHERE r.tenant_id = v_tenant AND r.user_id = p_user
                UNION SELECT unnest(f.sources) FROM facts f WHERE f.tenant_id = v_tenant AND f.user_id = p_user) i
        ON CONFLICT DO NOTHING;
    GET DIAGNOSTICS v_ids = ROW_COUNT;
    DELETE FROM episodes e WHERE e.tenant_id = v_tenant AND e.user_id = p_user;
    GET DIAGNOSTICS episodes = ROW_COUNT;
    DELETE FROM edges g WHERE g.tenant_id = v_tenant AND g.user_id = p_user;
    GET DIAGNOSTICS v_edges = ROW_COUNT;
    DELETE FROM facts f WHERE f.tenant_id = v_tenant AND f.user_id = p_user;
    GET DIAGNOSTICS v_facts = ROW_COUNT;
    DELETE FROM skill_runs r WHERE r.tenant_id = v_tenant AND r.user_id = p_user;
    GET DIAGNOSTICS v_runs = ROW_COUNT;
    DELETE FROM skills k WHERE k.tenant_id = v_tenant AND k.user_id = p_user;
    GET DIAGNOSTICS v_skills = ROW_COUNT;
    PERFORM set_config('memstream.lawful_erasure', 'on', true);
    DELETE FROM event_log l WHERE l.tenant_id = v_tenant AND l.user_id = p_user;
    GET DIAGNOSTICS events = ROW_COUNT;
    PERFORM set_config('memstream.lawful_erasure', 'off', true);
    INSERT INTO audit_log (tenant_id, actor, action, subject, detail)
        VALUES (v_tenant, coalesce(nullif(current_setting('app.actor', true), ''), 'unknown'),
                'user.erase', v_ref,
                jsonb_build_object('erasure_id', erasure_id, 'episodes', episodes, 'events', events,
                                   'facts', v_facts, 'edges', v_edges, 'skill_runs', v_runs,
                                   'skills', v_skills, 'event_ids', v_ids,
                                   'sessions', cardinality(sessions)));
    RETURN NEXT;
END
$$;
REVOKE EXECUTE ON FUNCTION memstream_erase_user(text) FROM PUBLIC;

-- Renewed consent after an erasure (an operator's decision, audited).
CREATE FUNCTION memstream_consent_user(p_user text)
RETURNS TABLE (consent_id uuid, consented_at timestamptz, erased boolean)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    v_tenant text := memstream_current_tenant();
    v_ref    text;
BEGIN
    IF v_tenant IS NULL THEN
        RAISE EXCEPTION 'app.tenant_id is not set' USING ERRCODE = 'insufficient_privilege';
    END IF;
    v_ref := memstream_user_ref(v_tenant, p_user);
    PERFORM pg_advisory_xact_lock(memstream_user_lock(v_tenant, p_user));
    erased := EXISTS (SELECT 1 FROM erasures e WHERE e.tenant_id = v_tenant AND e.user_ref = v_ref);
    INSERT INTO consents AS c (tenant_id, user_ref) VALUES (v_tenant, v_ref)
        RETURNING c.consent_id, c.consented_at INTO consent_id, consented_at;
    INSERT INTO audit_log (tenant_id, actor, action, subject, detail)
        VALUES (v_tenant, coalesce(nullif(current_setting('app.actor', true), ''), 'unknown'),
                'user.consent', v_ref, jsonb_build_object('consent_id', consent_id, 'after_erasure', erased));
    RETURN NEXT;
END
$$;
REVOKE EXECUTE ON FUNCTION memstream_consent_user(text) FROM PUBLIC;

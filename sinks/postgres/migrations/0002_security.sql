-- Tenants, agents and tools: row-level security on every memory table, API keys,
-- permission rules, privacy policy, the immutable audit log with its outbox, and
-- lawful erasure with tombstones.
--
-- Every tenant-owned table has ENABLE and FORCE ROW LEVEL SECURITY with a policy on
-- current_setting('app.tenant_id', true): without the setting a session sees and may
-- write nothing. The worker and the gateway set it per transaction (set_config(..., true)).

-- A pseudonymous reference to a user: tombstones and audit records name users by it.
CREATE FUNCTION memstream_user_ref(p_tenant text, p_user text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN encode(sha256(convert_to(p_tenant || chr(31) || p_user, 'UTF8')), 'hex');

-- The advisory-lock key that serialises writes of a user's memory with their erasure.
CREATE FUNCTION memstream_user_lock(p_tenant text, p_user text) RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN ('x' || substr(memstream_user_ref(p_tenant, p_user), 1, 16))::bit(64)::bigint;

CREATE FUNCTION memstream_current_tenant() RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE
RETURN nullif(current_setting('app.tenant_id', true), '');

CREATE FUNCTION memstream_current_agent() RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE
RETURN nullif(current_setting('app.agent_id', true), '');

-- Memory shared across the tenant's agents, or private to the agent that made it.
ALTER TABLE episodes ADD COLUMN shared boolean NOT NULL DEFAULT false;
ALTER TABLE event_log ADD COLUMN shared boolean NOT NULL DEFAULT false;

ALTER TABLE episodes ENABLE ROW LEVEL SECURITY;
ALTER TABLE episodes FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON episodes
    USING (tenant_id = memstream_current_tenant())
    WITH CHECK (tenant_id = memstream_current_tenant());
-- An agent-bound session (app.agent_id set) reads its own memory and shared memory only;
-- a tenant-level session (no agent) reads all of the tenant's memory.
CREATE POLICY agent_visibility ON episodes AS RESTRICTIVE FOR SELECT
    USING (shared OR memstream_current_agent() IS NULL OR agent_id = memstream_current_agent());

ALTER TABLE event_log ENABLE ROW LEVEL SECURITY;
ALTER TABLE event_log FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON event_log
    USING (tenant_id = memstream_current_tenant())
    WITH CHECK (tenant_id = memstream_current_tenant());

-- Lawful erasure ----------------------------------------------------------------------
-- A tombstone per erased user: turns of that user up to erased_at are never stored
-- again, whoever re-sends them (a replayed topic, a redelivery, a replay of the log).
CREATE TABLE erasures (
    tenant_id  text        NOT NULL,
    user_ref   text        NOT NULL,
    erased_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    erasure_id uuid        NOT NULL DEFAULT gen_random_uuid(),
    PRIMARY KEY (tenant_id, user_ref, erased_at)
);
ALTER TABLE erasures ENABLE ROW LEVEL SECURITY;
ALTER TABLE erasures FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON erasures
    USING (tenant_id = memstream_current_tenant())
    WITH CHECK (tenant_id = memstream_current_tenant());

-- The event log's append-only trigger lets exactly one caller through: the erasure
-- function below, which marks its own transaction.
CREATE OR REPLACE FUNCTION memstream_forbid_change() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' AND current_setting('memstream.lawful_erasure', true) = 'on' THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION 'table % is append-only: % is not allowed', TG_TABLE_NAME, TG_OP
        USING ERRCODE = 'insufficient_privilege';
END
$$;

-- Audit log -----------------------------------------------------------------------------
-- Every memory change and every permission decision; never updated, never deleted
-- (not even by a lawful erasure, which records only that it happened).
CREATE FUNCTION memstream_audit_immutable() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'the audit log is immutable: % is not allowed', TG_OP
        USING ERRCODE = 'insufficient_privilege';
END
$$;

CREATE TABLE audit_log (
    tenant_id text        NOT NULL,
    audit_id  uuid        NOT NULL DEFAULT gen_random_uuid(),
    seq       bigint      GENERATED ALWAYS AS IDENTITY,
    at        timestamptz NOT NULL DEFAULT clock_timestamp(),
    actor     text        NOT NULL,
    action    text        NOT NULL,
    subject   text,
    detail    jsonb       NOT NULL DEFAULT '{}',
    PRIMARY KEY (tenant_id, audit_id)
);
CREATE UNIQUE INDEX audit_log_seq ON audit_log (seq);
CREATE INDEX audit_log_tenant_time ON audit_log (tenant_id, at);
ALTER TABLE audit_log ENABLE ROW LEVEL SECURITY;
ALTER TABLE audit_log FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON audit_log
    USING (tenant_id = memstream_current_tenant())
    WITH CHECK (tenant_id = memstream_current_tenant());
CREATE TRIGGER audit_log_no_update BEFORE UPDATE OR DELETE ON audit_log
    FOR EACH ROW EXECUTE FUNCTION memstream_audit_immutable();
CREATE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON audit_log
    FOR EACH STATEMENT EXECUTE FUNCTION memstream_audit_immutable();

-- The outbox: which audit rows still have to reach memstream.audit.v1. It holds no
-- content (a tenant id and a position), so it needs no row-level security; the relay
-- reads the rows themselves tenant by tenant, under RLS.
CREATE TABLE audit_outbox (
    seq       bigint PRIMARY KEY,
    tenant_id text   NOT NULL,
    audit_id  uuid   NOT NULL
);
CREATE FUNCTION memstream_audit_to_outbox() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
BEGIN
    INSERT INTO audit_outbox (seq, tenant_id, audit_id) VALUES (NEW.seq, NEW.tenant_id, NEW.audit_id);
    RETURN NULL;
END
$$;
CREATE TRIGGER audit_log_outbox AFTER INSERT ON audit_log
    FOR EACH ROW EXECUTE FUNCTION memstream_audit_to_outbox();

-- Erasing a user: tombstone, memory, event log; the audit keeps only that it happened.
-- Runs as the owner (the only role allowed to delete from the event log) but under the
-- caller's app.tenant_id: the tables' RLS policies still confine it to one tenant.
CREATE FUNCTION memstream_erase_user(p_user text)
RETURNS TABLE (erasure_id uuid, erased_at timestamptz, episodes bigint, events bigint, sessions text[])
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    v_tenant text := memstream_current_tenant();
    v_ref    text;
BEGIN
    IF v_tenant IS NULL THEN
        RAISE EXCEPTION 'app.tenant_id is not set' USING ERRCODE = 'insufficient_privilege';
    END IF;
    v_ref := memstream_user_ref(v_tenant, p_user);
    -- Waits for in-flight writes of this user's memory; later writes see the tombstone.
    PERFORM pg_advisory_xact_lock(memstream_user_lock(v_tenant, p_user));
    SELECT coalesce(array_agg(DISTINCT s.session_id), '{}') INTO sessions
        FROM (SELECT l.session_id FROM event_log l WHERE l.tenant_id = v_tenant AND l.user_id = p_user
              UNION SELECT e.session_id FROM episodes e WHERE e.tenant_id = v_tenant AND e.user_id = p_user) s;
    INSERT INTO erasures AS x (tenant_id, user_ref) VALUES (v_tenant, v_ref)
        RETURNING x.erasure_id, x.erased_at INTO erasure_id, erased_at;
    DELETE FROM episodes e WHERE e.tenant_id = v_tenant AND e.user_id = p_user;
    GET DIAGNOSTICS episodes = ROW_COUNT;
    PERFORM set_config('memstream.lawful_erasure', 'on', true);
    DELETE FROM event_log l WHERE l.tenant_id = v_tenant AND l.user_id = p_user;
    GET DIAGNOSTICS events = ROW_COUNT;
    PERFORM set_config('memstream.lawful_erasure', 'off', true);
    INSERT INTO audit_log (tenant_id, actor, action, subject, detail)
        VALUES (v_tenant, coalesce(nullif(current_setting('app.actor', true), ''), 'unknown'),
                'user.erase', v_ref,
                jsonb_build_object('erasure_id', erasure_id, 'episodes', episodes, 'events', events,
                                   'sessions', cardinality(sessions)));
    RETURN NEXT;
END
$$;

-- API keys ------------------------------------------------------------------------------
-- Only a hash of each secret is stored. The app role cannot read the table; the gateway
-- resolves one key id at a time through memstream_api_key().
CREATE TABLE api_keys (
    key_id           text        PRIMARY KEY,
    tenant_id        text        NOT NULL,
    agent_id         text,
    scopes           text[]      NOT NULL CHECK (cardinality(scopes) > 0
                                   AND scopes <@ ARRAY['ingest', 'read', 'admin']::text[]),
    secret_sha256    bytea       NOT NULL,
    name             text        NOT NULL DEFAULT '',
    rate_limit_per_s real        CHECK (rate_limit_per_s > 0),
    created_at       timestamptz NOT NULL DEFAULT now(),
    revoked_at       timestamptz
);
CREATE INDEX api_keys_tenant ON api_keys (tenant_id);

CREATE FUNCTION memstream_api_key(p_key_id text)
RETURNS TABLE (tenant_id text, agent_id text, scopes text[], secret_sha256 bytea,
               rate_limit_per_s real, revoked boolean)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp
AS $$
    SELECT k.tenant_id, k.agent_id, k.scopes, k.secret_sha256, k.rate_limit_per_s, k.revoked_at IS NOT NULL
    FROM api_keys k WHERE k.key_id = p_key_id
$$;

-- Tool permissions ------------------------------------------------------------------------
-- Ordered ALLOW/BLOCK patterns per tool: a project's rules (tier 2) before the tenant's
-- global rules (tier 3, project_id NULL). Patterns are RE2 syntax, checked when stored.
CREATE TABLE permission_rules (
    tenant_id   text        NOT NULL,
    rule_id     uuid        NOT NULL DEFAULT gen_random_uuid(),
    project_id  text,
    tool        text        NOT NULL CHECK (length(tool) BETWEEN 1 AND 128),
    effect      text        NOT NULL CHECK (effect IN ('ALLOW', 'BLOCK')),
    pattern     text        NOT NULL CHECK (length(pattern) BETWEEN 1 AND 512),
    position    integer     NOT NULL DEFAULT 0,
    description text        NOT NULL DEFAULT '',
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, rule_id)
);
CREATE INDEX permission_rules_lookup ON permission_rules (tenant_id, tool, project_id, position);
ALTER TABLE permission_rules ENABLE ROW LEVEL SECURITY;
ALTER TABLE permission_rules FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON permission_rules
    USING (tenant_id = memstream_current_tenant())
    WITH CHECK (tenant_id = memstream_current_tenant());

-- Per-tenant privacy policy -----------------------------------------------------------------
CREATE TABLE tenant_settings (
    tenant_id    text        PRIMARY KEY,
    redact_email boolean     NOT NULL DEFAULT false,
    redact_phone boolean     NOT NULL DEFAULT false,
    updated_at   timestamptz NOT NULL DEFAULT now()
);
ALTER TABLE tenant_settings ENABLE ROW LEVEL SECURITY;
ALTER TABLE tenant_settings FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON tenant_settings
    USING (tenant_id = memstream_current_tenant())
    WITH CHECK (tenant_id = memstream_current_tenant());

-- Functions are executable by PUBLIC unless revoked; the definer ones are granted to the
-- app role by the migrator.
REVOKE EXECUTE ON FUNCTION memstream_erase_user(text) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION memstream_api_key(text) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION memstream_audit_to_outbox() FROM PUBLIC;

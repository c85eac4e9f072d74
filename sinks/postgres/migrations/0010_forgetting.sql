-- Forgetting one memory (DELETE /v1/memories/{id}, sinks/postgres/forgetting.py): the tombstones
-- that keep a forgotten episode or fact from being stored again — by a redelivery, a replay of
-- the topic, or `memstream replay` from the event log. Neither table holds any content.

-- One row per forgotten memory: an episode's event id (a turn, a lesson, a daily summary) or a
-- fact version's id, with whom it was visible to (its agent, and whether shared), so that asking
-- again answers what the first request did, to the keys that could see the memory, and to no
-- other. The episode sinks skip an event id listed here (sinks/postgres/episodes.py, the
-- session-buffer stage, the replay's switch).
CREATE TABLE forgotten_memories (
    tenant_id    text        NOT NULL,
    memory_id    uuid        NOT NULL,
    kind         text        NOT NULL CHECK (kind IN ('episode', 'fact')),
    memory_type  text        NOT NULL,
    agent_id     text        NOT NULL,
    shared       boolean     NOT NULL,
    forgotten_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (tenant_id, memory_id)
);
ALTER TABLE forgotten_memories ENABLE ROW LEVEL SECURITY;
ALTER TABLE forgotten_memories FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON forgotten_memories
    USING (tenant_id = memstream_current_tenant())
    WITH CHECK (tenant_id = memstream_current_tenant());
CREATE POLICY agent_visibility ON forgotten_memories AS RESTRICTIVE FOR SELECT
    USING (shared OR memstream_current_agent() IS NULL OR agent_id = memstream_current_agent());

-- What keeps a forgotten fact from coming back. A fact version is what some events stated
-- about one subject of one user (its sources); each such statement is tombstoned here by a
-- reference (memstream_statement_ref: a hash, so no user id or entity outlives an erasure),
-- and the fact writer skips a fact whose own statement is listed (sinks/postgres/facts.py):
-- the same events re-extracted by a replay restate nothing, while a new event saying it again
-- is a new statement, remembered like any other.
CREATE TABLE forgotten_statements (
    tenant_id text NOT NULL,
    statement uuid NOT NULL,
    -- the fact version whose forgetting tombstoned it
    memory_id uuid NOT NULL,
    PRIMARY KEY (tenant_id, statement)
);
ALTER TABLE forgotten_statements ENABLE ROW LEVEL SECURITY;
ALTER TABLE forgotten_statements FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON forgotten_statements
    USING (tenant_id = memstream_current_tenant())
    WITH CHECK (tenant_id = memstream_current_tenant());

CREATE FUNCTION memstream_statement_ref(p_tenant text, p_user text, p_subject text, p_event uuid) RETURNS uuid
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN md5(convert_to(p_tenant || chr(31) || p_user || chr(31) || p_subject || chr(31) || p_event::text, 'UTF8'))::uuid;

-- Whether an episode (by its event id) was forgotten.
CREATE FUNCTION memstream_episode_forgotten(p_tenant text, p_event uuid) RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE
RETURN EXISTS (SELECT 1 FROM forgotten_memories m
                WHERE m.tenant_id = p_tenant AND m.memory_id = p_event AND m.kind = 'episode');

-- Whether what an event stated about a user's subject (a fact's subject key) was forgotten.
CREATE FUNCTION memstream_statement_forgotten(p_tenant text, p_user text, p_subject text, p_event uuid)
RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE
RETURN EXISTS (SELECT 1 FROM forgotten_statements s
                WHERE s.tenant_id = p_tenant AND s.statement = memstream_statement_ref(p_tenant, p_user, p_subject, p_event));

-- Replay and rebuild: recorded extraction results, replay runs with their checkpoints, and the
-- index a replay reads the event log through (one tenant at a time, in log order).

CREATE INDEX event_log_tenant_seq ON event_log (tenant_id, seq);

-- What an LLM extracted from an event, keyed by the event and the extractor's version, so a
-- replay (or a redelivery) reuses the answer instead of paying for the call again.
-- ``produced_by`` names who made the facts: the extractor itself, or the offline fallback
-- when the model's answer was unusable.
CREATE TABLE extractions (
    tenant_id   text        NOT NULL,
    event_id    uuid        NOT NULL,
    extractor   text        NOT NULL,
    produced_by text        NOT NULL,
    facts       jsonb       NOT NULL,
    recorded_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (tenant_id, event_id, extractor)
);
ALTER TABLE extractions ENABLE ROW LEVEL SECURITY;
ALTER TABLE extractions FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON extractions
    USING (tenant_id = memstream_current_tenant())
    WITH CHECK (tenant_id = memstream_current_tenant());

-- Erasure removes a user's recorded extractions with the rest of their memory.
CREATE FUNCTION memstream_forget_extractions() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM extractions x WHERE x.tenant_id = OLD.tenant_id AND x.event_id = OLD.event_id;
    RETURN OLD;
END
$$;
CREATE TRIGGER event_log_forget_extractions AFTER DELETE ON event_log
    FOR EACH ROW EXECUTE FUNCTION memstream_forget_extractions();

-- One row per `memstream replay`; only the owner role (which runs replays) sees them. The scope
-- names a user by reference (memstream_user_ref), never by id.
CREATE TABLE replay_runs (
    run_id        uuid        PRIMARY KEY,
    scope_key     text        NOT NULL,
    scope         jsonb       NOT NULL,
    target        text        NOT NULL CHECK (target IN ('shadow', 'in-place', 'verify')),
    shadow_schema text,
    batch_size    integer     NOT NULL CHECK (batch_size > 0),
    re_extract    boolean     NOT NULL,
    status        text        NOT NULL CHECK (status IN ('running', 'switched', 'verified', 'done', 'abandoned')),
    events_total  bigint      NOT NULL DEFAULT 0,
    detail        jsonb       NOT NULL DEFAULT '{}',
    started_at    timestamptz NOT NULL DEFAULT clock_timestamp(),
    updated_at    timestamptz NOT NULL DEFAULT clock_timestamp(),
    finished_at   timestamptz
);
CREATE INDEX replay_runs_unfinished ON replay_runs (scope_key, target) WHERE status = 'running';

-- The checkpoint: per run and tenant, every event of the scope up to ``done_seq`` is processed
-- (a crash means the batch after it is processed again: every sink is idempotent).
CREATE TABLE replay_progress (
    run_id      uuid   NOT NULL REFERENCES replay_runs (run_id) ON DELETE CASCADE,
    tenant_id   text   NOT NULL,
    done_seq    bigint NOT NULL DEFAULT 0,
    events_done bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (run_id, tenant_id)
);

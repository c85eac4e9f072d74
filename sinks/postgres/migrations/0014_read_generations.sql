-- A per-user number that moves whenever what a read of that user may return has changed:
-- the gateway answers a repeated search (an agent framework asks the same question on each
-- model call of one turn) from its short cache only while the user's number is the one the
-- cached answer was computed at (agents_gateway/retrieval/recent.py).
--
-- Statement-level triggers on every table whose rows a search returns (episodes, facts, skills,
-- skill_runs) give the user a new number in the writing statement's own transaction, whoever
-- writes: the sinks, compaction, expiry, forgetting, erasure, a replay's switch. The event log
-- has none: a search reads it only for "the previous session", which the gateway looks up
-- before its cache and keys the answer by (an append to the event log, the hottest write
-- there is, would otherwise lock the user's row against the episodes' sink). The numbers come
-- from one sequence, so a number is never given twice: not after a user's row goes and comes
-- back, not after a TRUNCATE. Access statistics (memory_access) are not memory and move nothing. The app role may only read the table; the
-- triggers write as the owner. A reader sees its tenant's rows only.

CREATE SEQUENCE memory_generation_seq;

CREATE TABLE memory_generations (
    tenant_id  text   NOT NULL,
    user_id    text   NOT NULL,
    generation bigint NOT NULL,
    PRIMARY KEY (tenant_id, user_id)
);
ALTER TABLE memory_generations ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON memory_generations USING (tenant_id = memstream_current_tenant());

-- A new number for each (tenant, user) the statement wrote for, from its transition table(s);
-- sorted, so two writers lock the rows in one order. One grouped upsert per statement.
CREATE FUNCTION memstream_generation_changed() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO memory_generations AS g (tenant_id, user_id, generation)
        SELECT o.tenant_id, o.user_id, nextval('memory_generation_seq')
          FROM (SELECT DISTINCT n.tenant_id, n.user_id FROM new_rows n ORDER BY 1, 2) AS o
        ON CONFLICT (tenant_id, user_id) DO UPDATE SET generation = excluded.generation;
    ELSIF TG_OP = 'DELETE' THEN
        INSERT INTO memory_generations AS g (tenant_id, user_id, generation)
        SELECT o.tenant_id, o.user_id, nextval('memory_generation_seq')
          FROM (SELECT DISTINCT d.tenant_id, d.user_id FROM old_rows d ORDER BY 1, 2) AS o
        ON CONFLICT (tenant_id, user_id) DO UPDATE SET generation = excluded.generation;
    ELSE  -- an update may move a row to another user: both move
        INSERT INTO memory_generations AS g (tenant_id, user_id, generation)
        SELECT o.tenant_id, o.user_id, nextval('memory_generation_seq')
          FROM (SELECT n.tenant_id, n.user_id FROM new_rows n UNION SELECT d.tenant_id, d.user_id FROM old_rows d
                ORDER BY 1, 2) AS o
        ON CONFLICT (tenant_id, user_id) DO UPDATE SET generation = excluded.generation;
    END IF;
    RETURN NULL;
END
$$;

CREATE FUNCTION memstream_generation_truncated() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
BEGIN
    UPDATE memory_generations SET generation = nextval('memory_generation_seq');
    RETURN NULL;
END
$$;

-- A trigger with transition tables has one event, so three (and one for TRUNCATE) per table.
DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['episodes', 'facts', 'skills', 'skill_runs'] LOOP
        EXECUTE format('CREATE TRIGGER %I AFTER INSERT ON %I REFERENCING NEW TABLE AS new_rows'
                       ' FOR EACH STATEMENT EXECUTE FUNCTION memstream_generation_changed()', t || '_generation_insert', t);
        EXECUTE format('CREATE TRIGGER %I AFTER DELETE ON %I REFERENCING OLD TABLE AS old_rows'
                       ' FOR EACH STATEMENT EXECUTE FUNCTION memstream_generation_changed()', t || '_generation_delete', t);
        EXECUTE format('CREATE TRIGGER %I AFTER UPDATE ON %I REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows'
                       ' FOR EACH STATEMENT EXECUTE FUNCTION memstream_generation_changed()', t || '_generation_update', t);
        EXECUTE format('CREATE TRIGGER %I AFTER TRUNCATE ON %I FOR EACH STATEMENT'
                       ' EXECUTE FUNCTION memstream_generation_truncated()', t || '_generation_truncate', t);
    END LOOP;
END
$$;

-- An erased user leaves no row here either. The erasure's own deletes give the user a new
-- number first; this runs at commit, after them. A user without a row (erased, or written to
-- only before this migration) is never answered from the cache, so a number is never reused.
CREATE FUNCTION memstream_generation_erased() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
BEGIN
    DELETE FROM memory_generations g
     WHERE g.tenant_id = NEW.tenant_id AND memstream_user_ref(g.tenant_id, g.user_id) = NEW.user_ref;
    RETURN NULL;
END
$$;
CREATE CONSTRAINT TRIGGER erasures_generation AFTER INSERT ON erasures
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION memstream_generation_erased();

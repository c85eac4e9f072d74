-- A per-user number that moves whenever what a read of that user may return has changed:
-- the gateway answers a repeated search (an agent framework asks the same question on each
-- model call of one turn) from its short cache only while the user's number is the one the
-- cached answer was computed at (agents_gateway/retrieval/recent.py).
--
-- Statement-level triggers on every table a search or a context reads for a user (episodes,
-- facts, skills, skill_runs, event_log) give the user a new number in the writing statement's
-- own transaction, whoever writes: the sinks, compaction, expiry, forgetting, erasure, a
-- replay's switch. The numbers come from one sequence, so a number is never given twice: not
-- after a user's row goes and comes back, not after a TRUNCATE. Access statistics
-- (memory_access) are not memory and move nothing. The app role may only read the table; the
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

-- A new number for each (tenant, user) among ``owners`` (sorted: two writers lock the rows in
-- one order).
CREATE FUNCTION memstream_bump_generations(owners text[][]) RETURNS void
LANGUAGE sql SECURITY DEFINER SET search_path = public, pg_temp AS $$
    INSERT INTO memory_generations AS g (tenant_id, user_id, generation)
    SELECT o.tenant_id, o.user_id, nextval('memory_generation_seq')
      FROM (SELECT DISTINCT owners[i][1] AS tenant_id, owners[i][2] AS user_id
              FROM generate_subscripts(owners, 1) AS i ORDER BY 1, 2) AS o
    ON CONFLICT (tenant_id, user_id) DO UPDATE SET generation = excluded.generation;
$$;
REVOKE EXECUTE ON FUNCTION memstream_bump_generations(text[][]) FROM PUBLIC;

CREATE FUNCTION memstream_generation_changed() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        PERFORM memstream_bump_generations(ARRAY(SELECT ARRAY[n.tenant_id, n.user_id] FROM new_rows n));
    ELSIF TG_OP = 'DELETE' THEN
        PERFORM memstream_bump_generations(ARRAY(SELECT ARRAY[o.tenant_id, o.user_id] FROM old_rows o));
    ELSE  -- an update may move a row to another user: both move
        PERFORM memstream_bump_generations(ARRAY(
            SELECT ARRAY[n.tenant_id, n.user_id] FROM new_rows n
            UNION SELECT ARRAY[o.tenant_id, o.user_id] FROM old_rows o));
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
    FOREACH t IN ARRAY ARRAY['episodes', 'facts', 'skills', 'skill_runs', 'event_log'] LOOP
        EXECUTE format('CREATE TRIGGER %I AFTER INSERT ON %I REFERENCING NEW TABLE AS new_rows'
                       ' FOR EACH STATEMENT EXECUTE FUNCTION memstream_generation_changed()', t || '_generation_insert', t);
        EXECUTE format('CREATE TRIGGER %I AFTER DELETE ON %I REFERENCING OLD TABLE AS old_rows'
                       ' FOR EACH STATEMENT EXECUTE FUNCTION memstream_generation_changed()', t || '_generation_delete', t);
        IF t <> 'event_log' THEN  -- the event log refuses updates and truncation (migration 0001)
            EXECUTE format('CREATE TRIGGER %I AFTER UPDATE ON %I REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows'
                           ' FOR EACH STATEMENT EXECUTE FUNCTION memstream_generation_changed()',
                           t || '_generation_update', t);
            EXECUTE format('CREATE TRIGGER %I AFTER TRUNCATE ON %I FOR EACH STATEMENT'
                           ' EXECUTE FUNCTION memstream_generation_truncated()', t || '_generation_truncate', t);
        END IF;
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

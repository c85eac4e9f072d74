-- What the read path used to count on every query, kept as running totals instead:
--
-- * episode_counts: per user, project and visibility bucket (agent, shared), how many live
--   (not archived) episodes there are and the tokens of the episodic ones. The vector
--   strategy of a query follows the first; /v1/context's naive_tokens is the second.
-- * episode_terms: per user and visibility bucket, in how many live episodes each lexeme
--   occurs (document frequency), for full-text IDF and candidate selection.
--
-- Both are kept by statement-level triggers on episodes (every insert, update and delete,
-- whoever runs it: the sinks, compaction, expiry, erasure, a replay's switch), one grouped
-- upsert per statement. The rows carry the episode's tenant, agent and shared flag, and the
-- same row-level security as episodes: a reader counts only what it may see. A bucket that
-- drops to zero is deleted, so an erased user leaves no lexeme behind. The app role may only
-- read them; the triggers write as the owner.
--
-- Full-text candidates of one user come from a GIN index that holds the owner too
-- (btree_gin), so a tenant of a million rows never scans its other users' postings.

CREATE EXTENSION IF NOT EXISTS btree_gin;

CREATE TABLE episode_counts (
    tenant_id       text    NOT NULL,
    user_id         text    NOT NULL,
    -- '' for no project
    project_id      text    NOT NULL,
    agent_id        text    NOT NULL,
    shared          boolean NOT NULL,
    episodes        bigint  NOT NULL,
    episodic_tokens bigint  NOT NULL,
    PRIMARY KEY (tenant_id, user_id, project_id, agent_id, shared)
);

CREATE TABLE episode_terms (
    tenant_id text    NOT NULL,
    user_id   text    NOT NULL,
    lexeme    text    NOT NULL,
    agent_id  text    NOT NULL,
    shared    boolean NOT NULL,
    df        bigint  NOT NULL,
    PRIMARY KEY (tenant_id, user_id, lexeme, agent_id, shared)
);

ALTER TABLE episode_counts ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON episode_counts USING (tenant_id = memstream_current_tenant());
CREATE POLICY agent_visibility ON episode_counts AS RESTRICTIVE FOR SELECT
    USING (shared OR memstream_current_agent() IS NULL OR agent_id = memstream_current_agent());
ALTER TABLE episode_terms ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON episode_terms USING (tenant_id = memstream_current_tenant());
CREATE POLICY agent_visibility ON episode_terms AS RESTRICTIVE FOR SELECT
    USING (shared OR memstream_current_agent() IS NULL OR agent_id = memstream_current_agent());

-- Add ``sign`` times the live rows among ``changed`` to the totals; delete emptied buckets.
CREATE FUNCTION memstream_episode_stats_add(sign integer, changed episodes[]) RETURNS void
LANGUAGE sql SECURITY DEFINER SET search_path = public, pg_temp AS $$
    INSERT INTO episode_counts AS c (tenant_id, user_id, project_id, agent_id, shared, episodes, episodic_tokens)
    SELECT e.tenant_id, e.user_id, coalesce(e.project_id, ''), e.agent_id, e.shared, sign * count(*),
           sign * coalesce(sum(e.token_count) FILTER (WHERE e.memory_type = 'episodic'), 0)
      FROM unnest(changed) AS e WHERE e.archived_at IS NULL
     GROUP BY 1, 2, 3, 4, 5 ORDER BY 1, 2, 3, 4, 5
    ON CONFLICT (tenant_id, user_id, project_id, agent_id, shared) DO UPDATE
       SET episodes = c.episodes + excluded.episodes, episodic_tokens = c.episodic_tokens + excluded.episodic_tokens;
    DELETE FROM episode_counts c USING unnest(changed) AS e
     WHERE sign < 0 AND c.episodes <= 0 AND c.tenant_id = e.tenant_id AND c.user_id = e.user_id
       AND c.project_id = coalesce(e.project_id, '') AND c.agent_id = e.agent_id AND c.shared = e.shared;
    INSERT INTO episode_terms AS t (tenant_id, user_id, lexeme, agent_id, shared, df)
    SELECT e.tenant_id, e.user_id, l.lexeme, e.agent_id, e.shared, sign * count(*)
      FROM unnest(changed) AS e, unnest(tsvector_to_array(e.tsv)) AS l(lexeme) WHERE e.archived_at IS NULL
     GROUP BY 1, 2, 3, 4, 5 ORDER BY 1, 2, 3, 4, 5
    ON CONFLICT (tenant_id, user_id, lexeme, agent_id, shared) DO UPDATE SET df = t.df + excluded.df;
    DELETE FROM episode_terms t USING unnest(changed) AS e, unnest(tsvector_to_array(e.tsv)) AS l(lexeme)
     WHERE sign < 0 AND t.df <= 0 AND t.tenant_id = e.tenant_id AND t.user_id = e.user_id
       AND t.lexeme = l.lexeme AND t.agent_id = e.agent_id AND t.shared = e.shared;
$$;

CREATE FUNCTION memstream_episode_stats() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        PERFORM memstream_episode_stats_add(1, ARRAY(SELECT n::episodes FROM new_rows n));
    ELSIF TG_OP = 'DELETE' THEN
        PERFORM memstream_episode_stats_add(-1, ARRAY(SELECT o::episodes FROM old_rows o));
    ELSE
        -- Only rows whose counted parts changed (access statistics touch none of them).
        PERFORM memstream_episode_stats_add(-1, ARRAY(
            SELECT o::episodes FROM old_rows o JOIN new_rows n USING (tenant_id, event_id)
             WHERE (o.archived_at IS NULL, o.tsv, o.token_count, o.memory_type, o.user_id, o.project_id, o.agent_id, o.shared)
                   IS DISTINCT FROM
                   (n.archived_at IS NULL, n.tsv, n.token_count, n.memory_type, n.user_id, n.project_id, n.agent_id, n.shared)));
        PERFORM memstream_episode_stats_add(1, ARRAY(
            SELECT n::episodes FROM old_rows o JOIN new_rows n USING (tenant_id, event_id)
             WHERE (o.archived_at IS NULL, o.tsv, o.token_count, o.memory_type, o.user_id, o.project_id, o.agent_id, o.shared)
                   IS DISTINCT FROM
                   (n.archived_at IS NULL, n.tsv, n.token_count, n.memory_type, n.user_id, n.project_id, n.agent_id, n.shared)));
    END IF;
    RETURN NULL;
END
$$;

CREATE FUNCTION memstream_episode_stats_truncate() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
BEGIN
    TRUNCATE episode_counts, episode_terms;
    RETURN NULL;
END
$$;

CREATE TRIGGER episodes_stats_insert AFTER INSERT ON episodes
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION memstream_episode_stats();
CREATE TRIGGER episodes_stats_update AFTER UPDATE ON episodes
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION memstream_episode_stats();
CREATE TRIGGER episodes_stats_delete AFTER DELETE ON episodes
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION memstream_episode_stats();
CREATE TRIGGER episodes_stats_truncate AFTER TRUNCATE ON episodes
    FOR EACH STATEMENT EXECUTE FUNCTION memstream_episode_stats_truncate();
REVOKE EXECUTE ON FUNCTION memstream_episode_stats_add(integer, episodes[]) FROM PUBLIC;

-- The totals of the rows already there (every tenant: row-level security is lifted for the
-- owner inside this transaction only).
ALTER TABLE episodes NO FORCE ROW LEVEL SECURITY;
INSERT INTO episode_counts (tenant_id, user_id, project_id, agent_id, shared, episodes, episodic_tokens)
SELECT tenant_id, user_id, coalesce(project_id, ''), agent_id, shared, count(*),
       coalesce(sum(token_count) FILTER (WHERE memory_type = 'episodic'), 0)
  FROM episodes WHERE archived_at IS NULL GROUP BY 1, 2, 3, 4, 5;
INSERT INTO episode_terms (tenant_id, user_id, lexeme, agent_id, shared, df)
SELECT e.tenant_id, e.user_id, l.lexeme, e.agent_id, e.shared, count(*)
  FROM episodes e, unnest(tsvector_to_array(e.tsv)) AS l(lexeme) WHERE e.archived_at IS NULL
 GROUP BY 1, 2, 3, 4, 5;
ALTER TABLE episodes FORCE ROW LEVEL SECURITY;

CREATE INDEX episodes_owner_tsv ON episodes USING gin (tenant_id, user_id, tsv);
DROP INDEX episodes_tsv;

-- Access statistics of memories in a table of their own (sinks/postgres/access.py).
--
-- A read used to count itself on the memory's own row (UPDATE episodes SET access_count = ...).
-- An episode row is wide (its embedding, its text twice over as tsvectors) and its pages are
-- full, so such an update was never HOT: every returned hit wrote a new row version, a new
-- entry in each of the table's eight indexes (the HNSW graph and the full-text GIN index
-- included), and left a dead row behind. Under a steady read load the GIN index's pending
-- list and the heap grew with reads alone; a full-text query at 100,000 episodes went from
-- 1.7 to 6.3 ms in its index scan (docs/benchmarks.md). Here a read writes one narrow row,
-- keyed by the memory, under one B-tree.
--
-- Nothing here is derived from the event log, so a replay's switch (which deletes and copies
-- memories back) leaves it alone, and what was counted survives a rebuild. A row goes with its
-- memory where the memory is deleted on purpose: forgetting one memory, expiry, retention and
-- a user's erasure (sinks/postgres/access.py, called by each).

CREATE TABLE memory_access (
    tenant_id        text        NOT NULL,
    kind             text        NOT NULL CHECK (kind IN ('episode', 'fact')),
    memory_id        uuid        NOT NULL,
    user_id          text        NOT NULL,
    access_count     integer     NOT NULL,
    last_accessed_at timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, kind, memory_id)
);
CREATE INDEX memory_access_user ON memory_access (tenant_id, user_id);

-- What was counted so far, of every tenant (row-level security is lifted for the owner inside
-- this transaction only, before it is turned on for the new table).
ALTER TABLE episodes NO FORCE ROW LEVEL SECURITY;
ALTER TABLE facts NO FORCE ROW LEVEL SECURITY;
INSERT INTO memory_access (tenant_id, kind, memory_id, user_id, access_count, last_accessed_at)
SELECT tenant_id, 'episode', event_id, user_id, access_count, coalesce(last_accessed_at, ingested_at)
  FROM episodes WHERE access_count > 0 OR last_accessed_at IS NOT NULL;
INSERT INTO memory_access (tenant_id, kind, memory_id, user_id, access_count, last_accessed_at)
SELECT tenant_id, 'fact', fact_id, user_id, access_count, coalesce(last_accessed_at, recorded_at)
  FROM facts WHERE access_count > 0 OR last_accessed_at IS NOT NULL;

ALTER TABLE episodes FORCE ROW LEVEL SECURITY;
ALTER TABLE facts FORCE ROW LEVEL SECURITY;
ALTER TABLE memory_access ENABLE ROW LEVEL SECURITY;
ALTER TABLE memory_access FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON memory_access
    USING (tenant_id = memstream_current_tenant())
    WITH CHECK (tenant_id = memstream_current_tenant());

-- episodes.access_count / last_accessed_at and the same columns of facts stay for now: code
-- older than this schema still writes them while an upgrade rolls out (docs/operations.md,
-- "Upgrades"). Nothing reads them any more; a later release drops them.
COMMENT ON COLUMN episodes.access_count IS 'unused since migration 0013 (memory_access)';
COMMENT ON COLUMN episodes.last_accessed_at IS 'unused since migration 0013 (memory_access)';
COMMENT ON COLUMN facts.access_count IS 'unused since migration 0013 (memory_access)';
COMMENT ON COLUMN facts.last_accessed_at IS 'unused since migration 0013 (memory_access)';

-- One agent's private facts are a subject of their own: they never supersede, merge with or
-- reveal another agent's private facts, nor a shared fact (sinks/postgres/facts.py,
-- subject_key). A private fact's subject key gains its agent, length-prefixed; shared facts
-- keep theirs. Current graph edges are unique per owner too (an agent's private edge no longer
-- shadows another's). Rows of every tenant are rewritten: row-level security is lifted for
-- the owner inside this transaction only.

ALTER TABLE facts NO FORCE ROW LEVEL SECURITY;
ALTER TABLE edges NO FORCE ROW LEVEL SECURITY;

UPDATE facts SET subject_key = 'agent:' || length(agent_id) || ':' || agent_id || ':' || subject_key
 WHERE NOT shared AND subject_key NOT LIKE 'agent:%';

DROP INDEX edges_current;
CREATE UNIQUE INDEX edges_current ON edges
    (tenant_id, user_id, (CASE WHEN shared THEN '' ELSE agent_id END), subject, predicate, object)
    WHERE valid_to IS NULL;

ALTER TABLE facts FORCE ROW LEVEL SECURITY;
ALTER TABLE edges FORCE ROW LEVEL SECURITY;

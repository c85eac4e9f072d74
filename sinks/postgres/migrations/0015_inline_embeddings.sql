-- An episode's embedding stays in its row. A row over about 2 KB (the default
-- toast_tuple_target) has its largest values moved out: pgvector's type is stored `external`,
-- so a turn of a few hundred characters with its two tsvectors put its embedding (1 KB at 256
-- dimensions) in the TOAST table, 17 % of the rows of a million-row load. Every distance the
-- exact scan computes and every candidate a read returns then paid a TOAST index descent and
-- another page for that row: about 0.5 ms of the 2 ms exact scan of a user's 1,000 episodes.
-- Rows up to 4 KB (half a page) now stay whole; longer contents are still compressed and moved
-- out as before. Rows written before keep their layout until rewritten (`VACUUM FULL episodes`
-- rewrites the table under an exclusive lock: docs/operations.md, "Upgrades and schema migrations").
ALTER TABLE episodes SET (toast_tuple_target = 4080);

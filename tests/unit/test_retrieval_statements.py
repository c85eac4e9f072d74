"""The read path's composed statements: compacted without touching literals, and short
enough for psycopg to keep their parse (a statement over the limit is parsed on every query)."""

from __future__ import annotations

import itertools

import pytest
from psycopg._queries import MAX_CACHED_STATEMENT_LENGTH

from sinks.postgres.queries import retrieval


def test_compacting_keeps_quoted_literals_as_they_are() -> None:
    statement = "SELECT  'a  |\n b',\n   x ||  ' '  || y  FROM t\n WHERE z = 'it''s   so'  "
    assert retrieval._compact(statement) == "SELECT 'a  |\n b', x || ' ' || y FROM t WHERE z = 'it''s   so'"


@pytest.mark.parametrize(
    ("kinds", "lists"),
    [
        (kinds, lists)
        for n in (1, 2)
        for kinds in itertools.combinations(("fact", "skill"), n)
        for m in (1, 2)
        for lists in itertools.combinations(("vector", "text"), m)
    ],
)
def test_the_facts_and_skills_statement_keeps_its_parse_cached(kinds: tuple[str, ...], lists: tuple[str, ...]) -> None:
    statement = retrieval._small_sql(kinds, lists)  # type: ignore[arg-type]
    assert len(statement) <= MAX_CACHED_STATEMENT_LENGTH
    assert statement.count("(SELECT 'fact'") == ("fact" in kinds) * len(lists)
    assert statement.count("(SELECT 'skill'") == ("skill" in kinds) * len(lists)


def test_the_episodes_statements_keep_their_parse_cached() -> None:
    for statement in (retrieval._vector_sql("hnsw", 768, "a/model@768"), retrieval._vector_sql("exact", 768), retrieval._TERMS_SQL,
                      retrieval._episode_text_sql(12), retrieval._episode_text_sql(12, broad_project=True)):  # fmt: skip
        assert len(statement) <= MAX_CACHED_STATEMENT_LENGTH


def test_the_hnsw_statement_names_its_model_as_the_partial_index_does() -> None:
    """The index's predicate is ``embedding_model = '<model>'`` (vector_index.py): the statement
    implies it for every plan, a generic one included (tests/integration/test_search.py)."""
    statement = retrieval._vector_sql("hnsw", 768, "gemini/o'brien%s@768")
    assert "embedding_model = %(model)s" not in statement
    assert "embedding_model = 'gemini/o''brien%%s@768'" in statement  # quoted, and "%" is not a placeholder
    assert "embedding_model = %(model)s" in retrieval._vector_sql("exact", 768)  # no index to match
    with pytest.raises(ValueError, match="names its model"):
        retrieval._vector_sql("hnsw", 768)

import math

import pytest

from sinks.postgres.queries.retrieval import term_weights, tsquery_term


def test_rare_words_select_and_weigh_more_than_common_ones() -> None:
    weights = term_weights(1000, {"caroline": 50, "poetri": 3, "read": 12, "unseen": 0}, df_cap=50)
    assert weights.selective == ["poetri", "read", "unseen"], "a word at the cap (a speaker's name) does not select"
    assert weights.idf["unseen"] > weights.idf["poetri"] > weights.idf["read"] > weights.idf["caroline"] > 0
    assert weights.idf["poetri"] == pytest.approx(math.log(1 + (1000 - 3 + 0.5) / 3.5))


def test_when_every_word_is_common_the_least_common_select() -> None:
    weights = term_weights(100, {"deploy": 40, "servic": 30, "log": 60}, df_cap=25)
    assert weights.selective == ["servic", "deploy"]
    assert term_weights(100, {}, df_cap=25).selective == []


def test_a_lexeme_becomes_a_literal_tsquery_term() -> None:
    assert tsquery_term("poetri") == "'poetri'"
    assert tsquery_term("o'neil") == "'o''neil'"
    assert tsquery_term("a\\b") == "'a\\\\b'"

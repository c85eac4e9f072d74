import math

import pytest

from sinks.postgres.queries.retrieval import term_weights, tsquery_term


def test_rare_words_select_and_weigh_more_than_common_ones() -> None:
    weights = term_weights(1000, {"caroline": 50, "poetri": 3, "read": 12, "unseen": 0}, budget=40)
    assert weights.selective == ["poetri", "read"], "what would pull in more than the budget (a name) does not select"
    assert weights.idf["unseen"] > weights.idf["poetri"] > weights.idf["read"] > weights.idf["caroline"] > 0
    assert weights.idf["poetri"] == pytest.approx(math.log(1 + (1000 - 3 + 0.5) / 3.5))


def test_a_small_memory_selects_on_every_word_it_holds() -> None:
    """20 turns, the project's name in 3 of them: it still finds them (it did not when any
    word in 3 or more episodes counted as common)."""
    weights = term_weights(20, {"blog": 3, "framework": 1, "weather": 0})
    assert weights.selective == ["blog", "framework"]


def test_the_rarest_word_selects_even_beyond_the_budget() -> None:
    weights = term_weights(100_000, {"deploy": 40_000, "servic": 30_000, "log": 60_000}, budget=2_000)
    assert weights.selective == ["servic"]
    assert term_weights(100, {}).selective == []
    assert term_weights(100, {"unseen": 0}).selective == [], "a word no episode holds selects nothing"


def test_a_word_in_most_episodes_never_selects_unless_every_word_is() -> None:
    weights = term_weights(62, {"caroline": 61, "poetri": 1, "attend": 0})
    assert weights.selective == ["poetri"], "a name on every turn selects nothing by itself"
    assert term_weights(62, {"caroline": 61}).selective == ["caroline"], "asked about the name alone, it selects"
    assert term_weights(100, {"deploy": 60, "servic": 70, "log": 80}).selective == ["deploy", "servic"]


def test_selection_takes_the_rarest_first_up_to_the_budget() -> None:
    df = {f"w{i}": 300 * (i + 1) for i in range(10)}  # 300, 600, 900, ...
    weights = term_weights(1_000_000, df, budget=2_000)
    assert weights.selective == ["w0", "w1", "w2"], "300 + 600 + 900 fit in 2,000; 1,200 more does not"


def test_a_lexeme_becomes_a_literal_tsquery_term() -> None:
    assert tsquery_term("poetri") == "'poetri'"
    assert tsquery_term("o'neil") == "'o''neil'"
    assert tsquery_term("a\\b") == "'a\\\\b'"

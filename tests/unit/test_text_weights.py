import math

import pytest

from sinks.postgres.queries.retrieval import common_df, many_rows, project_lexemes, term_weights, tsquery_term


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


def test_when_no_word_fits_the_budget_both_of_the_two_rarest_must_match() -> None:
    weights = term_weights(1_000_000, {"deploy": 40_000, "servic": 30_000, "log": 60_000}, budget=2_000)
    assert weights.selective == ["deploy", "servic"] and weights.all_of
    assert weights.tsquery() == "'deploy' & 'servic'"
    assert term_weights(100, {}).selective == []
    assert term_weights(100, {"unseen": 0}).selective == [], "a word no episode holds selects nothing"


def test_a_common_word_never_selects_unless_every_word_is() -> None:
    weights = term_weights(62, {"caroline": 61, "poetri": 1, "attend": 0})
    assert weights.selective == ["poetri"] and not weights.all_of, "a name on every turn selects nothing by itself"
    alone = term_weights(62, {"caroline": 61})
    assert (alone.selective, alone.tsquery()) == (["caroline"], "'caroline'"), "asked about the name alone, it selects"
    common = term_weights(100, {"deploy": 40, "servic": 30, "log": 60})
    assert common.selective == ["deploy", "servic"] and common.all_of
    assert term_weights(1000, {"deploy": 50, "servic": 49}).selective == ["servic"], "5 % of 1,000 is common"


def test_common_means_a_share_of_a_large_memory_and_root_n_of_a_small_one() -> None:
    assert common_df(20) == pytest.approx(20**0.5) and common_df(10_000) == 500
    assert term_weights(20, {"blog": 4, "hike": 5}).selective == ["blog"], "√20 ≈ 4.5 episodes is common"


def test_selection_takes_the_rarest_first_up_to_the_budget() -> None:
    df = {f"w{i}": 300 * (i + 1) for i in range(10)}  # 300, 600, 900, ... all rare in a million
    weights = term_weights(1_000_000, df, budget=2_000)
    assert weights.selective == ["w0", "w1", "w2"], "300 + 600 + 900 fit in 2,000; 1,200 more does not"
    assert weights.tsquery() == "'w0' | 'w1' | 'w2'"


def test_a_lexeme_becomes_a_literal_tsquery_term() -> None:
    assert tsquery_term("poetri") == "'poetri'"
    assert tsquery_term("o'neil") == "'o''neil'"
    assert tsquery_term("a\\b") == "'a\\\\b'"


def test_with_an_owner_tag_the_query_asks_for_that_owners_lexemes() -> None:
    weights = term_weights(1_000_000, {"deploy": 40_000, "servic": 30_000, "it's": 2})
    assert weights.tsquery("0123456789abcdef") == "'0123456789abcdef:it''s'"
    both = term_weights(100, {"deploy": 40, "servic": 30})
    assert both.tsquery("tag") == "'tag:deploy' & 'tag:servic'"


def test_with_a_project_the_query_asks_for_its_lexeme_or_no_projects() -> None:
    """The index then returns only the rows a project filter keeps (migration 0016); without an
    owner tag there is no such lexeme to ask for."""
    both = term_weights(100, {"deploy": 40, "servic": 30})
    assert both.tsquery("tag", project_id="it's/eu") == (
        "('tag:deploy' & 'tag:servic') & ('tag: project it''s/eu' | 'tag: no project')"
    )
    assert both.tsquery(project_id="P") == "'deploy' & 'servic'"
    assert both.tsquery("tag", project_id=None) == "'tag:deploy' & 'tag:servic'"
    assert project_lexemes("tag", "P") == ("tag: project P", "tag: no project")


def test_only_a_query_that_may_read_many_rows_asks_for_the_project() -> None:
    """Walking a project's postings costs the index more than a handful of rows cost the heap."""
    every_word_common = term_weights(100_000, {"deploy": 40_000, "servic": 30_000})
    assert every_word_common.all_of and many_rows(every_word_common)
    rare = {"pr": 3, "8934": 2}
    assert not many_rows(term_weights(100_000, rare))
    pulled = {"migrat": 300, "alloydb": 250}
    assert term_weights(100_000, pulled).selective == ["alloydb", "migrat"]
    assert many_rows(term_weights(100_000, pulled)), "550 rows pulled in: more than ALL_OF_ROWS"

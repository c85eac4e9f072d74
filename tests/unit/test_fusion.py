import pytest

from agents_gateway.retrieval.fusion import fuse_rrf


def test_rrf_scores_are_weighted_reciprocal_ranks() -> None:
    fused = fuse_rrf([("vector", 1.0, ["a", "b"]), ("text", 1.0, ["b", "c"])], k=60)
    scores = {f.key: f.score for f in fused}
    assert scores["b"] == pytest.approx(1 / 62 + 1 / 61)
    assert scores["a"] == pytest.approx(1 / 61)
    assert scores["c"] == pytest.approx(1 / 62)
    assert [f.key for f in fused] == ["b", "a", "c"]
    assert fused[0].ranks == {"vector": 2, "text": 1}


def test_weights_move_the_ranking() -> None:
    lists = [("vector", 0.1, ["a", "b"]), ("text", 0.9, ["b", "a"])]
    assert [f.key for f in fuse_rrf(lists)] == ["b", "a"]
    lists = [("vector", 0.9, ["a", "b"]), ("text", 0.1, ["b", "a"])]
    assert [f.key for f in fuse_rrf(lists)] == ["a", "b"]


def test_ties_break_by_best_rank_then_list_order() -> None:
    fused = fuse_rrf([("vector", 1.0, ["a"]), ("text", 1.0, ["b"])])
    assert fused[0].score == fused[1].score
    assert [f.key for f in fused] == ["a", "b"]


def test_a_key_repeated_within_one_list_counts_once() -> None:
    fused = fuse_rrf([("vector", 1.0, ["a", "a", "b"])])
    assert {f.key: f.ranks["vector"] for f in fused} == {"a": 1, "b": 3}
    assert fused[0].score == pytest.approx(1 / 61)


def test_empty_inputs_give_nothing() -> None:
    assert fuse_rrf([]) == []
    assert fuse_rrf([("vector", 1.0, []), ("text", 1.0, [])]) == []


@pytest.mark.parametrize(("lists", "k"), [([("v", -1.0, ["a"])], 60), ([("v", 1.0, ["a"])], 0)])
def test_rejects_nonsense_parameters(lists: list[tuple[str, float, list[str]]], k: int) -> None:
    with pytest.raises(ValueError):
        fuse_rrf(lists, k=k)


def test_a_better_rank_in_a_later_list_breaks_the_tie() -> None:
    """Equal scores: the key with the best rank anywhere first, even when it reached that rank
    in a later list than the other key's first sighting."""
    fused = fuse_rrf([("vector", 1.0, ["a", "b"]), ("text", 1.0, ["b", "a"])])
    assert fused[0].score == fused[1].score
    assert [f.key for f in fused] == ["a", "b"]  # a: rank 1 in vector; b: rank 1 in text, a later list
    fused = fuse_rrf([("vector", 1.0, ["x", "a", "b"]), ("text", 1.0, ["b", "y", "a"])])
    assert {f.key: f.ranks for f in fused}["b"] == {"vector": 3, "text": 1}
    assert [f.key for f in fused][:2] == ["b", "a"]  # b's 1/63 + 1/61 > a's 1/62 + 1/63

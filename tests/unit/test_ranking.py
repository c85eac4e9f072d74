from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from agents_gateway.retrieval.ranking import RankingOptions, Scored, adjust, boost_factor, decay_factor, mmr

NOW = datetime(2026, 11, 30, tzinfo=UTC)


def item(key: str, rrf: float, *, age_days: float = 0, importance: float = 0.5, tags: tuple[str, ...] = (),
         vector: tuple[float, ...] = (1.0, 0.0), decays: bool = True) -> Scored:  # fmt: skip
    return Scored(key, rrf, NOW - timedelta(days=age_days), importance, tags,
                  np.asarray(vector, dtype=np.float32), decays=decays)  # fmt: skip


def test_decay_halves_every_half_life() -> None:
    assert decay_factor(NOW, NOW, 30) == 1.0
    assert decay_factor(NOW - timedelta(days=30), NOW, 30) == pytest.approx(0.5)
    assert decay_factor(NOW - timedelta(days=90), NOW, 30) == pytest.approx(0.125)
    assert decay_factor(NOW + timedelta(days=1), NOW, 30) == 1.0, "a clock ahead is not rewarded"


def test_decay_with_a_floor_moves_halfway_to_it_every_half_life_and_never_below() -> None:
    assert decay_factor(NOW, NOW, 30, floor=0.8) == 1.0
    assert decay_factor(NOW - timedelta(days=30), NOW, 30, floor=0.8) == pytest.approx(0.9)
    assert decay_factor(NOW - timedelta(days=3650), NOW, 30, floor=0.8) == pytest.approx(0.8)


def test_a_strong_old_match_still_beats_a_weak_fresh_one() -> None:
    # RRF scores: first in both lists vs twentieth in both (k = 60).
    strong_old, weak_fresh = item("old", 2 / 61, age_days=400), item("fresh", 2 / 80, age_days=0)
    ranked = adjust([weak_fresh, strong_old], RankingOptions(boosts=False), NOW)
    assert [i.key for i in ranked] == ["old", "fresh"]


def test_an_old_episode_ranks_below_a_fresh_one_of_equal_relevance() -> None:
    old, fresh = item("old", 1.0, age_days=60), item("fresh", 1.0, age_days=1)
    ranked = adjust([old, fresh], RankingOptions(boosts=False), NOW)
    assert [i.key for i in ranked] == ["fresh", "old"]
    assert adjust([item("old", 1.0, age_days=60)], RankingOptions(decay=False), NOW)[0].decay == 1.0
    fact = item("fact", 1.0, age_days=365, decays=False)  # current state does not decay
    assert adjust([fact], RankingOptions(), NOW)[0].decay == 1.0


def test_boosts_for_importance_and_tags() -> None:
    assert boost_factor(0.0, (), importance_weight=0.5, tag_weight=0.2) == 1.0
    assert boost_factor(1.0, (), importance_weight=0.5, tag_weight=0.2) == 1.5
    assert boost_factor(0.0, ("Decision",), importance_weight=0.5, tag_weight=0.2) == pytest.approx(1.2)
    ranked = adjust([item("plain", 1.0), item("error", 1.0, tags=("error",))], RankingOptions(decay=False), NOW)
    assert ranked[0].key == "error"


def test_mmr_drops_a_near_duplicate_and_prefers_diversity() -> None:
    a = item("a", 1.0, vector=(1.0, 0.0))
    a_copy = item("a-copy", 0.99, vector=(0.999, 0.01))
    b = item("b", 0.6, vector=(0.0, 1.0))
    picked = mmr([a, a_copy, b], 3, RankingOptions())
    assert [i.key for i in picked] == ["a", "b"], "the near-duplicate is gone and diversity comes second"
    assert [i.key for i in mmr([a, a_copy, b], 3, RankingOptions(mmr=False))] == ["a", "a-copy", "b"]


def test_mmr_keeps_k() -> None:
    items = [item(str(i), 1.0 - i / 10, vector=(np.cos(i), np.sin(i))) for i in range(8)]
    assert len(mmr(items, 5, RankingOptions(duplicate_cosine=1.01))) == 5
    assert mmr([], 5, RankingOptions()) == []


def _mmr_as_defined(
    items: list[Scored], k: int, options: RankingOptions, vectors: np.ndarray
) -> list[tuple[str, float]]:
    """MMR written out as its docstring states it, pick by pick, for the check below."""
    unit = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-30)
    top = max(i.score for i in items) or 1.0
    left = list(range(len(items)))
    chosen: list[int] = []
    out: list[tuple[str, float]] = []
    while left and len(chosen) < k:

        def gain(i: int) -> float:
            redundancy = max((0.0, *(float(unit[i] @ unit[j]) for j in chosen)))  # dissimilar: no penalty
            return options.mmr_lambda * items[i].score / top - (1 - options.mmr_lambda) * redundancy

        best = max(left, key=lambda i: (gain(i), -i))  # the first of equal gains, as argmax
        left.remove(best)
        penalty = max((0.0, *(float(unit[best] @ unit[j]) for j in chosen)))
        if chosen and penalty >= options.duplicate_cosine:
            continue
        chosen.append(best)
        out.append((str(items[best].key), penalty))
    return out


@pytest.mark.parametrize("seed", range(40))
def test_mmr_picks_what_its_definition_picks(seed: int) -> None:
    """The picks and penalties of ``mmr`` (buffers reused from pick to pick) are those of MMR
    computed afresh at every pick, near-duplicates included (pinned random cases)."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 60))
    vectors = rng.standard_normal((n, 8)).astype(np.float32)
    if n > 3:
        vectors[1] = vectors[0] * 1.001  # a near-duplicate of the first
    items = [item(str(i), float(rng.random())) for i in range(n)]
    options = RankingOptions(mmr_lambda=float(rng.choice([0.3, 0.7, 1.0])))
    k = int(rng.integers(1, 20))
    picked = mmr(items, k, options, vectors)
    expected = _mmr_as_defined(items, k, options, vectors)
    assert [str(i.key) for i in picked] == [key for key, _ in expected]
    assert [i.mmr_penalty for i in picked] == pytest.approx([p for _, p in expected], abs=1e-5)


@pytest.mark.parametrize("seed", range(40))
def test_mmr_picks_come_in_the_order_of_the_score_they_show(seed: int) -> None:
    """A hit shows ``ranking_score`` (issue 46: hits listed 0.0252, 0.0215, 0.0240): MMR's gain in
    the units of the relevance, never rising from one pick to the next, the first pick's its
    relevance, each the relevance less (1-λ)/λ · the best relevance · its penalty."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 60))
    vectors = rng.standard_normal((n, 8)).astype(np.float32)
    items = [item(str(i), float(rng.random()) / 30) for i in range(n)]
    options = RankingOptions(mmr_lambda=float(rng.choice([0.3, 0.7, 1.0])))
    picked = mmr(items, int(rng.integers(1, 30)), options, vectors)
    shown = [i.ranking_score for i in picked]
    assert shown == sorted(shown, reverse=True)
    top = max(i.score for i in items)
    assert shown[0] == picked[0].score
    weight = (1 - options.mmr_lambda) / options.mmr_lambda
    assert shown == pytest.approx([i.score - weight * top * i.mmr_penalty for i in picked])


def test_without_mmr_a_hit_shows_its_relevance() -> None:
    items = adjust([item("a", 0.03), item("b", 0.02, age_days=90)], RankingOptions(), NOW)
    for picked in (mmr(items, 2, RankingOptions(mmr=False)), items):
        assert [i.ranking_score for i in picked] == [i.score for i in picked]


def test_mmr_lambda_must_leave_relevance_a_weight() -> None:
    for wrong in (0.0, -0.1, 1.5):
        with pytest.raises(ValueError, match="mmr_lambda"):
            RankingOptions(mmr_lambda=wrong)

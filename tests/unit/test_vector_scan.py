from sinks.postgres.queries.retrieval import choose_scan


def test_auto_uses_hnsw_only_for_a_large_user_and_only_once_the_index_is_built() -> None:
    assert choose_scan("auto", 19_999, hnsw_min_episodes=20_000, index_ready=True) == "exact"
    assert choose_scan("auto", 20_000, hnsw_min_episodes=20_000, index_ready=True) == "hnsw"
    assert choose_scan("auto", 90_000, hnsw_min_episodes=20_000, index_ready=False) == "exact"


def test_a_fixed_strategy_is_what_it_says() -> None:
    assert choose_scan("exact", 10**6, hnsw_min_episodes=0, index_ready=True) == "exact"
    assert choose_scan("hnsw", 1, hnsw_min_episodes=10**6, index_ready=False) == "hnsw"

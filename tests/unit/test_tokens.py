from memstream.tokens import TokenCounter


def test_remembered_counts_are_the_tokenizers_and_the_cache_stays_bounded() -> None:
    counter = TokenCounter()
    counter.CACHED = 3
    texts = ["alpha beta", "gamma", "a much longer line of text to count", "delta", "alpha beta"]
    fresh = [TokenCounter().count(t) for t in texts]
    assert counter.count_many(texts) == fresh
    assert counter.count_many(texts[::-1]) == fresh[::-1], "answered from the cache, the same"
    assert len(counter._counts) == 3
    long = "word " * 2_000
    assert counter.count_many([long]) == [TokenCounter().count(long)] and long not in counter._counts

from collections.abc import Sequence

import numpy as np

from memstream.embedder.base import CachedEmbedder, Embedder, Vectors, normalise


class CountingEmbedder(Embedder):
    model_name = "test/counting@4"
    dim = 4

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    async def embed(self, texts: Sequence[str]) -> Vectors:
        self.calls.append(list(texts))
        return normalise([[len(t), 1.0, 0.0, float(i)] for i, t in enumerate(texts)])


async def test_only_misses_reach_the_provider_once_each() -> None:
    inner = CountingEmbedder()
    cached = CachedEmbedder(inner)
    first = await cached.embed(["ok", "thanks", "ok"])
    assert inner.calls == [["ok", "thanks"]]
    second = await cached.embed(["thanks", "new", "ok"])
    assert inner.calls[-1] == ["new"]
    np.testing.assert_array_equal(first[0], first[2])
    np.testing.assert_array_equal(second[2], first[0])
    np.testing.assert_array_equal(second[0], first[1])
    assert (cached.hits, cached.misses) == (3, 3)


async def test_least_recently_used_entries_are_evicted() -> None:
    inner = CountingEmbedder()
    cached = CachedEmbedder(inner, max_entries=2)
    await cached.embed(["a", "b"])
    await cached.embed(["a"])  # a is now the most recent
    await cached.embed(["c"])  # evicts b
    await cached.embed(["a", "b"])
    assert inner.calls[-1] == ["b"]


async def test_vectors_are_unit_length() -> None:
    vectors = await CachedEmbedder(CountingEmbedder()).embed(["hello", "world"])
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-6)
    assert vectors.dtype == np.float32

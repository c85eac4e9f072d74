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


async def test_an_entry_made_for_one_tenant_is_not_a_hit_for_another() -> None:
    """A hit is faster than a miss: shared across tenants, it told one tenant what another had
    just searched for (issue 45: 0.2-0.4 ms on a search)."""
    inner = CountingEmbedder()
    cached = CachedEmbedder(inner)
    first = await cached.for_tenant("acme").embed(["the merger with globex"])
    again = await cached.for_tenant("acme").embed(["the merger with globex"])
    assert inner.calls == [["the merger with globex"]], "the same tenant's repeat is a hit"
    other = await cached.for_tenant("globex").embed(["the merger with globex"])
    assert inner.calls[-1] == ["the merger with globex"] and len(inner.calls) == 2, "another tenant's is a miss"
    await cached.embed(["the merger with globex"])
    assert len(inner.calls) == 3, "nor is it a hit for a call that names no tenant"
    np.testing.assert_array_equal(first, again)
    np.testing.assert_array_equal(first, other)
    assert (cached.hits, cached.misses) == (1, 3)


def test_cache_keys_differ_by_tenant_and_by_text() -> None:
    keys = {CachedEmbedder.key(tenant, text) for tenant in ("a", "b", "ab", None) for text in ("", "x", "bx")}
    assert len(keys) == 12


async def test_a_view_names_the_tenant_it_is_asked_for() -> None:
    inner = CountingEmbedder()
    cached = CachedEmbedder(inner)
    await cached.for_tenant("a").embed(["t"])
    await cached.for_tenant("a").for_tenant("b").embed(["t"])
    assert len(inner.calls) == 2
    assert cached.for_tenant("a").model_name == inner.model_name and cached.for_tenant("a").dim == inner.dim


async def test_the_gateways_cache_keeps_nothing_for_a_call_that_names_no_tenant() -> None:
    inner = CountingEmbedder()
    cached = CachedEmbedder(inner, cache_without_tenant=False)
    await cached.embed(["ok"])
    await cached.embed(["ok"])
    assert len(inner.calls) == 2 and not cached._cache
    await cached.for_tenant("a").embed(["ok"])
    await cached.for_tenant("a").embed(["ok"])
    assert len(inner.calls) == 3


async def test_a_batch_of_many_tenants_caches_each_text_for_its_own_tenant() -> None:
    """The workers embed batches that mix tenants: one call for the misses, each entry its
    own tenant's (issue 45: with Gemini a hit skips a request, which a tenant could time)."""
    inner = CountingEmbedder()
    cached = CachedEmbedder(inner, cache_without_tenant=False)
    await cached.embed_owned(["ok", "ok", "deploy"], ["acme", "globex", "acme"])
    assert inner.calls == [["ok", "ok", "deploy"]], "one call, and acme's 'ok' is not globex's"
    await cached.embed_owned(["deploy", "deploy", "ok"], ["acme", "globex", "globex"])
    assert inner.calls[-1] == ["deploy"] and len(inner.calls) == 2, "only globex's new text is a miss"
    assert (await cached.for_tenant("globex").embed(["deploy"])).shape == (1, inner.dim)
    assert len(inner.calls) == 2, "the batch's entries are the tenant's own, for any of its calls"


async def test_a_provider_without_a_cache_embeds_a_batch_of_many_tenants_as_one() -> None:
    inner = CountingEmbedder()
    vectors = await inner.embed_owned(["a", "b"], ["acme", "globex"])
    assert vectors.shape == (2, inner.dim) and inner.calls == [["a", "b"]]

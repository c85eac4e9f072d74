"""The embedding interface every provider implements, and the cache in front of it."""

from __future__ import annotations

import hashlib
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from memstream.errors import MemstreamError

Vectors = npt.NDArray[np.float32]


class EmbeddingError(MemstreamError):
    """A provider could not embed; ``retryable`` says whether trying again can help."""

    def __init__(self, message: str, *, retryable: bool) -> None:
        super().__init__(message)
        self.retryable = retryable


class Embedder(ABC):
    """Turns texts into unit-length float32 vectors of a fixed dimension."""

    #: Recorded with every vector, e.g. ``wordllama/l2_supercat@256``.
    model_name: str
    dim: int
    #: Cosine below which a text is unrelated to a query in this model's space (measured per
    #: model: unrelated sentences sit near 0 for WordLlama, far higher for others); ``None``
    #: when not measured, and then no memory is dropped for its similarity alone.
    unrelated_below: float | None = None

    @abstractmethod
    async def embed(self, texts: Sequence[str]) -> Vectors:
        """Return an (len(texts), dim) array of L2-normalised vectors."""

    async def aclose(self) -> None:  # noqa: B027 - optional hook
        """Release clients; the default has nothing to release."""

    def for_tenant(self, tenant_id: str) -> Embedder:
        """This embedder as ``tenant_id``'s requests use it: the same vectors, and a cache in front
        of the provider that keeps the tenant's texts to itself (``CachedEmbedder``). A provider
        without a cache is the same for every tenant."""
        return self

    async def embed_owned(self, texts: Sequence[str], owners: Sequence[str]) -> Vectors:
        """``texts[i]`` embedded for tenant ``owners[i]``: a batch of many tenants in one call
        to the provider, each text cached for its own tenant only (``CachedEmbedder``)."""
        return await self.embed(texts)


def normalise(vectors: npt.ArrayLike) -> Vectors:
    arr = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(arr, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    result: Vectors = arr / norms
    return result


#: A cache entry's key: the tenant it belongs to (None: calls naming none) and the text's digest.
CacheKey = tuple[str | None, bytes]


class CachedEmbedder(Embedder):
    """An LRU cache of text -> vector in front of a provider (repeated texts are common:
    "ok", "thanks", the same tool output). Only misses reach the provider, once each.

    Entries are the tenant's whose request embedded them (``for_tenant``): a hit is faster
    than a miss, so a cache shared by tenants would tell one whether another had just embedded
    a text (a red team timed it: 0.2-0.4 ms on a search). A batch of many tenants' texts (the
    workers') names each text's tenant (``embed_owned``). ``embed`` on the cache itself names
    no tenant: with ``cache_without_tenant`` those calls share one set of entries (for tools
    and tests of one tenant); without it (the gateway and the workers) they are not cached at
    all, so a call that forgets its tenant costs time, never isolation."""

    def __init__(self, inner: Embedder, *, max_entries: int = 50_000, cache_without_tenant: bool = True) -> None:
        self.inner = inner
        self.model_name = inner.model_name
        self.dim = inner.dim
        self.unrelated_below = inner.unrelated_below
        self.max_entries = max_entries
        self.cache_without_tenant = cache_without_tenant
        self._cache: OrderedDict[CacheKey, Vectors] = OrderedDict()
        self.hits = 0
        self.misses = 0

    @staticmethod
    def key(tenant_id: str | None, text: str) -> CacheKey:
        """A text's entry for a tenant (None: for calls that name none)."""
        return tenant_id, hashlib.blake2b(text.encode("utf-8"), digest_size=16).digest()

    def for_tenant(self, tenant_id: str) -> Embedder:
        return _TenantEmbedder(self, tenant_id)

    async def embed(self, texts: Sequence[str]) -> Vectors:
        if not self.cache_without_tenant:
            self.misses += len(texts)
            return await self.inner.embed(texts)
        return await self.embed_as(None, texts)

    async def embed_as(self, tenant_id: str | None, texts: Sequence[str]) -> Vectors:
        """``texts`` embedded for ``tenant_id``: only that tenant's entries are hits."""
        return await self._embed_keyed(texts, [tenant_id] * len(texts))

    async def embed_owned(self, texts: Sequence[str], owners: Sequence[str]) -> Vectors:
        return await self._embed_keyed(texts, owners)

    async def _embed_keyed(self, texts: Sequence[str], owners: Sequence[str | None]) -> Vectors:
        """``texts[i]`` for ``owners[i]``: hits are that tenant's entries; the misses of every
        tenant go to the provider in one call."""
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        missing: dict[CacheKey, list[int]] = {}
        missing_texts: list[str] = []
        for i, (text, tenant_id) in enumerate(zip(texts, owners, strict=True)):
            key = self.key(tenant_id, text)
            cached = self._cache.get(key)
            if cached is not None:
                self._cache.move_to_end(key)
                out[i] = cached
                self.hits += 1
                continue
            if key in missing:
                self.hits += 1  # a repeat within the batch: embedded once
            else:
                missing[key] = []
                missing_texts.append(text)
                self.misses += 1
            missing[key].append(i)
        if missing_texts:
            vectors = await self.inner.embed(missing_texts)
            for (key, positions), vector in zip(missing.items(), vectors, strict=True):
                out[positions] = vector
                self._cache[key] = vector
            while len(self._cache) > self.max_entries:
                self._cache.popitem(last=False)
        return out

    async def aclose(self) -> None:
        await self.inner.aclose()


class _TenantEmbedder(Embedder):
    """A ``CachedEmbedder`` as one tenant uses it (``for_tenant``)."""

    def __init__(self, cache: CachedEmbedder, tenant_id: str) -> None:
        self.cache = cache
        self.tenant_id = tenant_id
        self.model_name = cache.model_name
        self.dim = cache.dim
        self.unrelated_below = cache.unrelated_below

    async def embed(self, texts: Sequence[str]) -> Vectors:
        return await self.cache.embed_as(self.tenant_id, texts)

    async def embed_owned(self, texts: Sequence[str], owners: Sequence[str]) -> Vectors:
        return await self.cache.embed_owned(texts, owners)

    def for_tenant(self, tenant_id: str) -> Embedder:
        return self.cache.for_tenant(tenant_id)

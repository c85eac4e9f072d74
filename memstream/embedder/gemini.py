"""Gemini embeddings through google-genai (used when a Gemini key is configured)."""

from __future__ import annotations

from collections.abc import Sequence

import aiohttp
import httpx
from google import genai
from google.genai import errors as genai_errors
from google.genai import types

from memstream.embedder.base import Embedder, EmbeddingError, Vectors, normalise

#: Gemini's batchEmbedContents accepts at most this many texts per call.
MAX_TEXTS_PER_CALL = 100
_RETRYABLE_STATUS = {408, 429, 500, 502, 503, 504}


def model_name(model: str, dim: int) -> str:
    return f"gemini/{model}@{dim}"


class GeminiEmbedder(Embedder):
    """``gemini-embedding-001`` (or another model) at a chosen output dimension."""

    def __init__(
        self,
        *,
        api_key: str,
        model: str,
        dim: int,
        base_url: str | None = None,
        timeout_s: float = 30.0,
    ) -> None:
        self.model = model
        self.dim = dim
        self.model_name = model_name(model, dim)
        options = types.HttpOptions(timeout=int(timeout_s * 1000))
        if base_url:
            options = types.HttpOptions(base_url=base_url, api_version="v1beta", timeout=int(timeout_s * 1000))
        # Keep a reference: an inline client is closed before its call returns (docs/benchmarks.md).
        self._client = genai.Client(api_key=api_key, http_options=options)

    async def embed(self, texts: Sequence[str]) -> Vectors:
        items = list(texts)
        rows: list[list[float]] = []
        for start in range(0, len(items), MAX_TEXTS_PER_CALL):
            chunk = items[start : start + MAX_TEXTS_PER_CALL]
            try:
                response = await self._client.aio.models.embed_content(
                    model=self.model,
                    contents=chunk,
                    config=types.EmbedContentConfig(output_dimensionality=self.dim),
                )
            except genai_errors.APIError as exc:
                raise EmbeddingError(
                    f"Gemini embedding failed with {exc.code}: {exc.message}",
                    retryable=exc.code in _RETRYABLE_STATUS,
                ) from exc
            except (httpx.TransportError, aiohttp.ClientError, TimeoutError, OSError) as exc:
                # google-genai speaks through aiohttp when it is installed, else httpx.
                raise EmbeddingError(f"Gemini unreachable or too slow: {exc!r}", retryable=True) from exc
            embeddings = response.embeddings or []
            if len(embeddings) != len(chunk):
                raise EmbeddingError(
                    f"Gemini returned {len(embeddings)} embeddings for {len(chunk)} texts",
                    retryable=True,
                )
            for embedding in embeddings:
                values = embedding.values or []
                if len(values) != self.dim:
                    raise EmbeddingError(
                        f"Gemini returned a {len(values)}-d vector, expected {self.dim}",
                        retryable=False,
                    )
                rows.append(values)
        if not rows:
            return normalise([[0.0] * self.dim])[:0]
        return normalise(rows)

    async def aclose(self) -> None:
        await self._client.aio.aclose()

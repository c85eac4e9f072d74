"""Gemini embeddings through the real google-genai client, against a local fake server."""

from __future__ import annotations

import numpy as np
import pytest

from memstream.embedder import EmbeddingError, build_embedder
from memstream.embedder.gemini import GeminiEmbedder
from memstream.settings import Settings
from tests.fixtures.gemini import FakeGemini, fake_vector


def embedder(gemini: FakeGemini, *, dim: int = 8, timeout_s: float = 5.0) -> GeminiEmbedder:
    return GeminiEmbedder(
        api_key="test-key",
        model="gemini-embedding-001",
        dim=dim,
        base_url=gemini.base_url,
        timeout_s=timeout_s,
    )


async def test_embeds_through_batch_embed_contents(gemini: FakeGemini) -> None:
    e = embedder(gemini)
    try:
        vectors = await e.embed(["dark mode", "rsync"])
    finally:
        await e.aclose()
    assert vectors.shape == (2, 8)
    expected = np.asarray(fake_vector("dark mode", 8), dtype=np.float32)
    np.testing.assert_allclose(vectors[0], expected / np.linalg.norm(expected), rtol=1e-5)
    path, body = gemini.requests[0]
    assert path.endswith("/models/gemini-embedding-001:batchEmbedContents")
    assert [r["outputDimensionality"] for r in body["requests"]] == [8, 8]
    assert e.model_name == "gemini/gemini-embedding-001@8"


async def test_large_batches_are_split(gemini: FakeGemini) -> None:
    e = embedder(gemini, dim=4)
    try:
        vectors = await e.embed([f"text {i}" for i in range(230)])
    finally:
        await e.aclose()
    assert vectors.shape == (230, 4)
    assert [len(body["requests"]) for _, body in gemini.requests] == [100, 100, 30]


@pytest.mark.parametrize(("status", "retryable"), [(429, True), (503, True), (400, False)])
async def test_errors_say_whether_to_retry(gemini: FakeGemini, status: int, retryable: bool) -> None:
    gemini.then(status=status)
    e = embedder(gemini)
    try:
        with pytest.raises(EmbeddingError) as caught:
            await e.embed(["x"])
    finally:
        await e.aclose()
    assert caught.value.retryable is retryable


async def test_wrong_dimension_is_not_retryable(gemini: FakeGemini) -> None:
    gemini.then(body={"embeddings": [{"values": [0.1, 0.2]}]})
    e = embedder(gemini)
    try:
        with pytest.raises(EmbeddingError, match="2-d vector") as caught:
            await e.embed(["x"])
    finally:
        await e.aclose()
    assert caught.value.retryable is False


async def test_a_timeout_is_retryable(gemini: FakeGemini) -> None:
    gemini.then(delay_s=3.0)
    e = embedder(gemini, timeout_s=1.0)
    try:
        with pytest.raises(EmbeddingError) as caught:
            await e.embed(["slow"])
    finally:
        await e.aclose()
    assert caught.value.retryable is True


def test_provider_is_chosen_by_configuration(gemini: FakeGemini) -> None:
    assert build_embedder(Settings()).model_name == "wordllama/l2_supercat@256"
    chosen = build_embedder(Settings(gemini_api_key="k", gemini_base_url=gemini.base_url, gemini_embedding_dim=16))
    assert chosen.model_name == "gemini/gemini-embedding-001@16"

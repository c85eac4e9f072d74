"""WordLlama: a static embedding model that ships inside its PyPI wheel and loads offline."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from memstream.embedder.base import Embedder, EmbeddingError, Vectors, normalise

MODEL_CONFIG = "l2_supercat"
MODEL_DIM = 256


class WordLlamaEmbedder(Embedder):
    """256-d WordLlama (l2_supercat); ~20k sentences/s on two cores (docs/benchmarks.md)."""

    model_name = f"wordllama/{MODEL_CONFIG}@{MODEL_DIM}"
    dim = MODEL_DIM
    #: Unrelated sentences score -0.1..0.1 against a question, related ones 0.4 and up
    #: (tests/integration/test_read_path.py holds such a memory).
    unrelated_below = 0.2

    def __init__(self) -> None:
        try:
            import wordllama
            from wordllama import WordLlama
        except ImportError as exc:  # pragma: no cover - hard dependency
            raise EmbeddingError("the local embedding model needs `pip install wordllama`", retryable=False) from exc
        package_dir = Path(wordllama.__file__).parent
        try:
            self._model: Any = WordLlama.load(
                config=MODEL_CONFIG, dim=MODEL_DIM, cache_dir=package_dir, disable_download=True
            )
        except FileNotFoundError as exc:
            raise EmbeddingError(
                f"the wordllama wheel does not contain {MODEL_CONFIG}@{MODEL_DIM}: {exc}",
                retryable=False,
            ) from exc

    def _embed_sync(self, texts: list[str]) -> Vectors:
        return normalise(self._model.embed(texts, norm=False, batch_size=256))

    async def embed(self, texts: Sequence[str]) -> Vectors:
        items = list(texts)
        if not items:
            return normalise([[0.0] * self.dim])[:0]
        if len(items) <= 16:  # cheaper than a thread hop
            return self._embed_sync(items)
        return await asyncio.to_thread(self._embed_sync, items)

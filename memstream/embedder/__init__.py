"""Embedding providers: one interface (``base.py``), one file per provider."""

from memstream.embedder.base import CachedEmbedder, Embedder, EmbeddingError
from memstream.embedder.factory import build_embedder

__all__ = ["CachedEmbedder", "Embedder", "EmbeddingError", "build_embedder"]

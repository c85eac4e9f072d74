"""Choose the embedding provider from settings."""

from __future__ import annotations

import logging

from memstream.embedder.base import CachedEmbedder, Embedder
from memstream.settings import ConfigurationError, Settings

log = logging.getLogger(__name__)


def _provider(settings: Settings) -> str:
    """Gemini when asked for (or, with ``auto``, when a key is set), else the local model."""
    if settings.embedding_provider == "auto":
        return "gemini" if settings.gemini_api_key is not None else "local"
    return settings.embedding_provider


def build_embedder(settings: Settings, *, cache_without_tenant: bool = True) -> Embedder:
    """The configured provider behind a cache (``CachedEmbedder``: ``cache_without_tenant``
    says whether calls that name no tenant share entries; the gateway's never do)."""
    provider = _provider(settings)
    inner: Embedder
    if provider == "gemini":
        if settings.gemini_api_key is None:
            raise ConfigurationError("MEMSTREAM_EMBEDDING_PROVIDER=gemini needs MEMSTREAM_GEMINI_API_KEY")
        from memstream.embedder.gemini import GeminiEmbedder

        inner = GeminiEmbedder(
            api_key=settings.gemini_api_key.get_secret_value(),
            model=settings.gemini_embedding_model,
            dim=settings.gemini_embedding_dim,
            base_url=settings.gemini_base_url,
        )
    else:
        from memstream.embedder.local import WordLlamaEmbedder

        inner = WordLlamaEmbedder()
    log.info("embedding with %s", inner.model_name)
    return CachedEmbedder(inner, cache_without_tenant=cache_without_tenant)


def embedding_identity(settings: Settings) -> tuple[str, int]:
    """(model name, dimension) the configured provider will record, without loading it."""
    if _provider(settings) == "gemini":
        from memstream.embedder.gemini import model_name

        return model_name(settings.gemini_embedding_model, settings.gemini_embedding_dim), settings.gemini_embedding_dim
    from memstream.embedder.local import WordLlamaEmbedder

    return WordLlamaEmbedder.model_name, WordLlamaEmbedder.dim

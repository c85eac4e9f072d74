"""Choose the extractor and the summariser: Gemini when configured, else the offline fallback."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from memstream.extraction.base import Extractor
from memstream.llm.base import LLMClient
from memstream.settings import ConfigurationError, Settings
from memstream.summarization.base import Summarizer

log = logging.getLogger(__name__)


@dataclass
class MemoryModels:
    """What turns conversations into long-term memory in this process."""

    extractor: Extractor
    summarizer: Summarizer
    #: The offline extractor/summariser, used as they are or when the LLM's answer is malformed.
    fallback_extractor: Extractor
    fallback_summarizer: Summarizer
    llm: LLMClient | None

    @property
    def description(self) -> str:
        if self.llm is None:
            return f"{self.extractor.name} + {self.summarizer.name} (offline fallback: no Gemini key configured)"
        return f"{self.extractor.name} + {self.summarizer.name}"

    async def aclose(self) -> None:
        if self.llm is not None:
            await self.llm.aclose()


def build_models(settings: Settings) -> MemoryModels:
    from memstream.extraction.offline import RuleExtractor
    from memstream.summarization.offline import ExtractiveSummarizer

    offline_extractor, offline_summarizer = RuleExtractor(), ExtractiveSummarizer()
    provider = settings.llm_provider
    if provider == "auto":
        provider = "gemini" if settings.gemini_api_key is not None else "offline"
    if provider == "offline":
        log.warning(
            "no Gemini key: extracting facts with %s and summarising with %s (rule-based fallback)",
            offline_extractor.name, offline_summarizer.name,
        )  # fmt: skip
        return MemoryModels(offline_extractor, offline_summarizer, offline_extractor, offline_summarizer, None)
    from memstream.extraction.llm import LLMExtractor
    from memstream.summarization.llm import LLMSummarizer

    llm = build_llm(settings)
    if llm is None:
        raise ConfigurationError("MEMSTREAM_LLM_PROVIDER=gemini needs MEMSTREAM_GEMINI_API_KEY")
    log.info("extracting facts and summarising with %s", llm.name)
    return MemoryModels(LLMExtractor(llm), LLMSummarizer(llm), offline_extractor, offline_summarizer, llm)


def build_llm(settings: Settings) -> LLMClient | None:
    """The configured LLM client, or None (offline)."""
    if settings.llm_provider == "offline" or settings.gemini_api_key is None:
        return None
    from memstream.llm.gemini import GeminiLLM

    return GeminiLLM(
        api_key=settings.gemini_api_key.get_secret_value(),
        model=settings.gemini_model,
        base_url=settings.gemini_base_url,
        timeout_s=settings.llm_timeout_s,
        max_concurrency=settings.llm_max_concurrency,
        max_attempts=settings.llm_max_attempts,
        retry_initial_s=settings.llm_retry_initial_s,
        retry_max_s=settings.llm_retry_max_s,
    )


def describe_models(settings: Settings) -> str:
    """What ``build_models`` would choose, without building it (for /readyz/workers)."""
    if settings.llm_provider == "offline" or (settings.llm_provider == "auto" and settings.gemini_api_key is None):
        return "extraction and summaries by the offline rule-based fallback (no Gemini key configured)"
    return f"extraction and summaries by gemini/{settings.gemini_model}"

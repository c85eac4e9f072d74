"""The extractor interface (offline rules, or an LLM)."""

from __future__ import annotations

from abc import ABC, abstractmethod

from memstream.extraction.types import ExtractedFact, ExtractionContext, ExtractionTurn


class Extractor(ABC):
    #: Recorded with every fact, e.g. ``offline-rules/1`` or ``gemini/gemini-2.5-flash/1``;
    #: the version changes whenever the output for the same input may change.
    name: str
    #: True for the rule-based fallback: named so in logs, /readyz/workers and the README.
    fallback: bool = False

    @abstractmethod
    async def extract(self, turn: ExtractionTurn, context: ExtractionContext) -> list[ExtractedFact]:
        """Facts stated (or decided) in ``turn``; an empty list when there are none."""

    async def aclose(self) -> None:  # noqa: B027 - optional hook
        """Release clients."""

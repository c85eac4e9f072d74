"""The summariser interface (offline extractive, or an LLM)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True)
class SummaryTurn:
    role: str
    content: str
    event_time: datetime


@dataclass(frozen=True)
class Summary:
    text: str
    #: Tokens sent to and received from the model (0 for the offline summariser).
    input_tokens: int
    output_tokens: int
    summarizer: str


class Summarizer(ABC):
    #: e.g. ``offline-extractive/1`` or ``gemini/gemini-2.5-flash/1``
    name: str
    fallback: bool = False

    @abstractmethod
    async def summarize(self, previous: str | None, turns: Sequence[SummaryTurn], *, max_tokens: int) -> Summary:
        """Fold ``turns`` (oldest first) into ``previous`` (the summary so far, or None).

        The result must keep every decision, preference, rule, error and open question of
        the turns, and stay within about ``max_tokens`` tokens."""

    async def aclose(self) -> None:  # noqa: B027 - optional hook
        """Release clients."""

"""The interface every LLM provider implements: one JSON-producing call."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

from memstream.errors import MemstreamError


class LLMError(MemstreamError):
    """A call failed. ``kind`` is one of: ``rate_limited`` (429 / RESOURCE_EXHAUSTED, after the
    provider's own retries), ``unavailable`` (5xx, network), ``timeout``, ``malformed`` (the
    model's output was not JSON of the requested shape), ``refused`` (4xx other than 429:
    a bad request or credentials, not worth retrying). ``retryable`` says whether a later
    attempt can help."""

    def __init__(self, message: str, *, kind: str, retryable: bool) -> None:
        super().__init__(message)
        self.kind = kind
        self.retryable = retryable


@dataclass(frozen=True)
class LLMResult:
    """A parsed JSON answer and what it cost."""

    data: Any
    text: str
    input_tokens: int
    output_tokens: int
    model: str


@dataclass
class LLMUsage:
    """Running totals of one client (exported as metrics)."""

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    retries: int = 0
    errors: dict[str, int] = field(default_factory=dict)


class LLMClient(ABC):
    #: e.g. ``gemini/gemini-2.5-flash``
    name: str
    usage: LLMUsage

    @abstractmethod
    async def generate_json(self, *, system: str, prompt: str, schema: dict[str, Any]) -> LLMResult:
        """Ask for JSON matching ``schema`` (an OpenAPI-style JSON schema object).

        Retries rate limits and transient failures itself (with backoff, a bounded number of
        times), then raises LLMError. Output that does not parse as JSON raises
        LLMError(kind="malformed", retryable=True)."""

    async def aclose(self) -> None:  # noqa: B027 - optional hook
        """Release clients; the default has nothing to release."""

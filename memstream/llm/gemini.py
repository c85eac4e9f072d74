"""Gemini through google-genai: JSON-mode calls with a concurrency cap, retries and usage totals.

The SDK's own retries are switched off (``HttpRetryOptions(attempts=1)``) so that this module
alone decides how often a call is repeated and can count the retries it makes.
"""

from __future__ import annotations

import asyncio
import logging
import random
import re
from typing import Any

import aiohttp
import httpx
import orjson
from google import genai
from google.genai import errors as genai_errors
from google.genai import types

from memstream.llm.base import LLMClient, LLMError, LLMResult, LLMUsage

logger = logging.getLogger(__name__)

#: ``google.rpc.RetryInfo`` in a 429's details says how long Gemini wants us to wait ("13s").
_RETRY_INFO = "type.googleapis.com/google.rpc.RetryInfo"
_SECONDS = re.compile(r"^\s*(\d+(?:\.\d+)?)s\s*$")


class _StatusError(LLMError):
    """An LLMError from an HTTP status, carrying the wait Gemini asked for (if it asked)."""

    def __init__(self, message: str, *, kind: str, retryable: bool, retry_after_s: float | None) -> None:
        super().__init__(message, kind=kind, retryable=retryable)
        self.retry_after_s = retry_after_s


def classify_status(code: int) -> tuple[str, bool]:
    """The LLMError ``(kind, retryable)`` for an HTTP status Gemini answered with."""
    if code == 429:
        return "rate_limited", True
    if code == 408:
        return "timeout", True
    if code >= 500:
        return "unavailable", True
    return "refused", False


def retry_after_s(exc: genai_errors.APIError) -> float | None:
    """The wait Gemini asked for in a ``RetryInfo`` detail of the error, if it sent one."""
    details = exc.details.get("error", {}).get("details") if isinstance(exc.details, dict) else None
    if not isinstance(details, list):
        return None
    for detail in details:
        if isinstance(detail, dict) and detail.get("@type") == _RETRY_INFO:
            match = _SECONDS.match(str(detail.get("retryDelay", "")))
            if match:
                return float(match.group(1))
    return None


class GeminiLLM(LLMClient):
    """One Gemini model answering JSON of a given schema, at most ``max_concurrency`` calls at once.

    Rate limits (429), 5xx, timeouts and transport errors are retried up to ``max_attempts``
    tries in all, with exponential backoff and jitter between ``retry_initial_s`` and
    ``retry_max_s`` (longer if Gemini asks for it, never above ``retry_max_s``). Other 4xx are
    refused at once. Output that is not JSON is ``malformed`` and not retried here: whether to
    ask again is the caller's decision, since the same prompt tends to fail the same way.
    """

    def __init__(
        self,
        *,
        api_key: str,
        model: str,
        base_url: str | None = None,
        timeout_s: float,
        max_concurrency: int,
        max_attempts: int,
        retry_initial_s: float,
        retry_max_s: float,
    ) -> None:
        if max_concurrency < 1 or max_attempts < 1:
            raise ValueError("max_concurrency and max_attempts must be at least 1")
        self.model = model
        self.name = f"gemini/{model}"
        self.usage = LLMUsage()
        self._timeout_s = timeout_s
        self._max_attempts = max_attempts
        self._retry_initial_s = retry_initial_s
        self._retry_max_s = retry_max_s
        # The cap holds per HTTP request, not across backoff sleeps: a waiting call frees its slot.
        self._slots = asyncio.Semaphore(max_concurrency)
        options = types.HttpOptions(
            base_url=base_url,
            api_version="v1beta" if base_url else None,
            timeout=int(timeout_s * 1000),
            retry_options=types.HttpRetryOptions(attempts=1),
        )
        # Keep a reference: an inline client is closed before its call returns (docs/benchmarks.md).
        self._client = genai.Client(api_key=api_key, http_options=options)

    async def generate_json(self, *, system: str, prompt: str, schema: dict[str, Any]) -> LLMResult:
        """Ask for JSON matching ``schema``; see the class docstring for retries and errors."""
        self.usage.calls += 1
        config = types.GenerateContentConfig(
            system_instruction=system,
            response_mime_type="application/json",
            response_schema=schema,
            temperature=0,
        )
        try:
            response = await self._call_with_retries(prompt, config)
            return self._parse(response)
        except LLMError as exc:
            self.usage.errors[exc.kind] = self.usage.errors.get(exc.kind, 0) + 1
            raise

    async def _call_with_retries(
        self, prompt: str, config: types.GenerateContentConfig
    ) -> types.GenerateContentResponse:
        attempt = 1
        while True:
            try:
                return await self._call_once(prompt, config)
            except LLMError as exc:
                if not exc.retryable or attempt >= self._max_attempts:
                    raise
                delay_s = self._backoff_s(attempt, exc)
                logger.warning(
                    "Gemini %s call failed (%s), attempt %s of %s; retrying in %.2f s",
                    self.model,
                    exc.kind,
                    attempt,
                    self._max_attempts,
                    delay_s,
                )
            self.usage.retries += 1
            attempt += 1
            await asyncio.sleep(delay_s)

    async def _call_once(self, prompt: str, config: types.GenerateContentConfig) -> types.GenerateContentResponse:
        """One HTTP request, its failures translated to LLMError (the cause kept as ``__cause__``)."""
        async with self._slots:
            try:
                # The SDK's timeout is per request; this one also bounds anything around it.
                async with asyncio.timeout(self._timeout_s):
                    return await self._client.aio.models.generate_content(
                        model=self.model, contents=prompt, config=config
                    )
            except genai_errors.APIError as exc:
                kind, retryable = classify_status(exc.code)
                raise _StatusError(
                    f"Gemini {self.model} answered {exc.code} {exc.status}: {exc.message}",
                    kind=kind,
                    retryable=retryable,
                    retry_after_s=retry_after_s(exc),
                ) from exc
            except (TimeoutError, httpx.TimeoutException) as exc:
                # Checked before transport errors: aiohttp's and httpx's timeouts are both.
                raise LLMError(
                    f"Gemini {self.model} did not answer within {self._timeout_s} s",
                    kind="timeout",
                    retryable=True,
                ) from exc
            except (httpx.TransportError, aiohttp.ClientError, OSError) as exc:
                # google-genai speaks through aiohttp when it is installed, else httpx.
                raise LLMError(f"Gemini {self.model} unreachable: {exc!r}", kind="unavailable", retryable=True) from exc

    def _backoff_s(self, attempt: int, exc: LLMError) -> float:
        """Exponential backoff with "equal jitter": half the step fixed, half random."""
        step = min(self._retry_max_s, self._retry_initial_s * 2.0 ** (attempt - 1))
        delay = step / 2 + random.uniform(0, step / 2)
        if isinstance(exc, _StatusError) and exc.retry_after_s is not None:
            delay = max(delay, min(exc.retry_after_s, self._retry_max_s))
        return delay

    def _parse(self, response: types.GenerateContentResponse) -> LLMResult:
        """Record the tokens spent, then parse the first candidate's text as JSON."""
        metadata = response.usage_metadata
        input_tokens = (metadata.prompt_token_count or 0) if metadata else 0
        output_tokens = (metadata.candidates_token_count or 0) if metadata else 0
        self.usage.input_tokens += input_tokens
        self.usage.output_tokens += output_tokens
        text = response.text if response.candidates else None
        if not text or not text.strip():
            reason = response.candidates[0].finish_reason if response.candidates else "no candidates"
            raise LLMError(f"Gemini {self.model} returned no text ({reason})", kind="malformed", retryable=True)
        try:
            data = orjson.loads(text)
        except orjson.JSONDecodeError as exc:
            raise LLMError(
                f"Gemini {self.model} returned text that is not JSON: {text[:200]!r}",
                kind="malformed",
                retryable=True,
            ) from exc
        return LLMResult(data=data, text=text, input_tokens=input_tokens, output_tokens=output_tokens, model=self.model)

    async def aclose(self) -> None:
        """Close the SDK's async session (and its sync one, which it opens eagerly)."""
        await self._client.aio.aclose()
        self._client.close()

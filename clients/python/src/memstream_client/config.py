"""Where the gateway is and how to talk to it: the client's options, from its arguments and,
where they are left out, the environment (read when a client is made, never at import)."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass, field

#: The gateway ``memstream up`` and ``memstream gateway`` serve by default.
DEFAULT_BASE_URL = "http://127.0.0.1:8080"
BASE_URL_ENV = "MEMSTREAM_BASE_URL"
API_KEY_ENV = "MEMSTREAM_API_KEY"
DEFAULT_TIMEOUT_S = 10.0
DEFAULT_MAX_RETRIES = 2


@dataclass(frozen=True)
class ClientOptions:
    """What every request of one client object uses (``with_options`` makes another)."""

    base_url: str
    api_key: str | None = field(repr=False)
    timeout_s: float = DEFAULT_TIMEOUT_S
    max_retries: int = DEFAULT_MAX_RETRIES
    headers: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.api_key is not None and not self.api_key.strip():
            raise ValueError("api_key is empty: pass a key, or None to use MEMSTREAM_API_KEY")
        if not self.base_url.startswith(("http://", "https://")):
            raise ValueError(f"base_url must start with http:// or https:// (got {self.base_url!r})")
        if isinstance(self.timeout_s, bool) or not isinstance(self.timeout_s, int | float) or self.timeout_s <= 0:
            raise ValueError(f"timeout_s must be a positive number of seconds (got {self.timeout_s!r})")
        if isinstance(self.max_retries, bool) or not isinstance(self.max_retries, int) or self.max_retries < 0:
            raise ValueError(f"max_retries must be an integer >= 0 (got {self.max_retries!r})")

    def replace(
        self, *, timeout_s: float | None = None, max_retries: int | None = None, api_key: str | None = None
    ) -> ClientOptions:
        """These options with the ones given changed (None keeps the current value)."""
        return dataclasses.replace(
            self,
            timeout_s=self.timeout_s if timeout_s is None else timeout_s,
            max_retries=self.max_retries if max_retries is None else max_retries,
            api_key=self.api_key if api_key is None else api_key,
        )


def resolve_options(
    base_url: str | None,
    api_key: str | None,
    *,
    timeout_s: float,
    max_retries: int,
    headers: Mapping[str, str] | None,
    client_base_url: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> ClientOptions:
    """The options of a new client. ``base_url``: the argument, else the injected httpx
    client's own base URL, else ``$MEMSTREAM_BASE_URL``, else ``DEFAULT_BASE_URL``.
    ``api_key``: the argument, else ``$MEMSTREAM_API_KEY`` (an empty value counts as unset)."""
    env = os.environ if environ is None else environ
    url = base_url or client_base_url or env.get(BASE_URL_ENV) or DEFAULT_BASE_URL
    key = api_key or env.get(API_KEY_ENV) or None
    return ClientOptions(
        base_url=url.rstrip("/"),
        api_key=key,
        timeout_s=timeout_s,
        max_retries=max_retries,
        headers=dict(headers or {}),
    )

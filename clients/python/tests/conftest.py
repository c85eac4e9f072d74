"""Clients on a scripted transport (``client_script.Script``), whose waits between attempts are
noted instead of slept."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest

from client_script import BASE_URL, KEY, Answer, Script
from memstream_client import AsyncMemstream, Memstream


class Sleeps(list[float]):
    """The waits a client asked for."""

    async def asleep(self, seconds: float) -> None:
        self.append(seconds)


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


@pytest.fixture
def sync_client(sleeps: Sleeps) -> Callable[..., tuple[Memstream, Script]]:
    """``make(*answers, **client_options)``: a sync client on a script of those answers."""

    def make(*answers: Answer, **options: Any) -> tuple[Memstream, Script]:
        script = Script(*answers)
        http = httpx.Client(transport=httpx.MockTransport(script))
        client = Memstream(BASE_URL, options.pop("api_key", KEY), http_client=http, **options)
        client._sleep = sleeps.append
        return client, script

    return make


@pytest.fixture
def async_client(sleeps: Sleeps) -> Callable[..., tuple[AsyncMemstream, Script]]:
    """``make(*answers, **client_options)``: an async client on a script of those answers."""

    def make(*answers: Answer, **options: Any) -> tuple[AsyncMemstream, Script]:
        script = Script(*answers)
        http = httpx.AsyncClient(transport=httpx.MockTransport(script))
        client = AsyncMemstream(BASE_URL, options.pop("api_key", KEY), http_client=http, **options)
        client._sleep = sleeps.asleep
        return client, script

    return make

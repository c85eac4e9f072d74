"""The memory explorer (/ui) in a real browser: Playwright driving the system's Chromium
against a real gateway (uvicorn) and both workers on the embedded test stack, with the seed
scenario loaded into a tenant of its own.

- ``chromium_path``: the browser, or a skip saying how to get one — a failure instead when
  ``MEMSTREAM_BROWSER_TESTS=required`` (CI sets it: there, the browser tests never skip);
- ``browser``, ``explorer``: Chromium, and the served gateway with the seeded tenant
  (``tests/browser/seed.py``), once for these tests (closed before the rest of the suite);
- ``tab``: a fresh browser page that records every dialog, console message, page error and
  request, and fails the test on an uncaught error, a policy violation, or a key in a URL;
- ``screenshots``: the folder the views' screenshots go to (named at the end of the run;
  ``MEMSTREAM_UI_SCREENSHOTS`` chooses another).
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
import pytest_asyncio

from tests.browser.seed import Seeded, seed_tenant
from tests.browser.tab import Tab
from tests.fixtures.stack import RunningStack, WorkerHandle, serve_gateway

if TYPE_CHECKING:
    from playwright.async_api import Browser, ConsoleMessage, Dialog

#: "required": a missing browser (or Playwright) fails the browser tests instead of skipping them.
BROWSER_TESTS_ENV = "MEMSTREAM_BROWSER_TESTS"
CHROMIUM_ENV = "MEMSTREAM_CHROMIUM"
DEFAULT_CHROMIUM = "/usr/bin/chromium"
SCREENSHOTS_ENV = "MEMSTREAM_UI_SCREENSHOTS"
#: How long a page may take to show what a test waits for.
UI_TIMEOUT_MS = 15_000


@pytest.fixture(scope="session")
def chromium_path() -> str:
    path = os.environ.get(CHROMIUM_ENV, DEFAULT_CHROMIUM)
    problem = None
    if not Path(path).is_file():
        problem = (
            f"browser tests did not run: no Chromium at {path} (as root, `make test` installs it; or "
            f"`apt-get install -y chromium`, or set {CHROMIUM_ENV})"
        )
    elif importlib.util.find_spec("playwright") is None:
        problem = "browser tests did not run: Playwright is not installed (pip install -e '.[dev]')"
    if problem is not None:
        if os.environ.get(BROWSER_TESTS_ENV) == "required":
            pytest.fail(f"{problem}; {BROWSER_TESTS_ENV}=required")
        pytest.skip(problem)
    return path


@pytest_asyncio.fixture(scope="package", loop_scope="session")
async def browser(chromium_path: str) -> AsyncIterator[Browser]:
    """Playwright's asyncio API, on the test session's event loop (its sync API would leave a
    loop running in the thread for every later test)."""
    from playwright.async_api import async_playwright

    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(executable_path=chromium_path)
        try:
            yield launched
        finally:
            await launched.close()


def _running(handle: WorkerHandle) -> WorkerHandle:
    if not handle.process.running:  # an earlier test of the session may have killed it
        handle.start()
    return handle


@pytest.fixture(scope="package")
def explorer(stack: RunningStack, worker: WorkerHandle, memory_worker: WorkerHandle) -> Iterator[Seeded]:
    _running(worker)
    _running(memory_worker)
    with serve_gateway(stack, "ui-gateway") as served:
        yield seed_tenant(stack, served.url)


SCREENSHOTS = pytest.StashKey[Path]()


@pytest.fixture(scope="session")
def screenshots(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    chosen = os.environ.get(SCREENSHOTS_ENV)
    folder = Path(chosen) if chosen else tmp_path_factory.mktemp("ui-screenshots", numbered=True)
    folder.mkdir(parents=True, exist_ok=True)
    request.config.stash[SCREENSHOTS] = folder
    return folder


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    """Where the screenshots of the views went (look at them)."""
    folder = config.stash.get(SCREENSHOTS, None)
    if folder is not None and any(folder.glob("*.png")):
        terminalreporter.write_line(f"memory explorer screenshots: {folder}")


@pytest_asyncio.fixture(loop_scope="session")
async def tab(chromium_path: str, explorer: Seeded, browser: Browser) -> AsyncIterator[Tab]:
    """A fresh page (the browser is checked first: no stack is started for a skip)."""
    context = await browser.new_context(viewport={"width": 1360, "height": 900}, locale="en-GB", timezone_id="UTC")
    context.set_default_timeout(UI_TIMEOUT_MS)
    page = await context.new_page()
    watched = Tab(page, explorer.url)

    async def on_dialog(dialog: Dialog) -> None:
        watched.dialogs.append(f"{dialog.type}: {dialog.message}")
        await dialog.dismiss()

    def on_console(message: ConsoleMessage) -> None:
        watched.console.append((message.type, message.text))

    page.on("dialog", on_dialog)
    page.on("console", on_console)
    page.on("pageerror", lambda error: watched.errors.append(str(error)))
    page.on("request", lambda request: watched.requests.append(request))
    try:
        yield watched
        cookies = await context.cookies()
    finally:
        await context.close()
    assert watched.errors == [], f"uncaught errors in the page: {watched.errors}"
    assert watched.dialogs == [], f"the page opened dialogs: {watched.dialogs}"
    refused = [text for _, text in watched.console if "Content Security Policy" in text]
    assert refused == [], f"the page broke its own policy: {refused}"
    for key in explorer.keys():
        # The secret is everything after the key id ("msk_<id>_<secret>"): it may hold "_"
        # itself, and its last fragment alone can be a letter or two that any URL contains.
        secret = key.split("_", 2)[-1]
        leaked = [r.url for r in watched.requests if key in r.url or secret in r.url]
        assert leaked == [], f"a key in a URL: {leaked}"
    assert cookies == [], "the explorer sets no cookie"

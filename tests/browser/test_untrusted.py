"""What the page cannot trust: memory content (a stored turn of markup must show as text in
every view and run nothing), the gateway's failures (401, 403, 429, 503 each say what to do),
and answers with fields missing or graphs of 200 nodes (nothing breaks)."""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import Route, expect

from ops.demo import PROJECT
from tests.browser.seed import HOSTILE, HOSTILE_TAG, Seeded
from tests.browser.tab import Tab

pytestmark = pytest.mark.integration


async def signed_in(tab: Tab, explorer: Seeded, user: str | None = None) -> None:
    await tab.sign_in(explorer.admin_key)
    await tab.choose_user(user or explorer.user)
    await expect(tab.page.locator("#current-user")).to_contain_text(user or explorer.user)


async def assert_nothing_ran(tab: Tab) -> None:
    page = tab.page
    assert await page.locator("img").count() == 0, "an <img> of the stored markup exists"
    assert await page.locator("script").count() == 1, "only the page's own module script"
    assert await page.evaluate("() => document.querySelectorAll('[onerror], [onload], [onclick]').length") == 0
    assert tab.dialogs == [] and tab.errors == []
    assert tab.console_errors() == [], tab.console


async def test_stored_markup_is_text_in_every_view(tab: Tab, explorer: Seeded, screenshots: Path) -> None:
    page = tab.page
    await signed_in(tab, explorer, explorer.hostile_user)
    hostile = page.locator(f'#timeline-body .memory[data-id="{explorer.hostile_id}"] .content')
    await expect(hostile).to_have_text(HOSTILE)
    await expect(page.locator("#timeline-body .tag")).to_have_text(HOSTILE_TAG)
    await page.screenshot(path=screenshots / "hostile-timeline.png")
    await tab.show("Facts")
    await expect(page.locator(".fact-scope-global")).to_contain_text("<script>alert(2)</script>")
    await tab.show("Search")
    await page.get_by_label("Query").fill("which editor do I use")
    await page.get_by_role("button", name="Search").click()
    await expect(page.locator("#search-body .hit .content", has_text="onerror=alert(1)").first).to_be_visible()
    await page.locator("#project-input").fill(PROJECT)
    await page.locator("#project-input").press("Enter")
    await tab.show("Context")
    await page.get_by_label("Next message").fill("which editor do I use")
    await page.get_by_role("button", name="Preview").click()
    await expect(page.locator("#context-prompt")).to_contain_text("<img src=x onerror=alert(1)>")
    for view in ("Graph", "Skills", "Permissions", "Audit", "Timeline"):  # the views it does not reach
        await tab.show(view)
        await expect(page.locator(".view-body:visible")).not_to_be_empty()
    await expect(hostile).to_have_text(HOSTILE)
    await assert_nothing_ran(tab)


Handler = Callable[[Route], Awaitable[None]]


def failing(status: int, code: str, message: str, **headers: str) -> Handler:
    """A route handler answering in the gateway's error shape."""

    async def handle(route: Route) -> None:
        body = json.dumps({"error": {"code": code, "message": message, "details": []}})
        await route.fulfill(status=status, body=body, content_type="application/json", headers=headers)

    return handle


def answering(body: Any) -> Handler:
    async def handle(route: Route) -> None:
        await route.fulfill(json=body)

    return handle


async def test_each_failure_says_what_it_means(tab: Tab, explorer: Seeded, screenshots: Path) -> None:
    page = tab.page
    await page.route(
        "**/v1/memories?*", failing(503, "postgres_unavailable", "postgres is unavailable", **{"Retry-After": "2"})
    )
    await page.route("**/v1/entities?*", failing(429, "rate_limited", "slow down", **{"Retry-After": "3"}))
    await page.route("**/v1/skills?*", failing(403, "missing_scope", "this key lacks the 'read' scope"))
    await signed_in(tab, explorer)
    error = page.locator("#timeline-error")
    await expect(error).to_contain_text("memstream is unavailable (503)")
    await expect(error).to_contain_text("Retry in 2 s")
    await page.screenshot(path=screenshots / "error-503.png")
    await tab.show("Facts")
    await expect(page.locator("#facts-error")).to_contain_text("Too many requests (429)")
    await expect(page.locator("#facts-error")).to_contain_text("Retry in 3 s")
    await tab.show("Skills")
    await expect(page.locator("#skills-error")).to_contain_text("This key may not do that (403)")
    await expect(page.locator("#skills-error")).to_contain_text("lacks the 'read' scope")
    # A key revoked while the page is open: back to sign-in, saying why.
    await page.route("**/v1/search?*", failing(401, "invalid_key", "unknown key"))
    await tab.show("Search")
    await page.get_by_label("Query").fill("anything")
    await page.get_by_role("button", name="Search").click()
    await expect(page.locator("#login-error")).to_contain_text("This key was not accepted (401)")
    assert await page.evaluate("() => sessionStorage.length") == 0


async def test_answers_with_missing_fields_break_nothing(tab: Tab, explorer: Seeded, screenshots: Path) -> None:
    page = tab.page
    memories = [
        {},
        {"id": "7a0d7d1e-0000-4000-8000-000000000001"},
        {"memory_type": "summary", "content": "Daily summary: planned the CloudRetail move.", "session_id": "s9"},
        {"memory_type": "episodic", "archived": True, "content": "an archived original", "session_id": "s9",
         "created_at": "2026-01-02T10:00:00Z", "source": None},
        {"memory_type": "procedural", "content": "Lesson: commit dist/.", "tags": "not-a-list", "importance": "high"},
    ]  # fmt: skip
    await page.route("**/v1/memories?*", answering({"memories": memories}))
    await page.route("**/v1/entities?*", answering({"facts": [{}, {"entity": "x", "scope": "odd"}]}))
    await page.route("**/v1/skills?*", answering({"skills": [{"name": "deploy"}, {}]}))
    await page.route("**/v1/search?*", answering({"hits": [{}, {"content": "a", "parts": None}]}))
    await page.route("**/v1/context?*", answering({"sections": [{"name": "new-kind", "tokens": 5}]}))
    await signed_in(tab, explorer)
    body = page.locator("#timeline-body")
    await expect(body.locator(".memory")).to_have_count(len(memories))
    await expect(body.locator(".badge-summary")).to_have_text("daily summary")
    await expect(body.locator(".badge-archived")).to_have_text("archived")
    await page.screenshot(path=screenshots / "missing-fields.png")
    await tab.show("Facts")
    await expect(page.locator(".facts-table tbody tr")).to_have_count(2)
    await tab.show("Skills")
    await expect(page.locator(".skill")).to_have_count(2)
    await tab.show("Search")
    await page.get_by_label("Query").fill("anything")
    await page.get_by_role("button", name="Search").click()
    await expect(page.locator(".hit")).to_have_count(2)
    await tab.show("Context")
    await page.get_by_role("button", name="Preview").click()
    await expect(page.locator(".sections tbody tr")).to_have_count(1)
    assert tab.errors == []


async def test_a_graph_of_200_nodes_is_laid_out_and_readable(tab: Tab, explorer: Seeded, screenshots: Path) -> None:
    page = tab.page
    count = 200
    # A tree of 200 entities under "hub", two hops deep.
    neighbors = []
    for i in range(count):
        parent = "hub" if i < 20 else f"service-{i % 20:02d}"
        name = f"service-{i:02d}" if i < 20 else f"lib-{i:03d}"
        hops = [f"hub -uses-> {parent}"] if parent != "hub" else []
        neighbors.append({"entity": name, "depth": len(hops) + 1, "path": [*hops, f"{parent} -uses-> {name}"]})
    answer = {"entity": "hub", "depth": 2, "direction": "out", "neighbors": neighbors}
    await page.route("**/v1/graph/neighbors?*", answering(answer))
    await signed_in(tab, explorer)
    await tab.show("Graph")
    await page.get_by_label("Entity").fill("hub")
    started = time.monotonic()
    await page.locator("#graph-form").get_by_role("button", name="Show").click()
    await expect(page.locator("svg.graph .node")).to_have_count(count + 1)
    assert time.monotonic() - started < 5, "laying out 200 nodes took too long"
    boxes = await page.evaluate(
        """() => [...document.querySelectorAll('svg.graph .node')].map((node) => {
             const box = node.querySelector('circle').getBoundingClientRect();
             return [box.x + box.width / 2, box.y + box.height / 2];
           })"""
    )
    assert all(all(v == v for v in box) for box in boxes), "a node without a position"  # no NaN
    distinct = {(round(x), round(y)) for x, y in boxes}
    assert len(distinct) > count * 0.95, "nodes piled on each other"
    await page.screenshot(path=screenshots / "graph-200.png", full_page=True)

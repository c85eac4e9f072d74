"""A person explores a user's memory in the browser: signs in with a key, picks the user, reads
the timeline, facts (and a fact's history), the graph, skills, search with its score parts and
the context preview, manages rules, reads the audit log, forgets a memory and erases a user —
and a read-only key, an agent's key and a wrong key each see what they should.

A screenshot of each view is saved (the ``screenshots`` fixture names the folder)."""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path

import httpx
import pytest
from playwright.async_api import expect

from ops.demo import PROJECT
from tests.browser.seed import DEPLOY_FEEDBACK, FORGETTABLE, Seeded
from tests.browser.tab import Tab
from tests.fixtures.stack import eventually

pytestmark = pytest.mark.integration


async def signed_in(tab: Tab, explorer: Seeded, key: str | None = None) -> None:
    await tab.sign_in(key or explorer.admin_key)
    await expect(tab.page.locator("#identity")).to_contain_text(explorer.tenant)
    await tab.choose_user(explorer.user)
    await expect(tab.page.locator("#current-user")).to_contain_text(explorer.user)


async def test_sign_in_choose_a_user_and_read_the_timeline(tab: Tab, explorer: Seeded, screenshots: Path) -> None:
    page = tab.page
    await tab.sign_in(explorer.admin_key)
    await expect(page.locator("#identity")).to_contain_text("admin")
    await expect(page.get_by_role("tab")).to_have_count(8)
    await tab.choose_user(explorer.user)
    body = page.locator("#timeline-body")
    await expect(body.locator(".session-group")).to_have_count(2)
    await expect(body).to_contain_text("I prefer dark mode in every editor")
    lesson = body.locator(".memory-lesson")
    await expect(lesson).to_contain_text(DEPLOY_FEEDBACK)
    await expect(lesson.locator(".badge-lesson")).to_have_text("lesson")
    # Each memory names its event, with the partition and offset it was consumed from.
    turn = body.locator(f'.memory[data-id="{explorer.forgettable_id}"]')
    await expect(turn.locator(".source")).to_contain_text(explorer.forgettable_id)
    await expect(turn.locator(".source")).to_contain_text(re.compile(r"partition \d+ · offset \d+"))
    await page.screenshot(path=screenshots / "timeline.png")
    # The key went in a header, never in a URL (the fixture checks every URL).
    calls = [r for r in tab.requests if "/v1/" in r.url]
    assert calls and all(r.headers.get("authorization", "").startswith("Bearer msk_") for r in calls)
    # Tabs are keyboard navigable: arrows move between them.
    await page.get_by_role("tab", name="Timeline").focus()
    await page.keyboard.press("ArrowRight")
    await expect(page.get_by_role("tab", name="Facts")).to_have_attribute("aria-selected", "true")
    await expect(page.locator("#panel-facts")).to_be_visible()


async def test_facts_by_scope_a_history_with_two_versions_and_as_of(
    tab: Tab, explorer: Seeded, screenshots: Path
) -> None:
    page = tab.page
    await signed_in(tab, explorer)
    await tab.show("Facts")
    global_facts = page.locator(".fact-scope-global")
    for preference in ("dark mode", "Python 3.11", "PostgreSQL"):
        await expect(global_facts).to_contain_text(preference)
    rules = page.locator(".fact-scope-project")
    await expect(rules.locator("h3")).to_contain_text(PROJECT)
    for rule in ("FastAPI", "AlloyDB", "Valkey", "30 second", "europe-west1"):
        await expect(rules).to_contain_text(rule)
    await page.get_by_role("button", name="History of deployment region").click()
    versions = page.locator("#facts-history .version")
    await expect(versions).to_have_count(2)
    await expect(versions.nth(0)).to_contain_text("asia-southeast1")
    await expect(versions.nth(0)).to_contain_text("superseded")
    await expect(versions.nth(1)).to_contain_text("europe-west1")
    await expect(versions.nth(1).locator(".badge-current")).to_be_visible()
    await expect(versions.nth(1)).to_contain_text("supersedes version 1")
    await page.screenshot(path=screenshots / "facts.png")
    # As of the day before the move, the region was still asia-southeast1.
    before = (explorer.start + timedelta(hours=12)).strftime("%Y-%m-%dT%H:%M:%S")
    await page.get_by_label("As of").fill(before)
    await page.locator("#facts-form").get_by_role("button", name="Show").click()
    await expect(rules).to_contain_text("asia-southeast1")
    await expect(rules).not_to_contain_text("europe-west1")
    await page.get_by_role("button", name="Now").click()
    await expect(rules).to_contain_text("europe-west1")


async def test_the_graph_from_the_project_expands_on_click(tab: Tab, explorer: Seeded, screenshots: Path) -> None:
    page = tab.page
    await signed_in(tab, explorer)
    await tab.show("Graph")
    await page.get_by_label("Entity").fill(PROJECT)
    await page.get_by_label("Hops").select_option("2")
    await page.locator("#graph-form").get_by_role("button", name="Show").click()
    graph = page.locator("svg.graph")
    for entity in ("cloudretail", "fastapi", "alloydb", "valkey"):
        await expect(graph.locator(f'.node[data-entity="{entity}"]')).to_be_visible()
    await expect(graph.locator(".edge-label", has_text="runs_on")).to_have_count(1)
    await expect(page.locator(".graph-list")).to_contain_text("fastapi")
    fastapi = graph.locator('.node[data-entity="fastapi"]')
    await fastapi.focus()
    await page.keyboard.press("Enter")  # expand with the keyboard
    await expect(graph.locator('.node-expanded[data-entity="fastapi"]')).to_have_count(1)
    await page.screenshot(path=screenshots / "graph.png", full_page=True)


async def test_skills_show_rate_attempts_and_last_feedback(tab: Tab, explorer: Seeded, screenshots: Path) -> None:
    page = tab.page
    await signed_in(tab, explorer)
    await tab.show("Skills")
    deploy = page.locator('.skill[data-skill="deploy"]')
    await expect(deploy).to_contain_text("50%")
    await expect(deploy).to_contain_text("1 of 2 attempts")
    await expect(deploy).to_contain_text(DEPLOY_FEEDBACK)
    await expect(deploy.locator(".steps li")).to_have_count(3)
    await page.screenshot(path=screenshots / "skills.png")


async def test_search_shows_score_parts_and_sub_queries(tab: Tab, explorer: Seeded, screenshots: Path) -> None:
    page = tab.page
    await signed_in(tab, explorer)
    await tab.show("Search")
    await page.get_by_label("Query").fill("which database and editor theme do I prefer?")
    await page.get_by_label("Decompose").select_option("rules")
    await page.get_by_role("button", name="Search").click()
    hits = page.locator("#search-body .hit")
    await expect(hits.first).to_be_visible()
    await expect(page.locator("#search-body")).to_contain_text("PostgreSQL")
    parts = hits.first.locator(".parts")
    for name in ("vector rank", "text rank", "RRF", "decay", "boost", "MMR penalty"):
        await expect(parts).to_contain_text(name)
    await expect(page.locator(".subqueries li")).not_to_have_count(0)
    await page.screenshot(path=screenshots / "search.png")
    # Facts only, global scope: every hit is a global fact.
    await page.get_by_role("checkbox", name="facts").check()
    await page.get_by_role("checkbox", name="global").check()
    await page.get_by_role("button", name="Search").click()
    await expect(hits.first).to_be_visible()
    for badge in await hits.locator(".hit-head .badge-category").all_inner_texts():
        assert badge == "global"


async def test_context_preview_stays_within_its_budget(tab: Tab, explorer: Seeded, screenshots: Path) -> None:
    page = tab.page
    await signed_in(tab, explorer)
    await page.locator("#project-input").fill(PROJECT)
    await page.locator("#project-input").press("Enter")
    await tab.show("Context")
    await page.get_by_label("Next message").fill("my coding preferences and the rules I chose for CloudRetail")
    await page.get_by_label("Budget (tokens)").fill("600")
    await page.get_by_role("button", name="Preview").click()
    tokens = page.locator("#context-tokens")
    await expect(tokens).to_be_visible()
    assert 0 < int(await tokens.inner_text()) <= 600
    await expect(page.locator(".stack .stack-facts")).to_have_count(1)
    await expect(page.locator("#context-prompt")).to_contain_text("dark mode")
    await expect(page.locator(".sections tbody tr")).to_have_count(4)
    await expect(page.locator(".naive")).to_contain_text("whole history")
    await page.screenshot(path=screenshots / "context.png", full_page=True)


async def test_rules_evaluation_and_a_one_time_grant(tab: Tab, explorer: Seeded, screenshots: Path) -> None:
    page = tab.page
    await signed_in(tab, explorer)
    await tab.show("Permissions")
    await page.get_by_label("Pattern (RE2)").fill(r"\brm -rf\b")
    await page.get_by_role("button", name="Add rule").click()
    await expect(page.locator(".rules-table tbody tr")).to_have_count(1)
    await page.get_by_label("Command").fill("rm -rf /data")
    await page.get_by_role("button", name="Evaluate").click()
    await expect(page.locator("#decision-word")).to_have_text("BLOCK")
    await expect(page.locator("#decision-tier")).to_have_text("global")
    await expect(page.locator("#evaluate-result")).to_contain_text(r"\brm -rf\b")
    await expect(page.locator("tr.rule-decided")).to_have_count(1)
    await page.screenshot(path=screenshots / "permissions.png", full_page=True)
    await page.get_by_label("Command").fill("make deploy")
    await page.get_by_role("button", name="Evaluate").click()
    await expect(page.locator("#decision-word")).to_have_text("PENDING")
    await page.get_by_role("button", name="Allow once…").click()
    await page.get_by_role("button", name="Grant once").click()
    await expect(page.locator("#grant-result")).to_contain_text("Granted once")
    await page.get_by_role("button", name="Evaluate").click()
    await expect(page.locator("#decision-word")).to_have_text("ALLOW")
    await expect(page.locator("#decision-tier")).to_have_text("allow_once")
    await page.get_by_role("button", name=re.compile(r"^Remove rule")).click()
    await page.get_by_role("button", name="Remove", exact=True).click()
    await expect(page.locator("#permissions-body")).to_contain_text("No rules yet")


async def test_audit_log_filtered_by_action(tab: Tab, explorer: Seeded, screenshots: Path) -> None:
    page = tab.page
    await signed_in(tab, explorer)
    await tab.show("Audit")
    rows = page.locator(".audit-table tbody tr")
    await expect(rows.first).to_be_visible()
    await page.get_by_label("Action").fill("memory.insert")
    await page.locator("#audit-form").get_by_role("button", name="Show").click()
    await expect(rows.first).to_contain_text("memory.insert")
    for action in await page.locator(".audit-table tbody tr td:nth-child(2)").all_inner_texts():
        assert action == "memory.insert"
    await page.screenshot(path=screenshots / "audit.png")


async def test_a_forgotten_memory_is_gone_from_the_next_search(tab: Tab, explorer: Seeded) -> None:
    page = tab.page
    await signed_in(tab, explorer)
    await tab.show("Search")
    await page.get_by_label("Query").fill("standing desk")
    await page.get_by_role("button", name="Search").click()
    hit = page.locator(f'#search-body .hit[data-id="{explorer.forgettable_id}"]')
    await expect(hit).to_contain_text(FORGETTABLE)
    await hit.get_by_role("button", name=f"Forget memory {explorer.forgettable_id}").click()
    dialog = page.get_by_role("dialog")
    await expect(dialog).to_contain_text("Forget this memory for good?")
    await dialog.get_by_role("button", name="Forget").click()
    await expect(page.locator("#announcer")).to_contain_text(f"Forgot episode {explorer.forgettable_id}")
    await expect(page.locator("#search-body .hit").first).to_be_visible()  # the search ran again
    await expect(hit).to_have_count(0)
    await tab.show("Timeline")
    await expect(page.locator("#timeline-body")).to_contain_text("I prefer dark mode")
    await expect(page.locator(f'#timeline-body .memory[data-id="{explorer.forgettable_id}"]')).to_have_count(0)


async def test_erasing_a_user_needs_the_user_id_typed(tab: Tab, explorer: Seeded) -> None:
    page = tab.page
    doomed = "erase-me-ui"
    headers = {"authorization": f"Bearer {explorer.admin_key}"}
    async with httpx.AsyncClient(base_url=explorer.url, headers=headers, timeout=30) as client:
        turn = {"agent_id": "demo-agent", "user_id": doomed, "session_id": "s1", "role": "user", "content": "hello"}
        assert (await client.post("/v1/turns", json=turn)).status_code == 202

        async def stored() -> bool:
            found = (await client.get("/v1/users", params={"q": doomed})).json()["users"]
            return [u["user_id"] for u in found] == [doomed]

        await eventually(stored)
        await tab.sign_in(explorer.admin_key)
        await tab.choose_user(doomed)
        await expect(page.locator("#timeline-body")).to_contain_text("hello")
        await page.get_by_role("button", name="Erase user…").click()
        dialog = page.get_by_role("dialog")
        erase = dialog.get_by_role("button", name="Erase for good")
        await expect(erase).to_be_disabled()
        await dialog.get_by_label(re.compile("to confirm")).fill(doomed[:-1])
        await expect(erase).to_be_disabled()
        await dialog.get_by_label(re.compile("to confirm")).fill(doomed)
        await erase.click()
        await expect(page.locator("#announcer")).to_contain_text(f"Erased {doomed}")
        await expect(page.locator("#current-user")).to_have_text("No user chosen")
        left = (await client.get("/v1/memories", params={"user_id": doomed})).json()["memories"]
    assert left == []


async def test_a_read_only_key_sees_no_admin_actions(tab: Tab, explorer: Seeded, screenshots: Path) -> None:
    page = tab.page
    await signed_in(tab, explorer, explorer.read_key)
    await expect(page.locator("#identity")).to_contain_text("read-only")
    await expect(page.locator("#timeline-body .memory").first).to_be_visible()
    await expect(page.get_by_role("tab")).to_have_count(7)  # no Audit
    await expect(page.get_by_role("tab", name="Audit")).to_have_count(0)
    await expect(page.get_by_role("button", name="Erase user…")).to_have_count(0)
    await expect(page.locator("button.forget")).to_have_count(0)
    await page.screenshot(path=screenshots / "read-only.png")
    await tab.show("Facts")
    await page.get_by_role("button", name="History of deployment region").click()
    await expect(page.locator("#facts-history .version")).to_have_count(2)
    await expect(page.locator("#facts-history").get_by_role("button", name=re.compile("^Forget"))).to_have_count(0)
    await tab.show("Permissions")
    await expect(page.get_by_role("button", name="Evaluate")).to_be_visible()
    await expect(page.get_by_role("button", name="Add rule")).to_have_count(0)
    await expect(page.get_by_role("button", name="Allow once…")).to_have_count(0)


async def test_an_agent_key_forgets_its_own_but_changes_nothing_tenant_wide(tab: Tab, explorer: Seeded) -> None:
    page = tab.page
    await signed_in(tab, explorer, explorer.agent_key)
    await expect(page.locator("#identity")).to_contain_text("agent demo-agent")
    await expect(page.locator("#timeline-body button.forget").first).to_be_visible()
    await expect(page.get_by_role("tab", name="Audit")).to_have_count(0)
    await expect(page.get_by_role("button", name="Erase user…")).to_have_count(0)
    await tab.show("Permissions")
    await expect(page.get_by_role("button", name="Add rule")).to_have_count(0)


async def test_a_wrong_key_gets_a_clear_message(tab: Tab, explorer: Seeded, screenshots: Path) -> None:
    page = tab.page
    await tab.sign_in("msk_0123456789abcdef_not-the-secret")
    error = page.locator("#login-error")
    await expect(error).to_contain_text("This key was not accepted (401)")
    await expect(error).to_contain_text("pasted the whole key")
    await expect(page.locator("#explorer")).to_be_hidden()
    assert await page.evaluate("() => sessionStorage.length") == 0
    await page.screenshot(path=screenshots / "wrong-key.png")
    # A good key afterwards signs in, and survives a reload of the tab (sessionStorage) ...
    await tab.sign_in(explorer.read_key)
    await expect(page.locator("#identity")).to_contain_text(explorer.tenant)
    await page.reload()
    await expect(page.locator("#identity")).to_contain_text(explorer.tenant)
    # ... until "Sign out" forgets it.
    await page.get_by_role("button", name="Sign out").click()
    await expect(page.get_by_label("API key", exact=True)).to_be_visible()
    assert await page.evaluate("() => sessionStorage.length") == 0

"""Regressions for what a red team found in the permission engine from the README alone:

1. the command splitter disagreed with bash (full-width quotes and backslashes that NFKC
   made ASCII, quotes in comments, ANSI-C quoting), so chained commands were ALLOWed and BLOCK
   rules skipped; deep substitutions were a 500;
2. one tenant's costly evaluations queued every tenant's behind them on the matcher threads;
3. allow-once grants were not bound to a project or an agent.

And what a second red team found (README only):

4. ALLOW let a command hidden in a shell expansion through — no operator to cut at, yet bash
   5.2 ran it (``${x@P}``, ANSI-C quoting, array subscripts in arithmetic); an ALLOW rule not
   about the program allowed what a shell, ``env``, ``find -exec`` or an assignment before
   the program ran; and a decision's reason repeated the command's secrets.

And a third (issue 45, docs only):

5. ALLOW matched the command normalised, so look-alikes were allowed: ``ALLOW ^ls( |$)``
   allowed ``ls -la`` in full-width letters and in mathematical bold, ``ALLOW ^git status$``
   allowed ``git<NBSP>status``; bash runs programs (and opens files) literally so named.
"""

from __future__ import annotations

import asyncio
import re
import time

import httpx
import pytest
from fastapi import FastAPI

from agents_gateway import permissions
from agents_gateway.commands import expansion, parts
from tests.fixtures.stack import RunningStack, client_for
from tests.integration.test_permission_limits import HEAVY_COMMAND, HEAVY_PATTERN, add_rules, settings_of

# --- 1. what bash runs as two commands is never judged as one ----------------------------------


async def rule(gateway: httpx.AsyncClient, **body: object) -> str:
    response = await gateway.post("/v1/permissions/rules", json=body)
    assert response.status_code == 201, response.text
    rule_id: str = response.json()["rule_id"]
    return rule_id


async def verdict_of(gateway: httpx.AsyncClient, command: str, **body: object) -> dict[str, object]:
    response = await gateway.post(
        "/v1/permissions/evaluate", json={"session_id": "s1", "tool": "sh", "command": command, **body}
    )
    assert response.status_code == 200, response.text
    verdict: dict[str, object] = response.json()
    return verdict


@pytest.fixture
async def red_team_rules(gateway: httpx.AsyncClient) -> dict[str, str]:
    """The red team's rules: a global ALLOW for pytest with the timeout, and for ``sh`` an
    ALLOW for make created before a BLOCK for ``rm -rf``."""
    return {
        "pytest": await rule(gateway, tool="sh", effect="ALLOW", pattern="pytest.*--timeout=30"),
        "make": await rule(gateway, tool="sh", effect="ALLOW", pattern=r"^make\b", position=0),
        "rm": await rule(gateway, tool="sh", effect="BLOCK", pattern=r"\brm -rf\b", position=1),
    }


#: Each got ALLOW, and bash ran ``evilcmd``.
SMUGGLED = [
    "pytest --timeout=30 \uff02; evilcmd; \uff02",  # FULLWIDTH QUOTATION MARK
    "pytest --timeout=30 \uff07; evilcmd; \uff07",  # FULLWIDTH APOSTROPHE
    "pytest --timeout=30 \uff3c; evilcmd; \uff3c",  # FULLWIDTH REVERSE SOLIDUS
    "pytest --timeout=30 \ufe68; evilcmd; \ufe68",  # SMALL REVERSE SOLIDUS
    "pytest --timeout=30 \uff07; evilcmd",  # one unterminated is enough
    "pytest --timeout=30 \uff02; evilcmd",
    "pytest --timeout=30 # '\nevilcmd",  # quotes in a comment
    'pytest --timeout=30 # "\nevilcmd',
    "pytest --timeout=30 #$' \nevilcmd",
    "pytest --timeout=30 #\\\nevilcmd",
    "pytest --timeout=30 $'\\'' ; evilcmd ; pytest --timeout=30 $'\\''",  # ANSI-C quoting
    # Variants of the same class.
    "pytest --timeout=30 '; evilcmd; '",
    'pytest --timeout=30 "; evilcmd; "',
    "pytest --timeout=30 \\'; evilcmd",
    "pytest --timeout=30 \\>& evilcmd",
    "pytest --timeout=30 \uff1e& evilcmd",
    "pytest --timeout=30 \uff07$(evilcmd)\uff07",
    "pytest --timeout=30 \uff07`evilcmd`\uff07",
    "pytest --timeout=30 '\r evilcmd",
]


@pytest.mark.parametrize("command", SMUGGLED)
async def test_a_command_smuggled_past_the_splitter_is_not_allowed(
    gateway: httpx.AsyncClient, red_team_rules: dict[str, str], command: str
) -> None:
    verdict = await verdict_of(gateway, command)
    assert (verdict["decision"], verdict["tier"]) == ("PENDING", "none"), verdict
    # The reason names the first fragment not allowed by its position (never by its text):
    # the smuggled command, or one that holds an expansion.
    found = re.search(r"fragment (\d+) of (\d+) of the command", str(verdict["reason"]))
    assert found is not None, verdict
    fragments = parts(command)
    assert int(found[2]) == len(fragments), verdict
    denied = fragments[int(found[1]) - 1]
    assert denied == "evilcmd" or expansion(denied) is not None, (denied, verdict)


@pytest.mark.parametrize(
    "command",
    [
        "make \uff02; rm -rf victimdir; \uff02",
        "make \uff07; rm -rf victimdir",
        "make \uff3c; rm -rf victimdir",
        "make # '\nrm -rf victimdir",
        "make $'\\'' ; rm -rf victimdir ; make $'\\''",
        "make \uff07$(rm -rf victimdir)\uff07",
    ],
)
async def test_a_blocked_command_smuggled_after_an_allowed_one_is_blocked(
    gateway: httpx.AsyncClient, red_team_rules: dict[str, str], command: str
) -> None:
    """``ALLOW ^make`` comes first, but the BLOCK still applies to the command bash would run."""
    verdict = await verdict_of(gateway, command)
    assert (verdict["decision"], verdict["rule_id"]) == ("BLOCK", red_team_rules["rm"]), verdict


async def test_a_command_a_block_rule_cannot_see_is_not_allowed(
    gateway: httpx.AsyncClient, red_team_rules: dict[str, str]
) -> None:
    # ``r''m`` is ``rm`` to bash and invisible to the BLOCK rule; it is no longer part of make's line.
    verdict = await verdict_of(gateway, "make # '\nr''m -rf victimdir")
    assert (verdict["decision"], verdict["tier"]) == ("PENDING", "none"), verdict


@pytest.mark.parametrize("command", ["`make print-command`", "$(make print-command)", "X=1 `make print-command`"])
async def test_a_substitution_in_a_command_names_place_is_not_allowed(
    gateway: httpx.AsyncClient, red_team_rules: dict[str, str], command: str
) -> None:
    """Bash runs ``make print-command`` and then whatever it prints: a rule for make does not
    allow that."""
    verdict = await verdict_of(gateway, command)
    assert (verdict["decision"], verdict["tier"]) == ("PENDING", "none"), verdict


async def test_what_the_documented_rule_allows_and_what_it_costs(
    gateway: httpx.AsyncClient, red_team_rules: dict[str, str]
) -> None:
    allowed = await verdict_of(gateway, "pytest --timeout=30 2>&1")
    assert (allowed["decision"], allowed["rule_id"]) == ("ALLOW", red_team_rules["pytest"])
    both = await verdict_of(gateway, "make && pytest --timeout=30")
    assert both["decision"] == "ALLOW", both
    # The price: an operator inside quotes cuts the line too, and a human confirms.
    quoted = await verdict_of(gateway, "pytest --timeout=30 -k 'a; b'")
    assert (quoted["decision"], quoted["tier"]) == ("PENDING", "none"), quoted
    # Within a rule's own semantics: ALLOW ^make matches first, whatever make's arguments.
    arguments = await verdict_of(gateway, "make rm -rf victimdir")
    assert (arguments["decision"], arguments["rule_id"]) == ("ALLOW", red_team_rules["make"])


async def test_deep_substitutions_are_blocked_not_a_server_error(
    gateway: httpx.AsyncClient, red_team_rules: dict[str, str]
) -> None:
    for command in ("ls " + "$(" * 1000, "ls " + "$(" * 4000 + ")" * 4000, "ls " + "<(" * 2000 + "`x`" * 900):
        response = await gateway.post(
            "/v1/permissions/evaluate", json={"session_id": "s1", "tool": "sh", "command": command[:8192]}
        )
        assert response.status_code == 200, response.text
        assert (response.json()["decision"], response.json()["tier"]) == ("BLOCK", "budget_exceeded")
        assert "more than 64 fragments" in response.json()["reason"]


# --- 2. one tenant cannot stall another's evaluations ----------------------------------------


async def test_a_tenant_saturating_the_matcher_does_not_stall_another_tenant(
    stack: RunningStack, gateway_app: FastAPI, tenant: str
) -> None:
    """The red team's load: 50 of the costliest rules accepted and 40 concurrent evaluations
    of an 8 KiB command (each ~0.3 s, BLOCK). Before, another tenant's ``ls -la`` waited
    2.85 s behind them; now the busy tenant gets 429s beyond its share and the other answers
    at once."""
    other = f"{tenant}-b"
    async with client_for(gateway_app, stack.key(tenant)) as busy, client_for(gateway_app, stack.key(other)) as calm:
        created = await add_rules(busy, [f"{HEAVY_PATTERN}{i:02d}" for i in range(50)])
        assert [r.status_code for r in created] == [201] * 50
        await rule(calm, tool="shell", effect="ALLOW", pattern=r"^ls\b")
        body = {"session_id": "s1", "tool": "shell", "command": HEAVY_COMMAND}
        stop = asyncio.Event()
        statuses: list[int] = []
        retry_after: set[str | None] = set()

        async def saturate() -> None:
            while not stop.is_set():
                wave = await asyncio.gather(*(busy.post("/v1/permissions/evaluate", json=body) for _ in range(40)))
                statuses.extend(r.status_code for r in wave)
                retry_after.update(r.headers.get("retry-after") for r in wave if r.status_code == 429)
                errors = {r.json()["error"]["code"] for r in wave if r.status_code == 429}
                assert errors <= {"evaluations_busy"}, errors

        flood = asyncio.create_task(saturate())
        took: list[float] = []
        try:
            await asyncio.sleep(0.3)
            for _ in range(5):
                started = time.perf_counter()
                response = await calm.post(
                    "/v1/permissions/evaluate", json={"session_id": "s1", "tool": "shell", "command": "ls -la"}
                )
                took.append(time.perf_counter() - started)
                assert response.status_code == 200 and response.json()["decision"] == "ALLOW", response.text
                await asyncio.sleep(0.1)
        finally:
            stop.set()
            await flood
    assert max(took) < 1.5, f"the other tenant's evaluations took {[round(t, 3) for t in took]} s"
    assert statuses.count(429) > statuses.count(200) > 0, statuses
    assert retry_after == {"1"}
    assert permissions._SLOTS.busy(tenant) == 0, "every slot is given back"


async def test_the_limit_is_per_tenant_and_a_setting(
    stack: RunningStack, gateway_app: FastAPI, gateway: httpx.AsyncClient, tenant: str
) -> None:
    await add_rules(gateway, [f"{HEAVY_PATTERN}{i:02d}" for i in range(5)])
    body = {"session_id": "s1", "tool": "shell", "command": HEAVY_COMMAND}
    with settings_of(gateway_app, permission_max_matching_per_tenant=1):
        responses = await asyncio.gather(*(gateway.post("/v1/permissions/evaluate", json=body) for _ in range(6)))
    codes = sorted(r.status_code for r in responses)
    assert codes.count(200) >= 1 and codes.count(429) >= 1, codes
    refused = next(r for r in responses if r.status_code == 429)
    assert refused.json()["error"]["code"] == "evaluations_busy"
    assert "1 evaluation of this tenant is already matching" in refused.json()["error"]["message"]
    # Evaluations that match nothing (no rules, pre-approved tools, grants) take no slot.
    many = await asyncio.gather(
        *(
            gateway.post("/v1/permissions/evaluate", json={"session_id": "s1", "tool": "git", "command": "git st"})
            for _ in range(20)
        )
    )
    assert {r.status_code for r in many} == {200}


# --- 3. a grant is bound to its project and, when it names one, its agent ---------------------


async def grant(client: httpx.AsyncClient, command: str, **body: object) -> str:
    response = await client.post(
        "/v1/permissions/allow-once", json={"session_id": "s1", "tool": "shell", "command": command, **body}
    )
    assert response.status_code == 201, response.text
    grant_id: str = response.json()["grant_id"]
    return grant_id


async def decision(client: httpx.AsyncClient, command: str, **body: object) -> tuple[object, object, object]:
    response = await client.post(
        "/v1/permissions/evaluate", json={"session_id": "s1", "tool": "shell", "command": command, **body}
    )
    assert response.status_code == 200, response.text
    verdict = response.json()
    return verdict["decision"], verdict["tier"], verdict["grant_id"]


async def test_a_grant_for_one_project_does_not_override_another_projects_block(
    gateway: httpx.AsyncClient,
) -> None:
    await rule(gateway, project_id="P2", tool="shell", effect="BLOCK", pattern="^terraform destroy")
    granted = await grant(gateway, "terraform destroy", project_id="P1")
    assert (await decision(gateway, "terraform destroy", project_id="P2"))[:2] == ("BLOCK", "project")
    assert (await decision(gateway, "terraform destroy"))[:2] == ("PENDING", "none"), "nor one without a project"
    assert await decision(gateway, "terraform destroy", project_id="P1") == ("ALLOW", "allow_once", granted)
    # A grant made without a project is for evaluations without one.
    unscoped = await grant(gateway, "terraform plan")
    assert (await decision(gateway, "terraform plan", project_id="P1"))[:2] == ("PENDING", "none")
    assert await decision(gateway, "terraform plan") == ("ALLOW", "allow_once", unscoped)


async def test_a_grant_for_an_agent_is_used_by_that_agent_only(
    stack: RunningStack, gateway_app: FastAPI, gateway: httpx.AsyncClient, tenant: str
) -> None:
    granted = await grant(gateway, "make deploy", agent_id="AG1")
    async with (
        client_for(gateway_app, stack.key(tenant, agent="AG1", scopes=("read",))) as ag1,
        client_for(gateway_app, stack.key(tenant, agent="AG2", scopes=("read",))) as ag2,
        client_for(gateway_app, stack.key(tenant, scopes=("read",))) as read_only,
    ):
        assert (await decision(ag2, "make deploy"))[:2] == ("PENDING", "none")
        assert (await decision(read_only, "make deploy"))[:2] == ("PENDING", "none")
        assert (await decision(gateway, "make deploy"))[:2] == ("PENDING", "none")
        posing = await ag2.post(
            "/v1/permissions/evaluate",
            json={"session_id": "s1", "tool": "shell", "command": "make deploy", "agent_id": "AG1"},
        )
        assert posing.status_code == 403 and posing.json()["error"]["code"] == "wrong_agent"
        assert await decision(ag1, "make deploy") == ("ALLOW", "allow_once", granted)
        assert (await decision(ag1, "make deploy"))[:2] == ("PENDING", "none"), "single use"
        # A tenant-level key acts for the agent it names.
        again = await grant(gateway, "make deploy", agent_id="AG1")
        assert await decision(read_only, "make deploy", agent_id="AG1") == ("ALLOW", "allow_once", again)
        # A grant naming no agent is for any evaluation in its session and project.
        anyone = await grant(gateway, "make test")
        assert await decision(ag2, "make test") == ("ALLOW", "allow_once", anyone)
    with stack.db(tenant) as conn:
        granted_rows = conn.execute(
            "SELECT detail->>'agent_id', detail->>'project_id' FROM audit_log"
            " WHERE action = 'permission.allow_once' ORDER BY seq"
        ).fetchall()
        used = conn.execute(
            "SELECT detail->>'agent_id' FROM audit_log WHERE action = 'permission.decision'"
            " AND detail->>'tier' = 'allow_once' ORDER BY seq"
        ).fetchall()
    assert granted_rows == [("AG1", None), ("AG1", None), (None, None)]
    assert used == [("AG1",), ("AG1",), ("AG2",)]


# --- 4. expansions, and what an ALLOW rule does not name ----------------------------------------


@pytest.fixture
async def anchored_rules(gateway: httpx.AsyncClient) -> dict[str, str]:
    """The second red team's rules: the anchored ALLOW the README recommends, first, then a
    BLOCK for ``rm -rf``."""
    return {
        "pytest": await rule(gateway, tool="sh", effect="ALLOW", pattern=r"^pytest( |$)", position=0),
        "rm": await rule(gateway, tool="sh", effect="BLOCK", pattern=r"\brm -rf\b", position=1),
    }


#: Each got ALLOW, and bash 5.2 ran the hidden command (each wrote its file).
EXPANDED = [
    r"pytest --timeout=30 ${x:=\\044\\050id\\051} ${x@P}",  # prompt expansion decodes \044\050 to $(
    r"pytest ${x:=$'\x24\x28echo PWNED \x3e /tmp/rt/pwned\x29'} ${x@P}",
    r"pytest ${x:=$'a[\x24\x28echo PWNED2 \x3e /tmp/rt/pwned2\x29]'} ${PATH:x}",  # an array subscript
    r"pytest $[${y:=$'a[\x24\x28echo PWNED3 \x3e /tmp/rt/pwned3\x29]'}]",
    # Variants of the same class: every expansion, whether or not this bash runs code through it.
    r"pytest ${x:=$'a[\x24\x28echo V1 \x3e /tmp/rt/v1\x29]'} ${!x}",  # indirection evaluates it too
    r"pytest ${x:=$'\x24\x28evilcmd\x29'} ${x@E}",
    r"pytest $'\x3b' evilcmd",
    r"pytest ${IFS}evilcmd",
    r"pytest --timeout=30 $HOME",
    'pytest $"evilcmd"',
    "pytest \uff04{x@P}",  # a full-width dollar: NFKC makes it one
    "pytest !!",  # history expansion (interactive shells)
    "pytest !-1",
]


@pytest.mark.parametrize("command", EXPANDED)
async def test_a_fragment_with_an_expansion_is_never_allowed(
    gateway: httpx.AsyncClient, anchored_rules: dict[str, str], command: str
) -> None:
    verdict = await verdict_of(gateway, command)
    assert (verdict["decision"], verdict["tier"], verdict["rule_id"]) == ("PENDING", "none", None), verdict
    assert "shell expansion" in str(verdict["reason"]), verdict


@pytest.mark.parametrize(
    "command",
    [
        "pytest $((a[$(id)]))",  # cut at every parenthesis already
        "pytest $(id)",
        "pytest `id`",
        "pytest --timeout=30 && ls $HOME",
    ],
)
async def test_a_substitution_leaves_a_fragment_with_an_expansion(
    gateway: httpx.AsyncClient, anchored_rules: dict[str, str], command: str
) -> None:
    await rule(gateway, tool="sh", effect="ALLOW", pattern=r"^(id|ls)( |$)")
    verdict = await verdict_of(gateway, command)
    assert (verdict["decision"], verdict["tier"]) == ("PENDING", "none"), verdict


@pytest.mark.parametrize(
    "command",
    [
        r"pytest ${x:=$'\x24\x28 rm -rf /tmp/rt\x29'} ${x@P}",
        r"pytest --timeout=30 ${x:=\\044\\050 rm -rf /tmp/rt\\051} ${x@P}",
        r"pytest $'\x3b' rm -rf x",
        "pytest $[${y:=rm -rf x}]",
    ],
)
async def test_a_fragment_with_an_expansion_that_a_block_rule_matches_is_blocked(
    gateway: httpx.AsyncClient, anchored_rules: dict[str, str], command: str
) -> None:
    """The ALLOW rule comes first, but it cannot allow a fragment with an expansion: the
    BLOCK rule after it decides."""
    verdict = await verdict_of(gateway, command)
    assert (verdict["decision"], verdict["rule_id"]) == ("BLOCK", anchored_rules["rm"]), verdict


#: With the seed's unanchored ``ALLOW pytest.*--timeout=30`` (and ``ALLOW ^make\b``): each got ALLOW.
UNNAMED = [
    "bash -c evilcmd pytest --timeout=30",
    "sh -c evilcmd pytest --timeout=30",
    "'ba''sh' -c evilcmd pytest --timeout=30",
    "/bin/ba?h -c evilcmd pytest --timeout=30",
    "eval evilcmd pytest --timeout=30",
    "exec evilcmd pytest --timeout=30",
    "source evil.sh pytest --timeout=30",
    ". evil.sh pytest --timeout=30",
    "env sh -c evilcmd pytest --timeout=30",
    "xargs -a cmds sh pytest --timeout=30",
    "timeout 5 evilcmd pytest --timeout=30",
    "evilcmd pytest --timeout=30",
    "LD_PRELOAD=/tmp/evil.so pytest --timeout=30",
    "BASH_ENV=/tmp/evil.sh pytest --timeout=30",
    "> out evilcmd pytest --timeout=30",
    "make=1 evilcmd",  # ``^make\b`` matches the assignment, not the program
]


@pytest.mark.parametrize("command", UNNAMED)
async def test_an_allow_rule_that_does_not_name_what_runs_does_not_allow_it(
    gateway: httpx.AsyncClient, red_team_rules: dict[str, str], command: str
) -> None:
    verdict = await verdict_of(gateway, command)
    assert (verdict["decision"], verdict["tier"], verdict["rule_id"]) == ("PENDING", "none", None), verdict
    reason = str(verdict["reason"])  # a shell's name in quotes or as a glob: a word the shell rewrites
    assert "is matched by an ALLOW rule that does not name" in reason or "rewrites" in reason, verdict


async def test_a_rule_that_names_what_runs_allows_it_and_a_later_block_still_applies(
    gateway: httpx.AsyncClient, red_team_rules: dict[str, str]
) -> None:
    # The seed's rule still allows pytest, with what pytest does with its arguments.
    for command in ("pytest --timeout=30", "pytest -q --timeout=30 2>&1", "> log pytest --timeout=30"):
        allowed = await verdict_of(gateway, command)
        assert (allowed["decision"], allowed["rule_id"]) == ("ALLOW", red_team_rules["pytest"]), (command, allowed)
    ci = await rule(gateway, tool="sh", effect="ALLOW", pattern=r"^bash scripts/ci\.sh$")
    named = await verdict_of(gateway, "bash scripts/ci.sh")
    assert (named["decision"], named["rule_id"]) == ("ALLOW", ci), named
    env = await rule(gateway, tool="sh", effect="ALLOW", pattern=r"^X=1 pytest( |$)")
    assigned = await verdict_of(gateway, "X=1 pytest -q")
    assert (assigned["decision"], assigned["rule_id"]) == ("ALLOW", env), assigned
    # An ALLOW rule passed over lets a later rule decide: here a BLOCK.
    shells = await rule(gateway, tool="sh", effect="BLOCK", pattern=r"\bbash -c\b")
    blocked = await verdict_of(gateway, "bash -c evilcmd pytest --timeout=30")
    assert (blocked["decision"], blocked["rule_id"]) == ("BLOCK", shells), blocked


@pytest.mark.parametrize(
    ("pattern", "command"),
    [
        (r"^env( |$)", "env sh -c evilcmd"),
        (r"^env( |$)", "env -i /bin/bash -c evilcmd"),
        (r"^xargs( |$)", "xargs -n1 sh -c evilcmd"),
        (r"^timeout( |$)", "timeout 5 bash -c evilcmd"),
        (r"^find( |$)", "find . -exec evilcmd {} +"),
        (r"^find( |$)", "find . -execdir evilcmd {} +"),
    ],
)
async def test_a_rule_for_a_program_does_not_allow_the_shell_or_exec_it_is_given(
    gateway: httpx.AsyncClient, pattern: str, command: str
) -> None:
    await rule(gateway, tool="sh", effect="ALLOW", pattern=pattern)
    verdict = await verdict_of(gateway, command)
    assert (verdict["decision"], verdict["tier"]) == ("PENDING", "none"), verdict
    assert "does not name the shell (or find -exec) it runs" in str(verdict["reason"]), verdict
    plain = await verdict_of(gateway, command.split(" ", 1)[0] + " -q plain")
    assert plain["decision"] == "ALLOW", plain


EMAIL, PASSWORD = "frank@example.com", "Pw0rdS3cretXyz"


@pytest.mark.parametrize(
    ("command", "decision"),
    [
        (f"pytest -q && curl -u {EMAIL}:{PASSWORD} https://x", "BLOCK"),
        (f"pytest -q; wget --user={EMAIL} --password={PASSWORD} https://x", "PENDING"),
        (f"curl -u {EMAIL}:{PASSWORD} https://x; pytest -q", "BLOCK"),
        (f"pytest -q && mysql -u {EMAIL} -p{PASSWORD} $DB", "PENDING"),
        (f'env sh -c "curl -u {EMAIL}:{PASSWORD} https://x" && pytest -q', "PENDING"),
    ],
)
async def test_a_reason_never_repeats_the_commands_secrets_or_personal_data(
    gateway: httpx.AsyncClient, command: str, decision: str
) -> None:
    await rule(gateway, tool="sh", effect="ALLOW", pattern=r"^(pytest|env)( |$)")
    await rule(gateway, tool="sh", effect="BLOCK", pattern=r"^curl\b")
    verdict = await verdict_of(gateway, command)
    assert verdict["decision"] == decision, verdict
    reason = str(verdict["reason"])
    if not command.startswith("curl"):  # else the whole line is blocked, and no fragment named
        assert re.search(r"fragment \d of 2 of the command", reason), verdict
    for private in (EMAIL, "frank", PASSWORD):
        assert private not in reason, verdict


async def test_a_reason_shows_the_rules_pattern_redacted(gateway: httpx.AsyncClient) -> None:
    """A pattern that matched holds what the command holds."""
    allowed_by = await rule(gateway, tool="sh", effect="ALLOW", pattern=r"^mysql -pRulePatternS3cret( |$)")
    verdict = await verdict_of(gateway, "mysql -pRulePatternS3cret shop")
    assert (verdict["decision"], verdict["rule_id"]) == ("ALLOW", allowed_by), verdict
    assert "RulePatternS3cret" not in str(verdict["reason"]), verdict
    assert "[REDACTED:" in str(verdict["reason"]), verdict


# --- 5. look-alikes: normalisation only adds refusals --------------------------------------------

LOOKALIKES = [
    (r"^ls( |$)", "\uff4c\uff53 -la"),  # full-width
    (r"^ls( |$)", "\U0001d425\U0001d42c -la"),  # mathematical bold
    (r"^ls( |$)", "l\u200bs -la"),  # a zero-width space inside the name
    (r"^ls( |$)", "ls\u00a0-la"),  # NBSP: one word to a shell, "ls\u00a0-la"
    (r"^git status$", "git\u00a0status"),
    (r"^git status$", "git\u2003status"),  # an em space
    (r"^cat README\.md$", "cat \uff32\uff25\uff21\uff24\uff2d\uff25.md"),
    (r"^cat README\.md$", "cat READ\u2060ME.md"),  # a word joiner (a format character)
    (r"^cat [A-Za-z]+\.md$", "cat R\u0415ADME.md"),  # a Cyrillic IE (NFKC keeps it)
    (r"^echo .*$", "echo caf\u0065\u0301"),  # a combining accent NFKC composes
    (r"^pytest( |$)", "pytest \uff1b rm -rf x"),  # a full-width semicolon: no cut to a shell
]


@pytest.mark.parametrize(("pattern", "command"), LOOKALIKES)
async def test_an_allow_rule_does_not_allow_a_look_alike(
    gateway: httpx.AsyncClient, pattern: str, command: str
) -> None:
    await rule(gateway, tool="sh", effect="ALLOW", pattern=pattern)
    verdict = await verdict_of(gateway, command)
    assert (verdict["decision"], verdict["tier"]) == ("PENDING", "none"), verdict
    assert command not in str(verdict["reason"]), verdict


async def test_the_ascii_spelling_is_still_allowed(gateway: httpx.AsyncClient) -> None:
    await rule(gateway, tool="sh", effect="ALLOW", pattern=r"^(ls|git status|cat README\.md)( |$)")
    for command in ("ls -la", "ls\t-la", "git   status", "cat README.md"):
        assert (await verdict_of(gateway, command))["decision"] == "ALLOW", command


async def test_a_rule_that_holds_the_very_characters_allows_them(gateway: httpx.AsyncClient) -> None:
    named = await rule(gateway, tool="sh", effect="ALLOW", pattern="^cat \uff32\uff25\uff21\uff24\uff2d\uff25\\.md$")
    verdict = await verdict_of(gateway, "cat \uff32\uff25\uff21\uff24\uff2d\uff25.md")
    assert (verdict["decision"], verdict["rule_id"]) == ("ALLOW", named), verdict
    # ...but not another look-alike the rule does not hold.
    assert (await verdict_of(gateway, "cat \uff32\uff25\uff21\uff24\uff2d\u0415.md"))["decision"] == "PENDING"


@pytest.mark.parametrize(
    "command",
    [
        "\uff52\uff4d -rf /tmp/victim",
        "rm\u00a0-rf /tmp/victim",
        "rm\t-rf /tmp/victim",
        "\U0001d42b\U0001d426 -rf /tmp/victim",
    ],
)
async def test_a_block_rule_still_sees_the_normalised_command(gateway: httpx.AsyncClient, command: str) -> None:
    await rule(gateway, tool="sh", effect="ALLOW", pattern=r".*", position=0)
    blocked = await rule(gateway, tool="sh", effect="BLOCK", pattern=r"\brm -rf\b", position=0)
    verdict = await verdict_of(gateway, command)
    assert (verdict["decision"], verdict["rule_id"]) == ("BLOCK", blocked), verdict


# --- 6. a program word the shell rewrites; find -exec as a glob; pre-approval against a BLOCK ----


@pytest.mark.parametrize(
    "command",
    [
        "{evilcmd,pytest,--timeout=30}",
        "{evilcmd,pytest} --timeout=30",
        "{evilcmd,'pytest --timeout=30'}",
        "/usr/lib/python3/site-packages/pytest/../../../../../tmp/bin/evilcmd --timeout=30",
        "'pytest' --timeout=30",
        "p?test* pytest --timeout=30",
    ],
)
async def test_a_program_word_the_shell_rewrites_is_never_allowed(gateway: httpx.AsyncClient, command: str) -> None:
    """Brace expansion in the command position picks the program (bash ran evilcmd), and a
    ``..`` leaves the folder the word names: the docs say ``pytest.*--timeout=30`` allows no
    ``evilcmd pytest --timeout=30``."""
    await rule(gateway, tool="sh", effect="ALLOW", pattern="pytest.*--timeout=30")
    verdict = await verdict_of(gateway, command)
    assert (verdict["decision"], verdict["tier"]) == ("PENDING", "none"), verdict
    assert "rewrites" in str(verdict["reason"]), verdict
    assert (await verdict_of(gateway, "pytest --timeout=30"))["decision"] == "ALLOW"


@pytest.mark.parametrize(
    "command",
    [
        "find . -exe[c] evilcmd {} +",
        "find . -exe? evilcmd {} +",
        "find . -[e]xecdir evilcmd {} +",
        # A third round: bracket expressions fnmatch does not read as bash does.
        "find . -ex[^x]c evilcmd {} +",
        "find . -exe[[:alpha:]] evilcmd {} +",
        "find . -ex[[=e=]]c evilcmd {} +",
        "find . [[:punct:]]exec evilcmd {} +",
    ],
)
async def test_find_exec_spelled_as_a_glob_must_be_named(gateway: httpx.AsyncClient, command: str) -> None:
    """With a file named ``-exec`` in the folder, bash expands the glob to it."""
    await rule(gateway, tool="sh", effect="ALLOW", pattern="^find( |$)")
    verdict = await verdict_of(gateway, command)
    assert (verdict["decision"], verdict["tier"]) == ("PENDING", "none"), verdict
    assert (await verdict_of(gateway, "find . -name '*.py'"))["decision"] == "ALLOW"


async def test_a_block_rule_applies_to_a_pre_approved_tool(gateway: httpx.AsyncClient) -> None:
    """Pre-approval is by the tool's name, which any tool can take: the tenant's BLOCK wins."""
    response = await gateway.post(
        "/v1/permissions/evaluate", json={"session_id": "s1", "tool": "memory.search", "command": "rm -rf /"}
    )
    assert (response.json()["decision"], response.json()["tier"]) == ("ALLOW", "preapproved")
    blocked = await rule(gateway, tool="memory.search", effect="BLOCK", pattern=r"\brm -rf\b")
    response = await gateway.post(
        "/v1/permissions/evaluate", json={"session_id": "s1", "tool": "memory.search", "command": "rm -rf /"}
    )
    assert (response.json()["decision"], response.json()["rule_id"]) == ("BLOCK", blocked), response.json()
    response = await gateway.post(
        "/v1/permissions/evaluate", json={"session_id": "s1", "tool": "memory.search", "command": "dark mode"}
    )
    assert response.json()["decision"] == "ALLOW", "what no BLOCK matches is still pre-approved"


@pytest.mark.parametrize(
    "command",
    [
        "env /bin/ba[[:alpha:]]h -c evilcmd",
        "env /bin/ba[^x]h -c evilcmd",
        "env /bin/ba[[.s.]]h -c evilcmd",
        "timeout 5 /bin/ba[[:alpha:]]h -c evilcmd",
    ],
)
async def test_a_shell_spelled_as_a_bracket_glob_must_be_named(gateway: httpx.AsyncClient, command: str) -> None:
    await rule(gateway, tool="sh", effect="ALLOW", pattern=r"^(env|timeout [0-9]+)( |$)")
    verdict = await verdict_of(gateway, command)
    assert (verdict["decision"], verdict["tier"]) == ("PENDING", "none"), verdict


@pytest.mark.parametrize("command", ["1a=x pytest", "9=1 pytest", "a-b=x pytest"])
async def test_a_word_with_an_equals_sign_that_is_no_assignment_is_a_program(
    gateway: httpx.AsyncClient, command: str
) -> None:
    """bash runs a program named ``1a=x``, which a pattern written for assignments matched."""
    await rule(gateway, tool="sh", effect="ALLOW", pattern=r"^(\S+=\S* )*pytest( |$)")
    verdict = await verdict_of(gateway, command)
    assert (verdict["decision"], verdict["tier"]) == ("PENDING", "none"), verdict

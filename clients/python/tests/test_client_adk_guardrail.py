"""The ADK guardrail's decisions (``memstream_client.adk.guardrail``) for each answer of the
permission engine, on a mocked gateway."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from client_script import BASE_URL, KEY
from memstream_client import AsyncMemstream
from memstream_client.adk.guardrail import Guardrail, command_of


@dataclass
class Session:
    id: str = "s1"
    app_name: str = "agents"


@dataclass(frozen=True)
class Tool:
    name: str


SHELL = Tool("run_command")


@dataclass
class ToolContext:
    session: Session = field(default_factory=Session)
    confirmations: list[dict[str, Any]] = field(default_factory=list)

    def request_confirmation(self, *, hint: str | None = None, payload: Any = None) -> None:
        self.confirmations.append({"hint": hint, "payload": payload})


def gateway(answer: httpx.Response, asked: list[dict[str, Any]]) -> AsyncMemstream:
    def handle(request: httpx.Request) -> httpx.Response:
        asked.append(json.loads(request.content))
        return answer

    http = httpx.AsyncClient(transport=httpx.MockTransport(handle), base_url=BASE_URL)
    return AsyncMemstream(BASE_URL, KEY, http_client=http, max_retries=0)


RULE = "6f1b5c1e-51a4-4f43-9a39-7b2f3a4e2c11"


def verdict(decision: str, tier: str = "project", rule: str | None = RULE) -> httpx.Response:
    return httpx.Response(
        200, json={"decision": decision, "tier": tier, "reason": "a rule", "rule_id": rule, "grant_id": None}
    )


@pytest.mark.parametrize(
    ("args", "command"),
    [
        ({"CommandLine": "pytest --timeout=30"}, "pytest --timeout=30"),
        ({"command": "ls", "cwd": "/; rm -rf /"}, 'run_command {"command": "ls", "cwd": "/; rm -rf /"}'),
        ({"command": "ls", "count": 3}, 'run_command {"command": "ls", "count": 3}'),
        # Characters are themselves, but quotes and backslashes: a line break is one to a rule.
        (
            {"command": "ls -la\ntouch PWNED", "cwd": "/w"},
            'run_command {"command": "ls -la\ntouch PWNED", "cwd": "/w"}',
        ),
        ({"command": "ls\x1b", "cwd": "/w"}, 'run_command {"command": "ls\x1b", "cwd": "/w"}'),
        ({"a": 'say "hi" \\n', "b": [1, None]}, 'run_command {"a": "say \\"hi\\" \\\\n", "b": [1, null]}'),
        ({}, "run_command"),
    ],
)
def test_a_rule_sees_every_argument_the_tool_acts_on(args: dict[str, Any], command: str) -> None:
    assert command_of("run_command", args) == command


async def test_allow_runs_block_denies_pending_asks() -> None:
    asked: list[dict[str, Any]] = []
    context = ToolContext()
    allowed = await Guardrail(gateway(verdict("ALLOW"), asked), agent_id="a1").check(SHELL, {"c": "ls"}, context)
    blocked = await Guardrail(gateway(verdict("BLOCK"), asked)).check(SHELL, {"c": "rm -rf /"}, context)
    pending_guard = Guardrail(gateway(verdict("PENDING", "none", None), asked))
    pending = await pending_guard.check(Tool("deploy"), {"c": "x"}, context)
    assert allowed is None
    assert blocked == {"status": "DENIED", "tool": "run_command", "rule": RULE, "error": "blocked: a rule"}
    assert pending is not None and pending["status"] == "PENDING" and pending["rule"] == "none"
    [asked_person] = context.confirmations
    assert asked_person["payload"] == {"tool": "deploy", "command": "x"} and "deploy" in asked_person["hint"]
    assert asked[0] == {
        "session_id": "s1",
        "tool": "run_command",
        "command": "ls",
        "project_id": "agents",
        "agent_id": "a1",
    }


def error(status: int, code: str = "x") -> httpx.Response:
    return httpx.Response(status, json={"error": {"code": code, "message": "no", "details": []}})


def failing(exc: Exception) -> AsyncMemstream:
    def handle(request: httpx.Request) -> httpx.Response:
        raise exc

    http = httpx.AsyncClient(transport=httpx.MockTransport(handle), base_url=BASE_URL)
    return AsyncMemstream(BASE_URL, KEY, http_client=http, max_retries=0)


def proxy_error(status: int) -> httpx.Response:
    return httpx.Response(status, text=f"<html>{status} from the proxy</html>")


UNREACHABLE = [proxy_error(502), proxy_error(503), proxy_error(504)]
#: Answers that are not a verdict and not "unreachable": the input refused, a limit, a defect.
REFUSALS = [error(status) for status in (400, 401, 403, 404, 409, 413, 422, 429, 500, 501, 502, 503, 504)] + [
    error(503, "over_capacity"),  # the gateway answered: a client can bring its cap about
    httpx.Response(503, json={"error": {"code": "over_capacity"}}),  # its shape, without a message
    httpx.Response(200, text="<html>a proxy's page</html>"),
    httpx.Response(200, json={"decision": "allow", "tier": "project", "reason": "lower case"}),
    httpx.Response(200, json={"decision": "MAYBE", "tier": "project", "reason": "unknown"}),
    httpx.Response(200, json={"tier": "project", "reason": "no decision"}),
]


@pytest.mark.parametrize("answer", UNREACHABLE, ids=lambda r: str(r.status_code))
async def test_an_unreachable_engine_denies_unless_told_to_fail_open(answer: httpx.Response) -> None:
    closed = await Guardrail(gateway(answer, [])).check(SHELL, {"c": "ls"}, ToolContext())
    opened = await Guardrail(gateway(answer, []), fail_open=True).check(SHELL, {"c": "ls"}, ToolContext())
    assert closed is not None and closed["status"] == "DENIED" and "unavailable" in closed["error"]
    assert opened is None


@pytest.mark.parametrize("exc", [httpx.ConnectError("refused"), httpx.ReadTimeout("slow")], ids=type)
async def test_no_answer_at_all_is_unreachable(exc: Exception) -> None:
    closed = await Guardrail(failing(exc)).check(SHELL, {"c": "ls"}, ToolContext())
    opened = await Guardrail(failing(exc), fail_open=True).check(SHELL, {"c": "ls"}, ToolContext())
    assert closed is not None and closed["status"] == "DENIED"
    assert opened is None


@pytest.mark.parametrize("fail_open", [False, True])
@pytest.mark.parametrize("answer", REFUSALS, ids=lambda r: f"{r.status_code}-{r.content[:12]!r}")
async def test_anything_but_an_allow_denies_even_when_failing_open(answer: httpx.Response, fail_open: bool) -> None:
    """A 4xx is the caller's input refused (a control character, a command too long to
    judge): it never counts as "unavailable", nor does a 500 or an answer that is no verdict."""
    denied = await Guardrail(gateway(answer, []), fail_open=fail_open).check(SHELL, {"c": "rm -rf /"}, ToolContext())
    assert denied is not None and denied["status"] == "DENIED", denied
    assert "not run" in denied["error"]


async def test_the_whole_command_is_judged_and_a_longer_one_than_is_judged_denied() -> None:
    """The exact string the tool gets is sent, never cut; one longer than the engine judges
    (8 KiB) is denied before anything is sent: sent, megabytes of it made the gateway answer
    and close mid-upload, which read as no answer, and a failing-open guardrail ran the tool."""
    asked: list[dict[str, Any]] = []
    judged = "ls" + " " * 8000 + "; rm -rf /tmp/victim"
    guard = Guardrail(gateway(verdict("BLOCK"), asked), fail_open=True)
    assert (await guard.check(SHELL, {"CommandLine": judged}, ToolContext()))["status"] == "DENIED"  # type: ignore[index]
    for too_long in ("ls" + " " * 8200 + "; rm -rf /tmp/victim", "ls" + " " * 5_000_000 + "; evilcmd"):
        denied = await guard.check(SHELL, {"CommandLine": too_long}, ToolContext())
        assert denied is not None and denied["status"] == "DENIED" and "more than the 8192" in denied["error"]
    assert [a["command"] for a in asked] == [judged]


async def test_arguments_the_sdk_refuses_deny() -> None:
    """A session id the SDK's model refuses before sending (not a string): no verdict, denied."""

    @dataclass
    class OddSession:
        id: Any = 7
        app_name: str = "agents"

    context = ToolContext(session=OddSession())  # type: ignore[arg-type]
    denied = await Guardrail(gateway(verdict("ALLOW"), []), fail_open=True).check(SHELL, {"c": "ls"}, context)
    assert denied is not None and denied["status"] == "DENIED"


async def test_memstreams_own_memory_readers_are_preapproved_without_asking() -> None:
    from google.adk.tools.load_memory_tool import LoadMemoryTool
    from google.adk.tools.preload_memory_tool import PreloadMemoryTool

    from memstream_client.adk import archival_search_tool

    asked: list[dict[str, Any]] = []
    guard = Guardrail(gateway(verdict("BLOCK"), asked))
    for tool in (archival_search_tool(guard.client), LoadMemoryTool(), PreloadMemoryTool()):
        assert await guard.check(tool, {"query": "x"}, ToolContext()) is None, tool
    assert asked == []


@pytest.mark.parametrize("name", ["search_archived_memory", "load_memory", "preload_memory"])
async def test_another_tool_with_a_memory_readers_name_is_judged(name: str) -> None:
    """A tool that merely takes the name (an MCP toolset's, say) is evaluated like any other."""
    from google.adk.tools.function_tool import FunctionTool

    def impostor(query: str) -> str:
        """Runs a shell command."""
        return query

    impostor.__name__ = name
    asked: list[dict[str, Any]] = []
    for tool in (Tool(name), FunctionTool(impostor)):
        denied = await Guardrail(gateway(verdict("BLOCK"), asked)).check(tool, {"query": "rm -rf /"}, ToolContext())
        assert denied is not None and denied["status"] == "DENIED"
    assert [a["tool"] for a in asked] == [name, name]


async def test_a_function_tool_is_judged_with_what_its_function_gets() -> None:
    """Its defaults included: ``deploy()`` runs ``env="production"``, which is what is judged."""
    from google.adk.tools.function_tool import FunctionTool

    def deploy(env: str = "production", tool_context: Any = None) -> str:
        """Deploys."""
        return env

    asked: list[dict[str, Any]] = []
    guard = Guardrail(gateway(verdict("PENDING", "none", None), asked))
    await guard.check(FunctionTool(deploy), {}, ToolContext())
    await guard.check(FunctionTool(deploy), {"env": "staging"}, ToolContext())
    assert [a["command"] for a in asked] == ["production", "staging"]


@pytest.mark.parametrize("args", [{"environment": "staging"}, {"env": "staging", "apytest--timeout=30": "x"}])
async def test_an_argument_the_function_does_not_take_denies(args: dict[str, Any]) -> None:
    """ADK drops it after the guardrail has decided: judging it would judge what does not run."""
    from google.adk.tools.function_tool import FunctionTool

    def deploy(env: str = "production") -> str:
        """Deploys."""
        return env

    asked: list[dict[str, Any]] = []
    denied = await Guardrail(gateway(verdict("ALLOW"), asked), fail_open=True).check(
        FunctionTool(deploy), args, ToolContext()
    )
    assert denied is not None and denied["status"] == "DENIED" and "takes no argument" in denied["error"]
    assert asked == []

"""Normalisation only adds refusals (issue 45, finding 3): what ALLOW rules allow is the command
as sent, and a look-alike of an allowed command is never allowed by a rule of plain ASCII;
BLOCK rules still see the normalised command, so a compatibility form of a blocked one stays
blocked. On the engine's matching and judging functions, with rules in memory."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from hypothesis import example, given, settings
from hypothesis import strategies as st

from agents_gateway.permissions import _first_matches, _judge, _views
from sinks.postgres.rules import Effect, Rule


def rule(effect: Effect, pattern: str, position: int) -> Rule:
    return Rule(uuid.uuid4(), None, "sh", effect, pattern, position, "", datetime.now(UTC))


RULES = [
    rule("BLOCK", r"\brm -rf\b", 0),
    rule("ALLOW", r"^ls( |$)", 1),
    rule("ALLOW", r"^git (status|log)$", 2),
    rule("ALLOW", r"^cat [A-Za-z./]+$", 3),
    rule("ALLOW", r"^pytest.*--timeout=30", 4),
    rule("ALLOW", r"^echo .*", 5),
]


def decision(command: str) -> str:
    normal, sent = _views(command)
    texts = list(dict.fromkeys([*normal.texts, *sent.texts]))
    outcome = _first_matches(RULES, texts, budget_s=10.0)
    first = dict(zip(texts, outcome.first, strict=True))
    return _judge(normal, sent, first, dict(zip(texts, outcome.refused, strict=True))).decision


COMMANDS = [
    "ls", "ls -la", "git status", "git log", "cat README.md", "cat docs/api.md", "pytest -q --timeout=30",
    "echo hello world", "rm -rf /tmp/victim", "ls; rm -rf /tmp/x", "echo done && git status",
]  # fmt: skip

#: Look-alikes NFKC folds to the ASCII letter (full-width, mathematical bold), and ones it does
#: not (Cyrillic, Greek), and spaces a shell does not split at.
FOLDED = {c: (chr(0xFF01 + ord(c) - 0x21), chr(0x1D41A + ord(c) - ord("a")) if c.islower() else None) for c in "abcdefghijklmnopqrstuvwxyz"}  # fmt: skip
UNFOLDED = {"a": "\u0430", "e": "\u0435", "o": "\u043e", "p": "\u0440", "c": "\u0441", "s": "\u0455", "i": "\u0456", "t": "\u03c4"}  # fmt: skip
SPACES = ["\u00a0", "\u2003", "\u202f", "\u3000", "\u200b"]


@st.composite
def look_alike(draw: st.DrawFn, *, folded_only: bool = False) -> tuple[str, str]:
    """An ASCII command, and the same with at least one character swapped for a look-alike."""
    command = draw(st.sampled_from(COMMANDS))
    places = [i for i, ch in enumerate(command) if ch in FOLDED or (ch == " " and not folded_only)]
    chosen = draw(st.sets(st.sampled_from(places), min_size=1, max_size=len(places)))
    out = list(command)
    for i in chosen:
        ch = command[i]
        if ch == " ":
            out[i] = draw(st.sampled_from(SPACES))
            continue
        options = [f for f in FOLDED[ch] if f]
        if not folded_only and ch in UNFOLDED:
            options.append(UNFOLDED[ch])
        out[i] = draw(st.sampled_from(options))
    return command, "".join(out)


@settings(derandomize=True, max_examples=200)
@given(look_alike())
@example(("ls -la", "\uff4c\uff53 -la"))
@example(("git status", "git\u00a0status"))
@example(("cat README.md", "cat \uff32\uff25\uff21\uff24\uff2d\uff25.md"))
def test_a_look_alike_is_never_allowed_by_an_ascii_rule(pair: tuple[str, str]) -> None:
    original, variant = pair
    assert decision(variant) != "ALLOW", (original, variant)


@settings(derandomize=True, max_examples=200)
@given(look_alike(folded_only=True))
@example(("rm -rf /tmp/victim", "\uff52\uff4d -rf /tmp/victim"))
def test_a_compatibility_form_of_a_blocked_command_is_blocked(pair: tuple[str, str]) -> None:
    original, variant = pair
    if decision(original) == "BLOCK":
        assert decision(variant) == "BLOCK", (original, variant)


def test_the_ascii_commands_decide_as_before() -> None:
    assert [decision(c) for c in COMMANDS] == [
        "ALLOW", "ALLOW", "ALLOW", "ALLOW", "ALLOW", "ALLOW", "ALLOW", "ALLOW", "BLOCK", "BLOCK", "ALLOW",
    ]  # fmt: skip

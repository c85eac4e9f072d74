"""The tool-permission engine, in the seed's three tiers, failing closed.

1. an "allow once" grant for exactly this command in this session (Redis, single use);
2. the project's rules, in order; 3. the tenant's global rules, in order — the first
ALLOW or BLOCK pattern that matches decides;
otherwise PENDING: a human must confirm. Read-only memory tools are pre-approved.

Patterns are matched against the command normalised (NFKC, whitespace runs as one space)
and split into the simple commands it chains (``commands.py``): the whole line and each
part get their first matching rule; a BLOCK for any of them blocks, and the line is allowed
only when every part is (``pytest --timeout=30 && rm -rf /data`` is not allowed by an ALLOW
rule for pytest).

Patterns are RE2 (no backtracking), validated when stored: at most ``MAX_PATTERN_CHARS``
characters, counted repetitions (``{n,m}``) up to ``MAX_REPEAT``, and at most
``MAX_PROGRAM_SIZE`` compiled RE2 instructions. RE2's worst case is linear in the command
times the program size, so that bounds one search (about 65 ms for an 8 KiB command at the
limit). Matching runs on a small thread pool, never on the event loop (RE2 releases the
GIL while it searches), with a time budget per evaluation checked between rules: an
evaluation that runs out of it, or that would have to match more rules than the limits
allow, is BLOCKED (tier ``budget_exceeded``) — a rule not checked might have blocked the
command, and a human asked to confirm it would not know. Rules stored before these limits
still match, within the same budget.

Every decision is audited with the rule (or grant) that made it; the command is audited
redacted (``redact_command``: the privacy filter plus command-line secret forms), with the
SHA-256 of the original.
"""

from __future__ import annotations

import asyncio
import bisect
import hashlib
import re
import time
import uuid
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Literal

import psycopg
import re2
import redis.asyncio as aioredis

from agents_gateway.commands import MAX_PARTS, normalise, parts
from memstream.privacy import PLACEHOLDER, redact
from sinks.postgres.audit import append_audit
from sinks.postgres.rules import Rule, rules_for
from sinks.redis.grants import command_hash, use_grant

Decision = Literal["ALLOW", "BLOCK", "PENDING"]
Tier = Literal["preapproved", "allow_once", "project", "global", "none", "budget_exceeded"]

MAX_PATTERN_CHARS = 512
MAX_COMMAND_CHARS = 8192
#: The largest bound a counted repetition (``{n}``, ``{n,}``, ``{n,m}``) may have.
MAX_REPEAT = 100
#: The most RE2 instructions a pattern may compile to (forward and reverse program).
MAX_PROGRAM_SIZE = 5000
#: Threads that match patterns (each search is bounded; evaluations beyond wait their turn).
MATCH_THREADS = 4
_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.max_mem = 8 << 20  # a pattern that needs more is refused when stored
_RE2_OPTIONS.log_errors = False
_MATCHER = ThreadPoolExecutor(max_workers=MATCH_THREADS, thread_name_prefix="permission-match")


class PatternError(ValueError):
    """A rule pattern that RE2 cannot (or will not) compile, or that is too costly to match."""


@lru_cache(maxsize=4096)
def compile_pattern(pattern: str) -> Any:
    """Compile (and cache) an RE2 pattern; PatternError says what is wrong with it."""
    if not pattern or len(pattern) > MAX_PATTERN_CHARS:
        raise PatternError(f"a pattern has 1-{MAX_PATTERN_CHARS} characters")
    try:
        return re2.compile(pattern, options=_RE2_OPTIONS)
    except re2.error as exc:
        reason = exc.args[0] if exc.args else exc
        if isinstance(reason, bytes):
            reason = reason.decode("utf-8", "replace")
        raise PatternError(f"not a valid RE2 pattern: {reason}") from exc


_REPEAT = re.compile(r"\{(\d+)(,(\d*))?\}")


def counted_repetitions(pattern: str) -> list[tuple[str, int]]:
    """Every counted repetition of an RE2 pattern, as written and with its largest bound
    (``{n,}`` counts ``n``). Braces that RE2 reads as literals, in character classes, after
    ``\\x``/``\\p``/``\\P`` or inside ``\\Q…\\E``, are not repetitions."""
    found: list[tuple[str, int]] = []
    i, n = 0, len(pattern)
    while i < n:
        ch = pattern[i]
        if ch == "\\":
            i = _skip_escape(pattern, i)
        elif ch == "[":
            i = _skip_class(pattern, i)
        elif ch == "{" and (m := _REPEAT.match(pattern, i)):
            low, high = int(m.group(1)), m.group(3)
            found.append((m.group(0), max(low, int(high)) if high else low))
            i = m.end()
        else:
            i += 1
    return found


def _skip_escape(pattern: str, i: int) -> int:
    """The index after the escape that starts at ``pattern[i] == '\\'``."""
    kind = pattern[i + 1 : i + 2]
    if kind == "Q":
        end = pattern.find("\\E", i + 2)
        return len(pattern) if end < 0 else end + 2
    if kind in ("x", "p", "P") and pattern[i + 2 : i + 3] == "{":
        end = pattern.find("}", i + 3)
        return len(pattern) if end < 0 else end + 1
    return i + 2


def _skip_class(pattern: str, i: int) -> int:
    """The index after the character class that starts at ``pattern[i] == '['``."""
    n = len(pattern)
    i += 1
    if i < n and pattern[i] == "^":
        i += 1
    if i < n and pattern[i] == "]":  # a leading ']' is a literal
        i += 1
    while i < n:
        ch = pattern[i]
        if ch == "\\":
            i = _skip_escape(pattern, i)
        elif ch == "[" and pattern[i + 1 : i + 2] == ":":
            end = pattern.find(":]", i + 2)
            i = i + 1 if end < 0 else end + 2
        elif ch == "]":
            return i + 1
        else:
            i += 1
    return n


def validate_pattern(pattern: str) -> Any:
    """What a new rule's pattern must pass (PatternError says why not): its length, counted
    repetitions up to ``MAX_REPEAT``, RE2 syntax, and a compiled program of at most
    ``MAX_PROGRAM_SIZE`` instructions. Returns the compiled pattern."""
    if not pattern or len(pattern) > MAX_PATTERN_CHARS:
        raise PatternError(f"a pattern has 1-{MAX_PATTERN_CHARS} characters")
    for written, bound in counted_repetitions(pattern):
        if bound > MAX_REPEAT:
            raise PatternError(
                f"counted repetition {written} is too large: bounds of at most {MAX_REPEAT} are accepted "
                "(use + or * for 'any number')"
            )
    compiled = compile_pattern(pattern)
    size = max(getattr(compiled, "programsize", 0), getattr(compiled, "reverseprogramsize", 0))
    if size > MAX_PROGRAM_SIZE:
        raise PatternError(
            f"the pattern compiles to {size} RE2 instructions; at most {MAX_PROGRAM_SIZE} are accepted "
            "(large repetitions and Unicode classes cost the most)"
        )
    return compiled


# --- control characters -------------------------------------------------------------------

#: C0 control characters but tab, line feed and carriage return (commands may hold them), DEL,
#: and lone surrogates (JSON can spell them; they cannot be encoded, hashed or stored).
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff]")
#: The same, tab and line breaks included: for one-line values (tools, patterns, descriptions).
_CONTROL_OR_BREAK = re.compile(r"[\x00-\x1f\x7f\ud800-\udfff]")


def text_problem(name: str, value: str | None, *, multiline: bool = False) -> str | None:
    """Why ``value`` is refused, if it holds NUL or a control character (None if clean)."""
    if value is None:
        return None
    match = (_CONTROL if multiline else _CONTROL_OR_BREAK).search(value)
    if match is None:
        return None
    allowed = " other than tab and line breaks" if multiline else ""
    what = "unpaired surrogates" if "\ud800" <= match.group() <= "\udfff" else f"NUL or control characters{allowed}"
    return f"{name} must not contain {what}: found U+{ord(match.group()):04X}"


# --- redaction of what is audited ---------------------------------------------------------

#: Programs whose options carry secrets of their own: the MySQL/MariaDB clients
#: (``-p<password>``, attached), ``sshpass -p <password>``, and ``curl``/``wget -u user:password``.
_PROGRAMS = re.compile(
    r"(?<![\w.-])(?:(?P<mysql>mysql\w*|mariadb[\w-]*)|(?P<sshpass>sshpass)|(?P<http>curl|wget))(?![\w.-])"
)
#: What ends one simple command and starts the next.
_SEPARATOR = re.compile(r"[|;&\n\r(){}`]")
#: Where a secret may follow: an HTTP credential header, a ``NAME=value`` assignment, a long
#: option (``--password=…`` / ``--token …``), or ``-p`` / ``-u``. Each alternative can start
#: only at the beginning of a word, so the scan stays linear in the command's length.
_OPENER = re.compile(
    r"(?P<header>(?<![\w-])(?i:authorization|proxy-authorization|x-api-key|api-key|x-auth-token|x-access-token"
    r"|private-token|cookie)[ \t]*:[ \t]*)"
    r"|(?P<env>(?<![\w$-])[A-Za-z_][A-Za-z0-9_]*=)"
    r"|(?P<long>(?<![\w-])--[A-Za-z][A-Za-z0-9_-]*(?:=|[ \t]+))"
    r"|(?P<short>(?<![\w-])-[pu])"
)
_SECRET_NAME = re.compile(
    r"(?i)passw(?:or)?d|passphrase|pwd|secret|token|api[_-]?key|access[_-]?key|private[_-]?key|credential"
)
#: Options and variables whose value names where a secret is, not the secret itself.
_NOT_A_SECRET_VALUE = re.compile(r"(?i)[_-](?:file|path|stdin|env|prompt|command|cmd|dir|length|expiry|type)$")
#: A shell word: quoted parts, or other characters up to whitespace.
_WORD = re.compile(r"(?:'[^']*'?|\"[^\"]*\"?|[^\s'\"|;&<>()`])+")
#: Between ``sshpass`` and its ``-p``: only other options (the wrapped command's ``-p`` is its own).
_SSHPASS_OPTIONS = re.compile(r"(?:[ \t]+-[A-Za-z]\S*)*?[ \t]+")
_HEADER_VALUE = re.compile(r"[^'\"\r\n]+")
_SPACE = re.compile(r"[ \t]+")


def redact_command(command: str) -> tuple[str, Counter[str]]:
    """``command`` as it may be kept in the audit log: secrets that command lines carry —
    ``mysql -p<password>``, ``--password=…``/``--password …``/``--token …``-style options,
    ``PGPASSWORD=… cmd``-style assignments, ``-H 'Authorization: …'`` headers, ``sshpass -p …``,
    ``curl -u user:password`` — replaced by ``[REDACTED:<kind>]``, then the privacy filter
    (``memstream.privacy.redact``) for everything else. Returns what was found, by kind."""
    found: Counter[str] = Counter()
    text = _redact_command_line(command, found)
    text, general = redact(text)
    found.update(general)
    return text, found


def _redact_command_line(text: str, found: Counter[str]) -> str:
    programs: dict[str, list[tuple[int, int]]] = {"mysql": [], "sshpass": [], "http": []}
    for found_program in _PROGRAMS.finditer(text):
        programs[found_program.lastgroup or "mysql"].append(found_program.span())
    starts = {family: [start for start, _ in spans] for family, spans in programs.items()}
    separators = [m.start() for m in _SEPARATOR.finditer(text)]

    def program_before(pos: int, family: str) -> int:
        """Where the last program of ``family`` before ``pos`` in the same simple command ends (-1: none)."""
        k = bisect.bisect_left(separators, pos)
        start = separators[k - 1] + 1 if k else 0
        j = bisect.bisect_left(starts[family], pos) - 1
        return programs[family][j][1] if j >= 0 and starts[family][j] >= start else -1

    out: list[str] = []
    pos = 0
    while (m := _OPENER.search(text, pos)) is not None:
        span: tuple[int, int] | None = None
        kind = ""
        if m.group("header") is not None:
            if value := _HEADER_VALUE.match(text, m.end()):
                span, kind = value.span(), "auth_header"
        elif (opener := m.group("env")) is not None:
            name = opener[:-1]
            if _secret_name(name) and name.upper() not in ("PWD", "OLDPWD"):
                span, kind = _word(text, m.end()), "secret_variable"
        elif (opener := m.group("long")) is not None:
            name = opener[2:].rstrip("= \t")
            separate = not opener.endswith("=")
            if separate and text.startswith("-", m.end()):
                pass  # a flag without a value (--password prompts)
            elif name == "user" and program_before(m.start(), "http") >= 0:
                span, kind = _after_colon(_word(text, m.end()), text), "cli_password"
            elif _secret_name(name) or name.lower() == "pass":
                span, kind = _word(text, m.end()), "cli_secret"
        else:
            flag, after = m.group("short"), m.end()
            attached = after < len(text) and not text[after].isspace()
            if flag == "-p" and attached and program_before(m.start(), "mysql") >= 0:
                span, kind = _word(text, after), "cli_password"
            elif (
                flag == "-p"
                and (sshpass := program_before(m.start(), "sshpass")) >= 0
                and _SSHPASS_OPTIONS.fullmatch(text, sshpass, m.start())
            ):
                span, kind = _word(text, _after_space(text, after)), "cli_password"
            elif flag == "-u" and program_before(m.start(), "http") >= 0:
                span, kind = _after_colon(_word(text, _after_space(text, after)), text), "cli_password"
        if span is None or span[0] >= span[1] or text.startswith("[REDACTED:", span[0]):
            out.append(text[pos : m.end()])
            pos = m.end()
            continue
        out.append(text[pos : span[0]])
        out.append(PLACEHOLDER.format(kind))
        found[kind] += 1
        pos = span[1]
    out.append(text[pos:])
    return "".join(out)


def _secret_name(name: str) -> bool:
    return bool(_SECRET_NAME.search(name)) and not _NOT_A_SECRET_VALUE.search(name)


def _after_colon(span: tuple[int, int] | None, text: str) -> tuple[int, int] | None:
    """The password of a ``user:password`` word (None without one)."""
    if span is None:
        return None
    colon = text.find(":", span[0], span[1])
    return (colon + 1, span[1]) if colon >= 0 else None


def _after_space(text: str, pos: int) -> int:
    space = _SPACE.match(text, pos)
    return space.end() if space else pos


def _word(text: str, pos: int) -> tuple[int, int] | None:
    word = _WORD.match(text, pos)
    return word.span() if word else None


def sha256_hex(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def rule_audit_detail(
    *, project_id: str | None, tool: str, effect: str, pattern: str, position: int, description: str
) -> tuple[dict[str, Any], Counter[str]]:
    """A new rule as the audit log keeps it: pattern and description redacted, with hashes."""
    shown_pattern, found = redact_command(pattern)
    shown_description, more = redact_command(description)
    found.update(more)
    detail = {
        "project_id": project_id, "tool": tool, "effect": effect, "position": position,
        "pattern": shown_pattern, "pattern_sha256": sha256_hex(pattern),
        "description": shown_description, "description_sha256": sha256_hex(description),
    }  # fmt: skip
    return detail, found


# --- deciding -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Verdict:
    decision: Decision
    tier: Tier
    reason: str
    rule_id: uuid.UUID | None = None
    grant_id: uuid.UUID | None = None


@dataclass(frozen=True)
class Evaluation:
    """A verdict, and what was redacted from the command before it was audited."""

    verdict: Verdict
    redactions: Counter[str] = field(default_factory=Counter)


@dataclass(frozen=True)
class _Outcome:
    #: The first rule matching each text judged (the whole line, then each part), or None.
    first: list[Rule | None]
    checked: int
    exceeded: bool


def _first_matches(rules: Sequence[Rule], texts: Sequence[str], budget_s: float) -> _Outcome:
    """For each text, the first rule whose pattern is found in it (in a matcher thread). The
    budget, for all texts together, is checked before each search: one search is bounded by
    the pattern limits, not interrupted."""
    deadline = time.monotonic() + budget_s
    first: list[Rule | None] = []
    checked = 0
    for text in texts:
        found: Rule | None = None
        for rule in rules:
            if time.monotonic() > deadline:
                return _Outcome(first, checked, exceeded=True)
            checked += 1
            try:
                compiled = compile_pattern(rule.pattern)
            except PatternError:
                continue  # stored before validation tightened: never matches, never crashes
            if compiled.search(text) is not None:
                found = rule
                break
        first.append(found)
    return _Outcome(first, checked, exceeded=False)


def _rule_verdict(rule: Rule, reason: str = "") -> Verdict:
    tier: Tier = "project" if rule.project_id is not None else "global"
    where = f"project {rule.project_id}" if rule.project_id else "global"
    return Verdict(rule.effect, tier, f"{where} rule /{rule.pattern}/{reason}", rule_id=rule.rule_id)


def _judge(whole: str, pieces: Sequence[str], first: Sequence[Rule | None]) -> Verdict:
    """BLOCK when the whole line or any part is blocked; ALLOW only when every part is allowed
    (a line without operators is one part: itself); PENDING otherwise."""
    single = pieces == [whole]
    by_part = [first[0]] if single else list(first[1:])
    for text, rule in zip([whole] if single else [whole, *pieces], first, strict=True):
        if rule is not None and rule.effect == "BLOCK":
            return _rule_verdict(rule, "" if text == whole else f" (on the part {text!r} of the command)")
    if by_part and all(rule is not None and rule.effect == "ALLOW" for rule in by_part):
        allowed = by_part[0]
        assert allowed is not None
        return _rule_verdict(allowed, "" if len(by_part) == 1 else f" (and every other of the {len(by_part)} parts)")
    unmatched = next((text for text, rule in zip(pieces, by_part, strict=True) if rule is None), None)
    if len(by_part) > 1 and unmatched is not None:
        return Verdict(
            "PENDING", "none", f"no rule matches the part {unmatched!r} of the command: a human must confirm"
        )
    return Verdict("PENDING", "none", "no rule matches: a human must confirm")


def _over_budget(reason: str) -> Verdict:
    return Verdict("BLOCK", "budget_exceeded", f"{reason}: fails closed, since a rule not checked might block it")


async def decide(
    conn: psycopg.AsyncConnection[Any],
    client: aioredis.Redis,
    *,
    tenant_id: str,
    session_id: str,
    project_id: str | None,
    tool: str,
    command: str,
    preapproved: tuple[str, ...],
    budget_s: float,
    max_rules: int,
) -> Verdict:
    if tool in preapproved:
        return Verdict("ALLOW", "preapproved", f"{tool} only reads memory")
    grant = await use_grant(client, tenant_id=tenant_id, session_id=session_id, tool=tool, command=command)
    if grant is not None:
        return Verdict("ALLOW", "allow_once", "a single-use grant for this command", grant_id=grant)
    rules = await rules_for(conn, tool=tool, project_id=project_id, limit=max_rules + 1)
    if len(rules) > max_rules:
        return _over_budget(f"more than {max_rules} rules apply to {tool}")
    if not rules:
        return Verdict("PENDING", "none", "no rule matches: a human must confirm")
    whole, pieces = normalise(command), parts(command)
    if len(pieces) > MAX_PARTS:
        return _over_budget(f"the command chains more than {MAX_PARTS} commands")
    texts = [whole] if pieces == [whole] else [whole, *pieces]
    loop = asyncio.get_running_loop()
    outcome = await loop.run_in_executor(_MATCHER, _first_matches, rules, texts, budget_s)
    if outcome.exceeded:
        return _over_budget(
            f"matching exceeded its {budget_s * 1000:g} ms budget after {outcome.checked} of"
            f" {len(rules) * len(texts)} searches"
        )
    return _judge(whole, pieces, outcome.first)


async def evaluate(
    conn: psycopg.AsyncConnection[Any],
    client: aioredis.Redis,
    *,
    tenant_id: str,
    actor: str,
    session_id: str,
    project_id: str | None,
    tool: str,
    command: str,
    preapproved: tuple[str, ...],
    budget_s: float,
    max_rules: int,
) -> Evaluation:
    """Decide, and record the decision in the audit log (in the caller's transaction), with
    the command redacted and the SHA-256 of the original."""
    verdict = await decide(
        conn, client, tenant_id=tenant_id, session_id=session_id, project_id=project_id,
        tool=tool, command=command, preapproved=preapproved, budget_s=budget_s, max_rules=max_rules,
    )  # fmt: skip
    shown, found = redact_command(command)
    await append_audit(
        conn,
        tenant_id=tenant_id,
        actor=actor,
        action="permission.decision",
        subject=session_id,
        detail={
            "tool": tool,
            "command": shown,
            "command_sha256": command_hash(tool, command),
            "redactions": dict(sorted(found.items())),
            "project_id": project_id,
            "decision": verdict.decision,
            "tier": verdict.tier,
            "rule_id": str(verdict.rule_id) if verdict.rule_id else None,
            "grant_id": str(verdict.grant_id) if verdict.grant_id else None,
        },
    )
    return Evaluation(verdict, found)

"""The tool-permission engine, in the seed's three tiers, failing closed.

1. an "allow once" grant for exactly this command in this session and project (or none),
   for the acting agent or any (Redis, single use);
2. the project's rules, in order; 3. the tenant's global rules, in order — the first
ALLOW or BLOCK pattern that matches decides;
otherwise PENDING: a human must confirm. Read-only memory tools are pre-approved.

Patterns are matched against two views of the command (``commands.py``), each cut into
fragments at every character where a shell could start another command, regardless of
quotes: the command as sent (only its blanks as one space) and the command normalised (NFKC,
whitespace runs as one space). The whole line and each fragment of each view get their
first matching rule; a BLOCK for any of them blocks, and the line is allowed only when every
fragment *as sent* is (``pytest --timeout=30 && rm -rf /data`` is not allowed by an ALLOW
rule for pytest, nor a full-width ``\uff4c\uff53 -la`` by one for ls: normalisation only adds
refusals). An ALLOW rule never allows a fragment that holds an expansion (``$``, a
backtick, history ``!``: bash can run code through any of them), nor one whose program,
assignments before it, shells (and find ``-exec``) or characters outside printable ASCII its
pattern does not name (``commands.analyse``); it is passed over, and a later rule decides. A
reason names fragments by position, never by their text.

Patterns are RE2 (no backtracking), validated when stored: at most ``MAX_PATTERN_CHARS``
characters, counted repetitions (``{n,m}``) up to ``MAX_REPEAT``, and at most
``MAX_PROGRAM_SIZE`` compiled RE2 instructions. RE2's worst case is linear in the command
times the program size, so that bounds one search (about 65 ms for an 8 KiB command at the
limit). Matching runs on a small thread pool, never on the event loop (RE2 releases the
GIL while it searches), with a time budget per evaluation checked between rules: an
evaluation that runs out of it, or that would have to match more rules than the limits
allow, is BLOCKED (tier ``budget_exceeded``) — a rule not checked might have blocked the
command, and a human asked to confirm it would not know. Rules stored before these limits
still match, within the same budget. One tenant may have at most a few evaluations matching
at once (``EvaluationsBusy`` beyond, a 429), so it can never hold every matcher thread.

Every decision is audited with the rule (or grant) that made it; the command is audited
redacted (``redact_command``: the privacy filter plus command-line secret forms), with the
SHA-256 of the original.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
import threading
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

from agents_gateway.commands import MAX_PARTS, Unnamed, analyse, as_sent, normalise, parts, sent_parts
from memstream.privacy import DEFAULT_POLICY, PrivacyPolicy, redact
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
#: Threads that match patterns (each search is bounded; evaluations beyond wait their turn,
#: and one tenant may hold only a few of them: ``EvaluationsBusy``).
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


def redact_command(command: str, policy: PrivacyPolicy = DEFAULT_POLICY) -> tuple[str, Counter[str]]:
    """``command`` as it may be kept in the audit log: the privacy filter
    (``memstream.privacy.redact``) with the tenant's ``policy`` (e-mail addresses and phone
    numbers go when it redacts them in turns), whose command-line detectors find the secrets
    command lines carry — ``mysql -p<password>``, ``--password=…``/``--token …``-style options,
    ``PGPASSWORD=… cmd``-style assignments, ``-H 'Authorization: …'`` headers, ``sshpass -p …``,
    ``curl -u user:password``, ``redis-cli -a …``, ``htpasswd -b …``, ``aws configure set … …``,
    SQL's ``PASSWORD '…'`` — and everything else it redacts. One set of detectors for turns,
    tool events and the audit log, so they never disagree. Returns what was found, by kind."""
    return redact(command, policy)


#: A pattern's escapes of punctuation (``\.``, ``\!``, ``\-``) and its blanks (``\s+``), read as
#: what they match: ``frank@example\.com`` and ``PASSWORD 'Hunter2\!'`` are what they say.
_PATTERN_ESCAPE = re.compile(r"\\([^\w\s])|\\s[+*?]?+")


def redact_pattern(pattern: str, policy: PrivacyPolicy = DEFAULT_POLICY) -> tuple[str, Counter[str]]:
    """A rule's pattern as the audit log keeps it: the filter on the pattern as written, or —
    when it finds more there — on the pattern with its escapes read as what they match."""
    shown, found = redact_command(pattern, policy)
    plain = _PATTERN_ESCAPE.sub(lambda m: m.group(1) or " ", pattern)
    if plain != pattern:
        shown_plain, found_plain = redact_command(plain, policy)
        if sum(found_plain.values()) > sum(found.values()):
            return shown_plain, found_plain
    return shown, found


def sha256_hex(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def rule_audit_detail(
    *,
    project_id: str | None,
    tool: str,
    effect: str,
    pattern: str,
    position: int,
    description: str,
    policy: PrivacyPolicy = DEFAULT_POLICY,
) -> tuple[dict[str, Any], Counter[str]]:
    """A new rule as the audit log keeps it: pattern and description redacted with the
    tenant's ``policy`` (``redact_pattern``, ``redact_command``), with hashes of both."""
    shown_pattern, found = redact_pattern(pattern, policy)
    shown_description, more = redact_command(description, policy)
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


class EvaluationsBusy(Exception):
    """This tenant already has as many evaluations matching rules as it may: the caller is
    told to retry (429) rather than queue behind them, so one tenant cannot occupy every
    matcher thread and stall the other tenants' evaluations."""

    def __init__(self, limit: int) -> None:
        super().__init__(
            f"{limit} evaluation{'s' if limit != 1 else ''} of this tenant {'are' if limit != 1 else 'is'}"
            " already matching rules; retry shortly"
        )
        self.limit = limit


class _TenantSlots:
    """How many evaluations of each tenant are matching (queued for, or on, a matcher thread)
    in this process. A slot is taken on the event loop and given back when the matcher job
    ends — not when the request does, so a client that hangs up keeps its slot until its
    searches stop."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._busy: dict[str, int] = {}

    def take(self, tenant_id: str, limit: int) -> bool:
        with self._lock:
            held = self._busy.get(tenant_id, 0)
            if held >= limit:
                return False
            self._busy[tenant_id] = held + 1
            return True

    def give_back(self, tenant_id: str) -> None:
        with self._lock:
            held = self._busy.get(tenant_id, 0) - 1
            if held > 0:
                self._busy[tenant_id] = held
            else:
                self._busy.pop(tenant_id, None)

    def busy(self, tenant_id: str) -> int:
        with self._lock:
            return self._busy.get(tenant_id, 0)


_SLOTS = _TenantSlots()


async def _match(
    tenant_id: str, max_matching: int, rules: Sequence[Rule], texts: Sequence[str], budget_s: float
) -> _Outcome:
    """``_first_matches`` on a matcher thread, in one of the tenant's ``max_matching`` slots
    (EvaluationsBusy when it has none free)."""
    if not _SLOTS.take(tenant_id, max_matching):
        raise EvaluationsBusy(max_matching)
    try:
        job = _MATCHER.submit(_first_matches, rules, texts, budget_s)
    except BaseException:
        _SLOTS.give_back(tenant_id)
        raise
    job.add_done_callback(lambda _job: _SLOTS.give_back(tenant_id))
    return await asyncio.wrap_future(job)


#: Why no ALLOW rule allows a text: it holds an expansion, or the ALLOW rules that match it
#: do not name a part of it that runs (``commands.analyse``) or its unusual characters.
Refusal = Literal["expansion", "unusual", "rewritten"] | Unnamed

_REFUSALS: dict[Refusal, str] = {
    "expansion": "holds a shell expansion ($, a backtick or !), through which a shell can run code"
    " no rule sees, so no ALLOW rule allows it",
    "program": "is matched by an ALLOW rule that does not name its program",
    "assignments": "is matched by an ALLOW rule that does not name the variables it sets before its program",
    "runner": "is matched by an ALLOW rule that does not name the shell (or find -exec) it runs",
    "unusual": "holds characters a shell reads as they are (non-ASCII letters, look-alikes, unusual spaces)"
    " that no ALLOW rule matching it names",
    "rewritten": "names its program by a word the shell rewrites before it runs it (braces, a glob, quotes"
    " or escapes, a ..), so no ALLOW rule allows it",
}


@dataclass(frozen=True)
class _Outcome:
    #: The first rule deciding each text judged (the whole line, then each fragment), or None:
    #: the first BLOCK rule that matches it, or ALLOW rule that matches and may allow it.
    first: list[Rule | None]
    #: For each text no rule decides, why no ALLOW rule could (None: none matched it).
    refused: list[Refusal | None]
    checked: int
    exceeded: bool


def _first_matches(rules: Sequence[Rule], texts: Sequence[str], budget_s: float) -> _Outcome:
    """For each text, the first rule that decides it (in a matcher thread): a BLOCK rule
    whose pattern is found in it, or an ALLOW rule whose pattern is found in it and that may
    allow it — never one for a text with an expansion (not searched at all), and only one
    that names every part of it that runs: its pattern must no longer match when the program,
    the assignments before it or the shells it names are replaced by a neutral word
    (``commands.analyse``). An ALLOW rule that may not allow a text is passed over, so a
    later rule decides it. The budget, for all texts together, is checked before each search
    (those of the replaced texts included): one search is bounded by the pattern limits, not
    interrupted. An ALLOW rule whose pattern does not hold every character of the text
    outside printable ASCII is passed over too (``Fragment.unusual``)."""
    deadline = time.monotonic() + budget_s
    first: list[Rule | None] = []
    refused: list[Refusal | None] = []
    checked = 0
    for text in texts:
        fragment = analyse(text)
        found: Rule | None = None
        why: Refusal | None = "expansion" if fragment.expansion is not None else None
        for rule in rules:
            allow = rule.effect == "ALLOW"
            if allow and fragment.expansion is not None:
                continue
            if time.monotonic() > deadline:
                return _Outcome(first, refused, checked, exceeded=True)
            checked += 1
            try:
                compiled = compile_pattern(rule.pattern)
            except PatternError:
                continue  # stored before validation tightened: never matches, never crashes
            if compiled.search(text) is None:
                continue
            if allow and fragment.rewritten:
                why = why or "rewritten"
                continue
            if allow and not fragment.names_unusual(rule.pattern):
                why = why or "unusual"
                continue
            if allow:
                unnamed: Unnamed | None = None
                for part, replaced in fragment.unnamed:
                    if time.monotonic() > deadline:
                        return _Outcome(first, refused, checked, exceeded=True)
                    if compiled.search(replaced) is not None:
                        unnamed = part
                        break
                if unnamed is not None:
                    why = why or unnamed
                    continue
            found = rule
            break
        first.append(found)
        refused.append(None if found is not None else why)
    return _Outcome(first, refused, checked, exceeded=False)


def _rule_verdict(rule: Rule, reason: str = "") -> Verdict:
    """A rule's verdict; its reason shows the pattern redacted (a pattern that matched may
    hold what the command holds), never the command."""
    tier: Tier = "project" if rule.project_id is not None else "global"
    where = f"project {rule.project_id}" if rule.project_id else "global"
    shown, _found = redact_command(rule.pattern)
    return Verdict(rule.effect, tier, f"{where} rule /{shown}/{reason}", rule_id=rule.rule_id)


@dataclass(frozen=True)
class _View:
    """One view of a command (as sent, or normalised): the whole line and its fragments."""

    whole: str
    pieces: list[str]

    @property
    def texts(self) -> list[str]:
        """What is matched: the line, then its fragments (a line without cuts is one text)."""
        return [self.whole] if self.pieces == [self.whole] else [self.whole, *self.pieces]

    def where(self, index: int) -> str:
        """How a reason names ``pieces[index]``: by position, never by its text."""
        count = len(self.pieces)
        return "the command" if count == 1 else f"fragment {index + 1} of {count} of the command"


def _views(command: str) -> tuple[_View, _View]:
    """The command normalised (what BLOCK rules also see), and as sent (what ALLOW rules allow)."""
    return _View(normalise(command), parts(command)), _View(as_sent(command), sent_parts(command))


def _judge(normal: _View, sent: _View, first: dict[str, Rule | None], refused: dict[str, Refusal | None]) -> Verdict:
    """BLOCK when the whole line or any fragment of either view is blocked; ALLOW only when
    every fragment as sent is allowed (a line without cuts is one fragment: itself); PENDING
    otherwise. Each text has its own first deciding rule (project rules before global ones,
    in order, ``_first_matches``), so a fragment an ALLOW rule decides is allowed whatever
    else its program does with its arguments. A reason names a fragment by its position (in
    the normalised view when one of its fragments is not allowed: its cuts are the finer),
    never by its text: a command's secrets and personal data are not repeated."""
    for view in (normal, sent):
        for index, text in enumerate(view.texts):
            rule = first[text]
            if rule is not None and rule.effect == "BLOCK":
                on = "" if index == 0 else f" (on fragment {index} of {len(view.pieces)} of the command)"
                return _rule_verdict(rule, on)
    if sent.pieces and all(_allows(first[piece]) for piece in sent.pieces):
        allowed = first[sent.pieces[0]]
        assert allowed is not None
        count = len(sent.pieces)
        return _rule_verdict(allowed, "" if count == 1 else f" (and every other of the {count} fragments)")
    for view in (normal, sent):
        for index, piece in enumerate(view.pieces):
            if _allows(first[piece]):
                continue
            what = view.where(index)
            refusal = refused[piece]
            if refusal is not None:
                return Verdict("PENDING", "none", f"{what} {_REFUSALS[refusal]}: a human must confirm")
            if len(view.pieces) > 1:
                return Verdict("PENDING", "none", f"no rule matches {what}: a human must confirm")
            break
    return Verdict("PENDING", "none", "no rule matches: a human must confirm")


def _allows(rule: Rule | None) -> bool:
    return rule is not None and rule.effect == "ALLOW"


def _over_budget(reason: str) -> Verdict:
    return Verdict("BLOCK", "budget_exceeded", f"{reason}: fails closed, since a rule not checked might block it")


async def decide(
    conn: psycopg.AsyncConnection[Any],
    client: aioredis.Redis,
    *,
    tenant_id: str,
    session_id: str,
    project_id: str | None,
    agent_id: str | None,
    tool: str,
    command: str,
    preapproved: tuple[str, ...],
    budget_s: float,
    max_rules: int,
    max_matching: int,
) -> Verdict:
    """The verdict on ``command``; EvaluationsBusy when rules must be matched and the tenant
    already has ``max_matching`` evaluations matching (a grant decides without matching, so
    a refused evaluation has consumed none). A pre-approved tool is allowed without a rule,
    but not against one: the tenant's BLOCK rules for it still apply (pre-approval is by the
    tool's name, which any tool can take)."""
    if tool not in preapproved:
        grant = await use_grant(
            client, tenant_id=tenant_id, session_id=session_id, project_id=project_id, agent_id=agent_id,
            tool=tool, command=command,
        )  # fmt: skip
        if grant is not None:
            return Verdict("ALLOW", "allow_once", "a single-use grant for this command", grant_id=grant)
    verdict = await _by_rules(
        conn, tenant_id=tenant_id, project_id=project_id, tool=tool, command=command, budget_s=budget_s,
        max_rules=max_rules, max_matching=max_matching,
    )  # fmt: skip
    if tool in preapproved and verdict.decision != "BLOCK":
        return Verdict("ALLOW", "preapproved", f"{tool} only reads memory")
    return verdict


async def _by_rules(
    conn: psycopg.AsyncConnection[Any],
    *,
    tenant_id: str,
    project_id: str | None,
    tool: str,
    command: str,
    budget_s: float,
    max_rules: int,
    max_matching: int,
) -> Verdict:
    """What the tool's rules (the project's, then the global ones) decide of ``command``."""
    rules = await rules_for(conn, tool=tool, project_id=project_id, limit=max_rules + 1)
    if len(rules) > max_rules:
        return _over_budget(f"more than {max_rules} rules apply to {tool}")
    if not rules:
        return Verdict("PENDING", "none", "no rule matches: a human must confirm")
    normal, sent = _views(command)
    if max(len(normal.pieces), len(sent.pieces)) > MAX_PARTS:
        return _over_budget(f"the command has more than {MAX_PARTS} fragments")
    texts = list(dict.fromkeys([*normal.texts, *sent.texts]))  # an ASCII line's views are one
    outcome = await _match(tenant_id, max_matching, rules, texts, budget_s)
    if outcome.exceeded:
        return _over_budget(
            f"matching exceeded its {budget_s * 1000:g} ms budget after {outcome.checked} of"
            f" {len(rules) * len(texts)} searches"
        )
    first = dict(zip(texts, outcome.first, strict=True))
    return _judge(normal, sent, first, dict(zip(texts, outcome.refused, strict=True)))


async def evaluate(
    conn: psycopg.AsyncConnection[Any],
    client: aioredis.Redis,
    *,
    tenant_id: str,
    actor: str,
    session_id: str,
    project_id: str | None,
    agent_id: str | None,
    tool: str,
    command: str,
    preapproved: tuple[str, ...],
    budget_s: float,
    max_rules: int,
    max_matching: int,
    policy: PrivacyPolicy = DEFAULT_POLICY,
) -> Evaluation:
    """Decide, and record the decision in the audit log (in the caller's transaction), with
    the command redacted under the tenant's ``policy`` and the SHA-256 of the original.
    ``agent_id`` is the agent the evaluation acts for (it may use that agent's grants)."""
    verdict = await decide(
        conn, client, tenant_id=tenant_id, session_id=session_id, project_id=project_id, agent_id=agent_id,
        tool=tool, command=command, preapproved=preapproved, budget_s=budget_s, max_rules=max_rules,
        max_matching=max_matching,
    )  # fmt: skip
    shown, found = redact_command(command, policy)
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
            "agent_id": agent_id,
            "decision": verdict.decision,
            "tier": verdict.tier,
            "rule_id": str(verdict.rule_id) if verdict.rule_id else None,
            "grant_id": str(verdict.grant_id) if verdict.grant_id else None,
        },
    )
    return Evaluation(verdict, found)

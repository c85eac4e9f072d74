"""How much a piece of memory matters, from its content alone: a number in [0, 1].

Importance feeds ranking (a boost at read time) and forgetting (``importance *
exp(-λ·age)``), so it must be cheap, deterministic and the same on every replay. It
is a handful of keyword signals, not a model:

- **error** — errors, failures, exceptions, tracebacks, crashes, timeouts that
  happened, or a tool call whose ``tool_status`` is ``failure``;
- **decision** — "we decided", "let's go with", "we will use", "agreed", "from now
  on", "switch(ed) to", "moved … to", "migrated … to", "replaced … with", "settled on";
- **rule** — explicit preferences, rules and constraints: "I prefer", "I like",
  "always", "never", "don't", "must", "remember", "rule", "policy", "by default".

What it cannot do: it reads words, not meaning. "I never said that" counts as a rule,
a failure described in a language other than English counts for nothing, and tool
output only counts for its errors (a log line saying "always" is not a user's rule).
A few idioms are excluded on purpose ("never mind", "don't worry", "no errors").
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal

Signal = Literal["error", "decision", "rule"]

#: Every turn starts here; small talk stays here.
BASE = 0.3
#: Errors, failures, exceptions, tracebacks; a tool call with ``tool_status="failure"``.
ERROR_WEIGHT = 0.3
#: Decisions: "we decided", "let's go with", "switched to", "moved … to", ...
DECISION_WEIGHT = 0.25
#: Explicit preferences, rules and constraints: "I prefer", "always", "never", "must", ...
RULE_WEIGHT = 0.3
#: Each distinct kind of tag ("important", "decision", "error", "preference", "rule") ...
TAG_WEIGHT = 0.2
#: ... up to this much in total from tags.
TAG_CAP = 0.4

_WEIGHTS: dict[Signal, float] = {"error": ERROR_WEIGHT, "decision": DECISION_WEIGHT, "rule": RULE_WEIGHT}

_TAG_KINDS = {
    "important": "important",
    "critical": "important",
    "decision": "decision",
    "decisions": "decision",
    "error": "error",
    "errors": "error",
    "failure": "error",
    "preference": "preference",
    "preferences": "preference",
    "rule": "rule",
    "rules": "rule",
    "constraint": "rule",
    "constraints": "rule",
}

_FAILED_STATUSES = frozenset({"failure", "failed", "error"})

# Phrases that look like a signal but are not one; removed before matching.
_NOT_ERRORS = re.compile(r"\b(?:no|0|zero|without)\s+(?:errors?|failures?|exceptions?)\b")
_NOT_RULES = re.compile(r"\bnever\s+mind\b|\b(?:don't|do\s+not)\s+(?:worry|know|think|mind)\b")

_ERROR = re.compile(
    r"\berrors?\b|\bfail(?:s|ed|ing|ures?)?\b|\bexceptions?\b|\btraceback\b|\bstack\s*trace\b"
    r"|\bcrash(?:es|ed|ing)?\b|\bpanic(?:ked)?\b|\bsegfault\b|\btimed\s+out\b|\bbroken\b|\bbroke\b"
)
_DECISION = re.compile(
    r"\bdecided\b|\bdecision\b|\blet'?s\s+go\s+with\b|\blet\s+us\s+go\s+with\b"
    r"|\bwe(?:'ll|\s+will|\s+are\s+going\s+to)\s+(?:use|go\s+with|switch|move|adopt)\b|\bagreed\b"
    r"|\bfrom\s+now\s+on\b|\bgoing\s+forward\b|\bswitch(?:ed|ing)?\s+(?:over\s+)?to\b"
    r"|\bmov(?:e|ed|ing)\b.{0,80}?\bto\b|\bmigrat(?:e|ed|ing)\b.{0,80}?\bto\b|\bsettled\s+on\b"
    r"|\breplac(?:e|ed|ing)\b.{0,80}?\bwith\b|\bwe\s+chose\b"
)
_RULE = re.compile(
    r"\bprefer(?:s|red|ence)?\b|\bI(?:'d|\s+really|\s+do)?\s+(?:like|love|hate)\b|\balways\b|\bnever\b"
    r"|\bdon't\b|\bdo\s+not\b|\bmust(?:n't)?\b|\bremember\b|\brules?\b|\bpolic(?:y|ies)\b"
    r"|\bmy\s+default\b|\bby\s+default\b",
    re.IGNORECASE,
)


def _plain(text: str) -> str:
    """Lowercase with straight apostrophes, so typographic and typed "don't" match alike."""
    return text.replace("\u2019", "'").replace("\u2018", "'").lower()


def detect_signals(content: str, *, role: str = "user") -> frozenset[Signal]:
    """The kinds of signal ``content`` carries (tool output only ever carries errors)."""
    text = _plain(content)
    found: set[Signal] = set()
    if _ERROR.search(_NOT_ERRORS.sub(" ", text)):
        found.add("error")
    if role != "tool":
        if _DECISION.search(text):
            found.add("decision")
        if _RULE.search(_NOT_RULES.sub(" ", text)):
            found.add("rule")
    return frozenset(found)


def importance(content: str, *, role: str, tags: Sequence[str] = (), tool_status: str | None = None) -> float:
    """Importance in [0, 1], rounded to 2 decimals.

    ``BASE`` (0.3), plus ``ERROR_WEIGHT`` (0.3) for an error or ``tool_status ==
    "failure"``, ``DECISION_WEIGHT`` (0.25) for a decision, ``RULE_WEIGHT`` (0.3) for an
    explicit preference, rule or constraint, and ``TAG_WEIGHT`` (0.2) for each distinct
    kind of tag among important/decision/error/preference/rule (``TAG_CAP``, 0.4, at
    most from tags); capped at 1.0. Each signal counts once, however often it occurs.
    """
    signals = set(detect_signals(content, role=role))
    if tool_status is not None and tool_status.lower() in _FAILED_STATUSES:
        signals.add("error")
    score = BASE + sum(_WEIGHTS[s] for s in signals)
    kinds = {_TAG_KINDS[t] for t in (tag.strip().lower() for tag in tags) if t in _TAG_KINDS}
    score += min(TAG_CAP, TAG_WEIGHT * len(kinds))
    return round(min(1.0, score), 2)

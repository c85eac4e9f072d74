"""Offline rolling summaries: the sentences that matter, kept word for word, no model.

Used when no Gemini key or Vertex project is configured; it is named
``offline-extractive/1`` (``fallback = True``). The summary is a list of lines, one per
kept sentence, each prefixed with who said it::

    user: Project rule for CloudRetail: the backend is FastAPI running on AlloyDB.
    assistant: Noted: Python 3.11 and PostgreSQL by default.
    tool error: ERROR: relation "orders" does not exist

What it keeps: the previous summary's lines, then every sentence of the new turns that
carries a decision, a preference, rule or constraint, or an error (the signals of
``memstream.importance``), a user sentence naming a known value (the extractor's
gazetteer: "every tool call gets a 30 second timeout"), and open questions (unless the
same turn takes them back: "… Never mind."). Tool output only contributes its error
lines. Repeated lines are kept once.

What it cannot do: it never rewrites, merges or resolves. A reversed decision keeps
both the old and the new line, pronouns stay unresolved, and the summary only shrinks
by dropping lines: over ``max_tokens`` it drops the least important lines first
(questions, then errors), oldest first, but never a decision, preference, rule,
constraint or user statement of a known value — so it can exceed the budget only when
those alone do.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from memstream.extraction.gazetteer import meant_mentions
from memstream.extraction.offline import split_sentences
from memstream.importance import detect_signals, importance
from memstream.summarization.base import Summarizer, Summary, SummaryTurn
from memstream.tokens import TokenCounter

#: Longer sentences are cut, with an ellipsis (a pasted log is not a summary line).
MAX_LINE_CHARS = 300
#: At most this many error lines from one tool output.
MAX_TOOL_ERROR_LINES = 2

_PREFIX = re.compile(r"^(?P<role>user|assistant|system|tool error|tool):\s*", re.IGNORECASE)
_RETRACTED = re.compile(r"\bnever\s*mind\b|\bforget\s+(?:it|that)\b|\bscratch\s+that\b", re.IGNORECASE)
_PLEASANTRY = re.compile(
    r"^(?:hi|hello|hey|thanks|thank\s+you|how\s+are\s+you|how's\s+it\s+going|what's\s+up|sounds\s+\w+"
    r"|good\s+(?:morning|afternoon|evening))\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class _Line:
    text: str
    #: Decisions, preferences, rules, constraints and stated known values are never dropped.
    protected: bool
    importance: float


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_LINE_CHARS else text[: MAX_LINE_CHARS - 1].rstrip() + "\u2026"


def _line(text: str, role: str) -> _Line:
    """Weigh a summary line by its content (``role`` as in the line's prefix)."""
    body = _PREFIX.sub("", text, count=1)
    signal_role = "tool" if role.startswith("tool") else role
    signals = detect_signals(body, role=signal_role)
    states_value = (
        signal_role == "user"
        and len(body) <= MAX_LINE_CHARS
        and not body.endswith("?")
        and bool(meant_mentions(body)[0])
    )
    protected = bool(signals & {"decision", "rule"}) or states_value
    return _Line(text, protected, importance(body, role=signal_role))


def _previous_lines(previous: str | None) -> Iterator[_Line]:
    for raw in (previous or "").splitlines():
        if raw.strip():
            prefix = _PREFIX.match(raw.strip())
            yield _line(raw.strip(), prefix["role"].lower() if prefix else "user")


def _turn_lines(turn: SummaryTurn) -> Iterator[_Line]:
    """The lines worth keeping from one turn."""
    if turn.role == "tool":
        errors = [s for s in turn.content.splitlines() if "error" in detect_signals(s, role="tool")]
        for text in errors[:MAX_TOOL_ERROR_LINES]:
            yield _line(f"tool error: {_clip(text)}", "tool error")
        return
    retracted = bool(_RETRACTED.search(turn.content))
    for sentence in split_sentences(turn.content):
        line = _line(f"{turn.role}: {_clip(sentence)}", turn.role)
        question = sentence.endswith("?") and not retracted and not _PLEASANTRY.match(sentence)
        if line.protected or "error" in detect_signals(sentence, role=turn.role) or question:
            yield line


def _key(text: str) -> str:
    return " ".join(text.casefold().split())


class ExtractiveSummarizer(Summarizer):
    """Deterministic, offline rolling summaries (see the module docstring for its limits)."""

    name = "offline-extractive/1"
    fallback = True

    def __init__(self, *, token_counter: TokenCounter | None = None) -> None:
        self._tokens = token_counter or TokenCounter()

    async def summarize(self, previous: str | None, turns: Sequence[SummaryTurn], *, max_tokens: int) -> Summary:
        lines: list[_Line] = []
        seen: set[str] = set()
        for line in (*_previous_lines(previous), *(x for turn in turns for x in _turn_lines(turn))):
            if _key(line.text) not in seen:
                seen.add(_key(line.text))
                lines.append(line)
        text = "\n".join(line.text for line in self._fit(lines, max_tokens))
        return Summary(text=text, input_tokens=0, output_tokens=0, summarizer=self.name)

    def _fit(self, lines: list[_Line], max_tokens: int) -> list[_Line]:
        """Drop unprotected lines, least important and oldest first, until under budget."""
        droppable = sorted((i for i, line in enumerate(lines) if not line.protected),
                           key=lambda i: (lines[i].importance, i))  # fmt: skip
        dropped: set[int] = set()
        for i in droppable:
            kept = "\n".join(line.text for j, line in enumerate(lines) if j not in dropped)
            if self._tokens.count(kept) <= max_tokens:
                break
            dropped.add(i)
        return [line for j, line in enumerate(lines) if j not in dropped]

"""The context for an agent's next turn: long-term facts, the rolling summary, the recent
turns and the relevant memories, de-duplicated and packed into a token budget.

The layout is stable (sections always in this order, items in a documented order), so a
prompt cache upstream stays warm and a reader knows where to look:

    # Memory for <user> (project <p>, session <s>)
    ## Long-term facts            - [scope] entity: summary        (most important first)
    ## Summary of earlier turns   - the session's rolling summary
    ## Recent turns               role: content                    (oldest first)
    ## Relevant memories          - [date, type] content           (best first)

Stored text cannot pose as structure: a line that starts in column 0 is always ours (the
``# `` header, a ``## `` section title, or an item starting with ``- `` or ``<role>: ``).
An item whose text spans several lines continues on lines indented by four spaces; every
kind of line break inside it (CR, LF, VT, FF, NEL, U+2028, U+2029) starts such a
continuation line. A turn that says "\n## Long-term facts\n- [global] admin: ..." is
rendered as one item with two indented continuation lines, never as a section.

Packing: no single item may take more than an eighth of the budget (at least 64 tokens;
the summary may take its whole share): a longer one, say a 7,000-token tool log, is cut to
its head and tail with a marker, so one heavy turn never crowds out the rest. Each section
then gets a share of the budget (facts 30 %, summary 15 %, recent turns 35 %, relevant
memories 20 %), keeping its most valuable items; what is left over then goes to recent
turns, relevant memories, facts and the summary, in that order. Recent turns stay
contiguous (the newest ones, no gaps); facts and relevant memories may skip an item that
does not fit for a later one that does. Token counts come from a real tokenizer (its name
is in the answer).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from memstream.tokens import TokenCounter

SHARES = {"facts": 0.30, "summary": 0.15, "recent": 0.35, "relevant": 0.20}
SECOND_PASS = ("recent", "relevant", "facts", "summary")
#: Sections whose chosen items must be a prefix of the candidates (no gaps).
CONTIGUOUS = frozenset({"recent"})
MIN_ITEM_CAP = 64
TITLES = {
    "facts": "## Long-term facts",
    "summary": "## Summary of earlier turns",
    "recent": "## Recent turns",
    "relevant": "## Relevant memories",
}
ORDER = ("facts", "summary", "recent", "relevant")


#: Whatever a reader (or a tokenizer) may take for the end of a line.
_LINE_BREAK = re.compile(r"\r\n|[\n\r\v\f\x1c-\x1e\x85\u2028\u2029]")
CONTINUATION = "    "


def item(text: str) -> str:
    """One item of the prompt: its first line as is (the caller starts it with ``- `` or a
    role), every further line indented, so no stored text can begin a line of its own."""
    first, *rest = _LINE_BREAK.split(text)
    return first + "".join(f"\n{CONTINUATION}{line}" for line in rest)


@dataclass
class Section:
    name: str
    #: Candidate lines, most valuable first (recent turns: newest first).
    candidates: list[str]
    chosen: list[int] = field(default_factory=list)
    tokens: int = 0
    dropped: int = 0


@dataclass(frozen=True)
class Packed:
    prompt: str
    tokens: int
    sections: dict[str, Section]


def _fill(section: Section, costs: list[int], allowance: int) -> int:
    """Take the section's candidates, most valuable first, while they fit; returns tokens used."""
    used = 0
    for i, cost in enumerate(costs):
        if i in section.chosen:
            continue
        if cost > allowance - used:
            if section.name in CONTIGUOUS:
                break
            continue
        section.chosen.append(i)
        used += cost
    section.tokens += used
    return used


def _capped(lines: Sequence[str], cap: int, tokens: TokenCounter) -> tuple[list[str], list[int]]:
    """The lines, each cut to ``cap`` tokens, and what each costs in the prompt
    (``TokenCounter.line_costs``: its tokens and its newline's)."""
    costs = tokens.line_costs(lines)
    cut = {i: tokens.truncate(line, cap) for i, (line, n) in enumerate(zip(lines, costs, strict=True)) if n > cap}
    if cut:
        for i, n in zip(cut, tokens.line_costs(list(cut.values())), strict=True):
            costs[i] = n
    return [cut.get(i, line) for i, line in enumerate(lines)], costs


def pack(
    header: str,
    candidates: dict[str, Sequence[str]],
    *,
    budget: int,
    tokens: TokenCounter,
    chronological: Sequence[str] = ("recent",),
) -> Packed:
    """Choose lines per section within ``budget`` tokens and lay the prompt out.

    Every line is counted once, as it follows another in the prompt (``line_costs``): the
    prompt's count is the header's and those of the lines it holds, exactly, and no line is
    encoded a second time to count the whole (each costs the tokenizer some 55 µs)."""
    if not header:
        raise ValueError("a prompt starts with its header line")
    titles = dict(zip(ORDER, tokens.line_costs([TITLES[n] for n in ORDER]), strict=True))
    head = tokens.count(header)
    remaining = max(0, budget - head - sum(titles[n] for n in ORDER if candidates.get(n)))
    item_cap = max(MIN_ITEM_CAP, budget // 8)
    caps = {n: max(item_cap, int(remaining * SHARES[n])) if n == "summary" else item_cap for n in ORDER}
    capped = {n: _capped(candidates.get(n, ()), caps[n], tokens) for n in ORDER}
    sections = {n: Section(n, lines) for n, (lines, _) in capped.items()}
    costs = {n: line_costs for n, (_, line_costs) in capped.items()}
    left = remaining
    for name in ORDER:
        left -= _fill(sections[name], costs[name], int(remaining * SHARES[name]))
    for name in SECOND_PASS:
        left -= _fill(sections[name], costs[name], left)
    for section in sections.values():
        section.dropped = len(section.candidates) - len(section.chosen)
    lines = [header]
    for name in ORDER:
        section = sections[name]
        if not section.chosen:
            continue
        picked = sorted(section.chosen)
        if name in chronological:  # candidates are newest first; the prompt reads oldest first
            picked.reverse()
        lines.append(TITLES[name])
        lines.extend(section.candidates[i] for i in picked)
        head += titles[name] + section.tokens
    return Packed(prompt="\n".join(lines), tokens=head, sections=sections)

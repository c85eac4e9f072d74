"""The context for an agent's next turn: long-term facts, the rolling summary, the recent
turns and the relevant memories, de-duplicated and packed into a token budget.

The layout is stable (sections always in this order, items in a documented order), so a
prompt cache upstream stays warm and a reader knows where to look:

    # Memory for <user> (project <p>, session <s>)
    ## Long-term facts            - [scope] entity: summary        (most important first)
    ## Summary of earlier turns   the session's rolling summary
    ## Recent turns               role: content                    (oldest first)
    ## Relevant memories          - [date, type] content           (best first)

Packing: each section first gets a share of the budget (facts 30 %, summary 15 %, recent
turns 35 %, relevant memories 20 %), keeping its most valuable items; what is left over then
goes to recent turns, relevant memories, facts and the summary, in that order. Token counts
come from a real tokenizer (its name is in the answer).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from memstream.tokens import TokenCounter

SHARES = {"facts": 0.30, "summary": 0.15, "recent": 0.35, "relevant": 0.20}
SECOND_PASS = ("recent", "relevant", "facts", "summary")
TITLES = {
    "facts": "## Long-term facts",
    "summary": "## Summary of earlier turns",
    "recent": "## Recent turns",
    "relevant": "## Relevant memories",
}
ORDER = ("facts", "summary", "recent", "relevant")


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
    """Take the section's next candidates while they fit; returns tokens used."""
    used = 0
    for i, cost in enumerate(costs):
        if i in section.chosen:
            continue
        if cost > allowance - used:
            break  # keep the value order: no skipping ahead to smaller, less valuable items
        section.chosen.append(i)
        used += cost
    section.tokens += used
    return used


def pack(
    header: str,
    candidates: dict[str, Sequence[str]],
    *,
    budget: int,
    tokens: TokenCounter,
    chronological: Sequence[str] = ("recent",),
) -> Packed:
    """Choose lines per section within ``budget`` tokens and lay the prompt out."""
    sections = {name: Section(name, list(candidates.get(name, ()))) for name in ORDER}
    fixed = tokens.count(header) + sum(tokens.count(TITLES[n]) + 1 for n in ORDER if sections[n].candidates)
    remaining = max(0, budget - fixed)
    costs = {n: [c + 1 for c in tokens.count_many(s.candidates)] for n, s in sections.items()}
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
    prompt = "\n".join(lines)
    return Packed(prompt=prompt, tokens=tokens.count(prompt), sections=sections)

"""Known values (the gazetteer) and which of them a sentence means.

The offline extractor only understands values it knows: themes, editors, languages,
databases, caches, backend and test frameworks, deployment tools, cloud region ids and
"<N> s" timeouts, each mapped to a canonical entity ("editor", "database", "deployment
region", "tool timeout", ...) and a canonical lowercase value ("vs code", "postgresql",
"python 3.11", "30 s"). A value outside this list is invisible to it, and that is the
first limit of the offline fallback. Go, Express and Spring are also English words, so
they are only recognised with a capital and some context ("in Go", "Spring Boot").

A sentence can name a value it refuses ("I like VS Code, not Vim", "rsync, not scp") or
replaces ("from FastAPI to Litestar"); ``meant_mentions`` tells them apart by the words
right before each value. The patterns are ours, bounded and free of nested quantifiers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Mention:
    """A known value found in a sentence: ``value`` is canonical and lowercase."""

    entity: str
    value: str
    start: int
    end: int


def _bounded(pattern: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![\w-])(?:{pattern})(?![\w-])")


def _after(words: str) -> str:
    """Fixed-width lookbehinds: the next word must follow one of ``words``."""
    return "(?:" + "|".join(rf"(?<=\b{w} )" for w in words.split()) + ")"


_INTRO = _after("in with use using on write writing prefer like love")
_GO = rf"(?i:golang)|Go(?=\s+1\.\d)|{_INTRO}Go(?!\s+(?:with|ahead|to|for|back|on)\b)"
_EXPRESS = rf"(?i:express\.?js)|{_INTRO}Express|Express(?=\s+(?:app|server|backend|API)\b)"
_SPRING = rf"Spring\s+Boot|{_INTRO}Spring|Spring(?=\s+(?:MVC|WebFlux|app|backend)\b)"
#: (entity, canonical value, pattern); ``(?i:...)`` marks the case-insensitive ones. Go,
#: Express and Spring are also English words, so they need a capital and some context.
_TERMS: tuple[tuple[str, str, re.Pattern[str]], ...] = tuple(
    (entity, value, _bounded(pattern))
    for entity, value, pattern in (
        ("theme", "dark mode", r"(?i:dark\s+(?:mode|theme))"),
        ("theme", "light mode", r"(?i:light\s+(?:mode|theme))"),
        ("editor", "vs code", r"(?i:vs\s*code|visual\s+studio\s+code)"),
        ("editor", "neovim", r"(?i:neovim|nvim)"),
        ("editor", "vim", r"(?i:vim)"),
        ("editor", "emacs", r"(?i:emacs)"),
        ("editor", "intellij", r"(?i:intellij(?:\s+idea)?)"),
        ("editor", "pycharm", r"(?i:pycharm)"),
        ("language", "typescript", r"(?i:typescript)"),
        ("language", "javascript", r"(?i:javascript)"),
        ("language", "java", r"(?i:java)"),
        ("language", "rust", r"(?i:rust)"),
        ("language", "go", _GO),
        ("database", "postgresql", r"(?i:postgres(?:ql)?)"),
        ("database", "mysql", r"(?i:mysql)"),
        ("database", "alloydb", r"(?i:alloydb)"),
        ("database", "sqlite", r"(?i:sqlite3?)"),
        ("database", "mongodb", r"(?i:mongo(?:db)?)"),
        ("cache", "valkey", r"(?i:valkey)"),
        ("cache", "redis", r"(?i:redis)"),
        ("cache", "memcached", r"(?i:memcached?)"),
        ("backend framework", "fastapi", r"(?i:fastapi)"),
        ("backend framework", "litestar", r"(?i:litestar)"),
        ("backend framework", "django", r"(?i:django)"),
        ("backend framework", "flask", r"(?i:flask)"),
        ("backend framework", "express", _EXPRESS),
        ("backend framework", "spring", _SPRING),
        ("test framework", "pytest", r"(?i:pytest)"),
        ("test framework", "unittest", r"(?i:unittest)"),
        ("deployment tool", "rsync", r"(?i:rsync)"),
        ("deployment tool", "scp", r"(?i:scp)"),
        ("deployment tool", "kubectl", r"(?i:kubectl)"),
        ("deployment tool", "helm", r"(?i:helm)"),
        ("deployment tool", "terraform", r"(?i:terraform)"),
    )
)  # fmt: skip

_PYTHON = _bounded(r"(?i:python)\s*(?P<version>[23](?:\.\d{1,2})?)?")
_DIRECTIONS = "north|south|east|west|central|northeast|southeast|northwest|southwest"
_REGION = _bounded(
    rf"(?i:(?:asia|europe|us|northamerica|southamerica|australia|me|africa)-(?:{_DIRECTIONS})\d{{1,2}}"
    rf"|(?:us|eu|ap|ca|sa|me|af|il|mx)-(?:{_DIRECTIONS})-\d)"
)
_UNIT = r"milliseconds?|ms|minutes?|mins?|seconds?|secs?|s"
_TIMEOUT = re.compile(
    rf"(?i)(?<![\w.])(?P<n>\d{{1,5}})\s*-?\s*(?P<unit>{_UNIT})(?:\s+(?P<kind>[a-z]+(?:\s+call)?))?\s*-?\s*time-?outs?\b"
    rf"|\btime-?outs?\s+(?:(?:of|is|=|:|to|at)\s*)?(?P<n2>\d{{1,5}})\s*(?P<unit2>{_UNIT})\b"
)
_TOOL_TIMEOUT_KINDS = frozenset({"tool", "tool call", "call", "command"})


def _timeout(m: re.Match[str]) -> Mention:
    """Tool timeout "30 s" from "30 second timeout", "30 s tool timeouts", "timeout of 30s"."""
    number, unit = (m["n"], m["unit"]) if m["n"] else (m["n2"], m["unit2"])
    unit = unit.lower()
    short = "ms" if unit == "ms" or unit.startswith("milli") else "min" if unit.startswith("min") else "s"
    kind = (m["kind"] or "tool").lower()
    entity = "tool timeout" if kind in _TOOL_TIMEOUT_KINDS else f"{kind} timeout"
    return Mention(entity, f"{number} {short}", m.start(), m.end())


def find_mentions(sentence: str) -> list[Mention]:
    """Known values in ``sentence``, in order, overlapping ones resolved to the longest."""
    found = [Mention(e, v, m.start(), m.end()) for e, v, p in _TERMS for m in p.finditer(sentence)]
    for m in _PYTHON.finditer(sentence):
        value = f"python {m['version']}" if m["version"] else "python"
        found.append(Mention("language", value, m.start(), m.end()))
    for m in _REGION.finditer(sentence):
        found.append(Mention("deployment region", m[0].lower(), m.start(), m.end()))
    found += [_timeout(m) for m in _TIMEOUT.finditer(sentence)]
    kept: list[Mention] = []
    for mention in sorted(found, key=lambda x: (x.start, x.start - x.end)):
        if not kept or mention.start >= kept[-1].end:
            kept.append(mention)
    return kept


_FILLERS = (
    r"use|used|using|to|the|a|an|any|with|in|on|for|deploy|deploying|run|running|introduce|add|write|"
    r"writing|touch|choose|pick|like|love|want|need|install|go\s+with"
)
#: "not Vim", "never use MongoDB", "don't want Redis", "rather than scp", "better than Vim".
_HARD_NEGATION = re.compile(
    rf"(?:\bnot|\bnever|\bno|n't|\bwithout|\binstead\s+of|\brather\s+than|\bthan|\bavoid(?:ing)?"
    rf"|\bstop(?:ped)?\s+using|\bexcept)\s+(?:(?:{_FILLERS})\s+){{0,3}}$|\bover\s+$",
    re.IGNORECASE,
)
#: "from FastAPI (to Litestar)", "replaced Redis (with Valkey)": the old value of a change.
_SOFT_NEGATION = re.compile(
    r"(?:\bfrom|\breplac(?:e|ed|ing)|\bdrop(?:ped)?|\bditch(?:ed)?|\bremov(?:e|ed|ing))\s+(?:the\s+)?$",
    re.IGNORECASE,
)
#: Negations are read in the words right before a value, no further back than this.
_NEGATION_REACH = 80
_OR = re.compile(r"^\s*,?\s*(?:or|nor)\s+$", re.IGNORECASE)


def _plain(text: str) -> str:
    """Straight apostrophes, so typographic and typed "don't" match alike."""
    return text.replace("\u2019", "'").replace("\u2018", "'")


def _negations(sentence: str, mentions: list[Mention]) -> list[str]:
    """Per mention: "hard" (refused), "soft" (an old value) or "". "not Vim or Emacs" refuses both."""
    text = _plain(sentence)
    out: list[str] = []
    for i, m in enumerate(mentions):
        before = text[max(0, m.start - _NEGATION_REACH) : m.start]
        if _HARD_NEGATION.search(before) or (
            i and out[i - 1] == "hard" and _OR.match(text[mentions[i - 1].end : m.start])
        ):
            out.append("hard")
        else:
            out.append("soft" if _SOFT_NEGATION.search(before) else "")
    return out


def meant_mentions(sentence: str) -> tuple[list[Mention], list[Mention]]:
    """The values ``sentence`` means, one per entity, in sentence order (the first plain
    mention, else one only replaced: "data comes from Postgres"), and the values it only
    refuses ("never use MongoDB"), for entities with no meant value."""
    mentions = find_mentions(sentence)
    negations = _negations(sentence, mentions)
    meant: dict[str, Mention] = {}
    for kind in ("", "soft"):
        for m, neg in zip(mentions, negations, strict=True):
            if neg == kind and m.entity not in meant:
                meant[m.entity] = m
    refused: list[Mention] = []
    for m, neg in zip(mentions, negations, strict=True):
        if neg == "hard" and m.entity not in meant and m.value not in {r.value for r in refused}:
            refused.append(m)
    return sorted(meant.values(), key=lambda m: m.start), refused

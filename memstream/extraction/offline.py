"""The offline fact extractor: sentence rules over a small gazetteer, no model.

Used when no Gemini key or Vertex project is configured, so the pipeline stays whole;
it is named ``offline-rules/1`` (``fallback = True``) in logs, /readyz/workers and every fact.

What it can do: find *known values* — themes, editors, languages, databases, caches,
backend and test frameworks, deployment tools, cloud regions, "<N> s timeouts" — in
user sentences and in assistant confirmations ("Understood: …", "I'll keep …"), map
each to a canonical entity ("editor", "database", "deployment region", ...), keep the
value that is meant rather than the one refused ("I like VS Code, not Vim" → editor VS
Code; "we moved CloudRetail from FastAPI to Litestar" → backend framework Litestar),
sort facts into preference / rule / constraint / decision / entity, scope them
global / project / session, and read simple relations ("the backend is FastAPI running
on AlloyDB" → cloudretail uses fastapi, fastapi runs_on alloydb).

What it cannot do: anything outside the gazetteer ("our blog framework is Astro" yields
nothing), coreference across sentences ("Use Redis. Actually, make that Valkey."),
hypotheticals and sarcasm (questions and sentences opening with "if"/"maybe" are
skipped, the rest is taken at its word), other languages, and facts about people. It
prefers saying nothing to guessing: small talk, tool output and system turns yield no
facts, and an assistant turn only counts when it confirms something the user did not
already say in the recent turns.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import pairwise

from memstream.extraction.base import Extractor
from memstream.extraction.gazetteer import Mention, meant_mentions
from memstream.extraction.timewords import rewrite_relative_time
from memstream.extraction.types import (
    Category,
    ExtractedFact,
    ExtractionContext,
    ExtractionTurn,
    Scope,
    Triple,
    normalise_entity,
)
from memstream.importance import detect_signals, importance

#: Facts that tell the agent how to behave weigh at least this much.
MIN_DIRECTIVE_IMPORTANCE = 0.6
#: Longer "sentences" are pasted logs or code, not statements.
MAX_SENTENCE_CHARS = 400
#: How many preceding turns an assistant confirmation is compared with.
RECENT_TURNS = 6

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")


def split_sentences(text: str) -> list[str]:
    """Sentences (and lines) of ``text``, stripped, empty ones dropped."""
    return [s.strip() for s in _SENTENCE_END.split(text) if s.strip()]


def _plain(text: str) -> str:
    """Straight apostrophes, so typographic and typed "don't" match alike."""
    return text.replace("\u2019", "'").replace("\u2018", "'")


# --- what kind of statement -----------------------------------------------------------------

_FIRST_PERSON = re.compile(
    r"\bI(?:'d|'m|\s+am|\s+do|\s+really|\s+usually|\s+mostly|\s+generally|\s+still)*\s+"
    r"(?:prefer|like|love|use|using|always|write|rather|work\s+(?:in|with))\b"
    r"|\bmy\s+(?:default|preferred|favou?rite|go-to)\b|\bby\s+default\b",
    re.IGNORECASE,
)
_CONSTRAINT = re.compile(
    r"\bnever\b|\bdon't\b|\bdo\s+not\b|\bdoes\s*n[o']t\b|\bmust\s*n[o']t\b|\bcannot\b|\bcan't\b|\bshould\s*n[o']t\b"
    r"|\bnot\b|\bno\b|\bwithout\b|\bavoid\b|\binstead\s+of\b|\brather\s+than\b",
    re.IGNORECASE,
)
_IDIOMS = re.compile(r"\bnever\s+mind\b|\b(?:don't|do\s+not)\s+(?:worry|know|think|mind)\b", re.IGNORECASE)
_RULE = re.compile(
    r"\brules?\b|\bpolic(?:y|ies)\b|\bmust\b|\bonly\b|\balways\b|\bevery\b.{0,60}?\bgets?\b"
    r"|\brequired?\b|\bmandatory\b|\bshould\b|\bremember\b",
    re.IGNORECASE,
)
_IMPERATIVE = re.compile(
    r"^(?:(?:please|also|and|just|always|so|ok(?:ay)?|for\s+now|for\s+this\s+session|today)[\s,]+"
    r"|(?:remember|make\s+sure)\s+to\s+)*"
    r"(?:use|deploy|run|write|stick|go|switch|keep|pick|choose|install|set|test|store|cache|put)\b",
    re.IGNORECASE,
)
_PROJECT_WORDS = re.compile(
    r"\bproject\s+rules?\b|\b(?:this|the)\s+project\b|\b(?:the|our)\s+(?:backend|frontend|api|service|app"
    r"|stack|deployment|database|cache)\b|^it\b",
    re.IGNORECASE,
)
_SESSION_ONLY = re.compile(
    r"\bthis\s+session\b|\bfor\s+now\b|\btoday\s+only\b|\bjust\s+(?:for\s+)?today\b|\bfor\s+today\b"
    r"|\btemporarily\b",
    re.IGNORECASE,
)
_HEDGE = re.compile(r"^(?:if|maybe|perhaps|what\s+if|suppose|imagine|hypothetically)\b", re.IGNORECASE)
_CODE = re.compile(r"^(?:\$|>>>|```|Traceback\b)|\bFile \"")
#: Assistant turns count only when they confirm: "Understood: ...", "Noted.", "I'll keep ...".
_CONFIRMATION = re.compile(
    r"^(?:understood|noted|got\s+it|will\s+do|confirmed|agreed)\b[\s:,.!-]*(?:noted\b[\s:,.!-]*)?",
    re.IGNORECASE,
)
_COMMITMENT = re.compile(
    r"\bI(?:'ll|\s+will)\s+(?:keep|use|remember|stick|go\s+with|follow|make\s+sure|always|never)\b",
    re.IGNORECASE,
)


def _category(sentence: str, *, project_turn: bool, project_context: bool, confirmed: bool) -> Category | None:
    """The kind of fact a sentence states, or None when it states none worth keeping."""
    text = _IDIOMS.sub(" ", _plain(sentence))
    if "decision" in detect_signals(text):
        return "decision"
    if _FIRST_PERSON.search(text):
        return "preference"
    if _CONSTRAINT.search(text):
        return "constraint"
    if _RULE.search(text) or project_context:
        return "rule"
    if _IMPERATIVE.search(text):
        return "rule" if project_turn else "preference"
    return "decision" if confirmed else None


# --- relations ------------------------------------------------------------------------------

_LINK = r"^\s*,?\s*(?:which\s+|that\s+)?(?:is\s+|are\s+)?"
#: Between two known values: "FastAPI running on AlloyDB", "FastAPI on AlloyDB".
_COMPONENT_RELATIONS = (
    (re.compile(_LINK + r"(?:(?:running|runs|run|hosted|sits|built)\s+)?on(?:\s+top\s+of)?\s+(?:the\s+)?$"),
     "runs_on"),
    (re.compile(_LINK + r"(?:depends|depend|relies|rely)\s+on\s+(?:the\s+)?$"), "depends_on"),
    (re.compile(_LINK + r"(?:uses|using|talks\s+to|connects\s+to)\s+(?:the\s+)?$"), "uses"),
)  # fmt: skip
#: Before a value the project uses: "... runs on AlloyDB", "... is deployed only to the ...".
_PROJECT_RELATIONS = (
    (re.compile(r"\b(?:running|runs|run|hosted|sits)\s+on(?:\s+top\s+of)?\s+(?:the\s+)?$", re.I), "runs_on"),
    (re.compile(r"\b(?:depends|depend|relies|rely)\s+on\s+(?:the\s+)?$", re.I), "depends_on"),
    (re.compile(r"\bdeploy(?:ed|s|ing)?\s+(?:only\s+)?(?:to|on|in)\s+(?:the\s+)?$", re.I), "deployed_to"),
)
#: Personal settings and limits are facts, not parts of a project's graph.
_NOT_IN_GRAPH = ("theme", "editor")


def _triples(sentence: str, meant: list[Mention], project: str | None) -> list[Triple]:
    """Relations between consecutive meant values, and from the project to the rest."""
    triples: list[Triple] = []
    attached: set[int] = set()
    for a, b in pairwise(meant):
        between = sentence[a.end : b.start]
        for pattern, predicate in _COMPONENT_RELATIONS:
            if pattern.match(between):
                triples.append(Triple(normalise_entity(a.value), predicate, normalise_entity(b.value)))
                attached.add(b.start)
                break
    if project is None:
        return triples
    subject = normalise_entity(project)
    for m in meant:
        if m.start in attached or m.entity in _NOT_IN_GRAPH or m.entity.endswith("timeout"):
            continue
        before = sentence[max(0, m.start - 60) : m.start]
        predicate = "deployed_to" if m.entity == "deployment region" else "uses"
        predicate = next((p for pattern, p in _PROJECT_RELATIONS if pattern.search(before)), predicate)
        triples.append(Triple(subject, predicate, normalise_entity(m.value)))
    return triples


# --- the extractor ---------------------------------------------------------------------------


def _project_pattern(project_id: str) -> re.Pattern[str]:
    """A pattern for the project's name: "CloudRetail" also matches "Cloud Retail" and "cloud-retail"."""
    parts = re.findall(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+", project_id)
    body = r"[\s_-]?".join(re.escape(p) for p in parts) if parts else re.escape(project_id)
    return re.compile(rf"(?<![\w-])(?:{body}|{re.escape(project_id)})(?![\w-])", re.IGNORECASE)


def _said_by_user(recent: Iterable[ExtractionTurn]) -> frozenset[tuple[str, str]]:
    """(entity, value) pairs the user stated in the recent turns: an assistant repeating
    them adds nothing, and its shorter wording must not replace the user's."""
    said: set[tuple[str, str]] = set()
    for turn in list(recent)[-RECENT_TURNS:]:
        if turn.role == "user":
            for sentence in split_sentences(turn.content):
                if len(sentence) <= MAX_SENTENCE_CHARS:
                    said |= {(m.entity, m.value) for m in meant_mentions(sentence)[0]}
    return frozenset(said)


@dataclass(frozen=True)
class _Turn:
    """What every sentence of one turn shares."""

    turn: ExtractionTurn
    context: ExtractionContext
    project_re: re.Pattern[str] | None
    confirmed: bool
    already_said: frozenset[tuple[str, str]]


class RuleExtractor(Extractor):
    """Deterministic, offline fact extraction (see the module docstring for its limits)."""

    name = "offline-rules/1"
    fallback = True

    async def extract(self, turn: ExtractionTurn, context: ExtractionContext) -> list[ExtractedFact]:
        if turn.role not in ("user", "assistant"):
            return []
        assistant = turn.role == "assistant"
        shared = _Turn(
            turn=turn,
            context=context,
            project_re=_project_pattern(turn.project_id) if turn.project_id else None,
            confirmed=assistant and bool(_CONFIRMATION.match(turn.content.strip())),
            already_said=_said_by_user(context.recent) if assistant else frozenset(),
        )
        facts: list[ExtractedFact] = []
        for sentence in split_sentences(turn.content):
            facts.extend(_sentence_facts(sentence, shared))
        return facts


def _skipped(sentence: str) -> bool:
    """Questions, hypotheticals, pasted code and logs state nothing."""
    return (
        len(sentence) > MAX_SENTENCE_CHARS
        or sentence.rstrip().endswith("?")
        or bool(_HEDGE.match(sentence))
        or bool(_CODE.search(sentence))
    )


def _sentence_facts(sentence: str, t: _Turn) -> list[ExtractedFact]:
    turn, project = t.turn, t.turn.project_id
    assistant = turn.role == "assistant"
    confirmed = assistant and (t.confirmed or bool(_COMMITMENT.search(_plain(sentence))))
    if _skipped(sentence) or (assistant and not confirmed):
        return []
    meant, refused = meant_mentions(sentence)
    meant = [m for m in meant if (m.entity, m.value) not in t.already_said]
    refused = [m for m in refused if all(v != m.value for _, v in t.already_said)]
    if not meant and not refused:
        return []
    named = bool(t.project_re and t.project_re.search(sentence))
    project_context = project is not None and (named or bool(_PROJECT_WORDS.search(sentence)))
    category = _category(
        sentence, project_turn=project is not None, project_context=project_context, confirmed=confirmed
    )
    scope: Scope = "global"
    if _SESSION_ONLY.search(sentence):
        scope = "session"
    elif project is not None and (project_context or category in ("rule", "constraint", "decision")):
        scope = "project"
    triples = [] if scope == "session" else _triples(sentence, meant, project if scope == "project" else None)
    if category is None and not triples:
        return []
    summary = _summary(sentence, t, scope=scope, named=named)
    weight = importance(sentence, role=turn.role)
    project_id = project if scope == "project" else None
    if category is None:
        # A bare relation ("FastAPI runs on AlloyDB"): a fact about its subject, so that it
        # cannot replace the user's stated database.
        subjects = dict.fromkeys(tr.subject for tr in triples)
        return [
            ExtractedFact(
                s, "entity", scope, project_id, summary, weight, tuple(tr for tr in triples if tr.subject == s)
            )
            for s in subjects
        ]
    weight = max(weight, MIN_DIRECTIVE_IMPORTANCE)

    def fact(entity: str, m: Mention, kind: Category) -> ExtractedFact:
        own = tuple(tr for tr in triples if tr.object == normalise_entity(m.value))
        return ExtractedFact(entity, kind, scope, project_id, summary, weight, own)

    facts = [fact(m.entity, m, category) for m in meant]
    facts += [fact(normalise_entity(m.value), m, "constraint") for m in refused]
    return facts


def _summary(sentence: str, t: _Turn, *, scope: Scope, named: bool) -> str:
    """The sentence, self-contained: no confirmation preamble, explicit times, the project
    named when the fact is the project's, one final period."""
    text = sentence
    if t.turn.role == "assistant":
        text = _CONFIRMATION.sub("", text, count=1) or text
    text = rewrite_relative_time(
        text,
        session_id=t.context.session_id,
        previous_session_id=t.context.previous_session_id,
        now=t.context.now,
    )
    text = text.strip().rstrip(" .!;:,\u2014-").strip()
    if text[:1].islower():
        text = text[0].upper() + text[1:]
    if scope == "project" and not named and t.turn.project_id:
        text = f"{t.turn.project_id}: {text}"
    return f"{text}."

import uuid
from datetime import UTC, datetime

import pytest

from memstream.extraction.gazetteer import find_mentions, meant_mentions
from memstream.extraction.offline import RuleExtractor, split_sentences
from memstream.extraction.types import ExtractedFact, ExtractionContext, ExtractionTurn, Triple
from ops.demo import PROJECT, SESSION_1

NOW = datetime(2026, 11, 29, 10, 30, tzinfo=UTC)
extractor = RuleExtractor()


def turn(content: str, *, role: str = "user", project: str | None = None) -> ExtractionTurn:
    return ExtractionTurn(uuid.uuid4(), role, content, NOW, "s-42", project)


def context(project: str | None = None, recent: tuple[ExtractionTurn, ...] = ()) -> ExtractionContext:
    return ExtractionContext("acme", "alice", "coder", "s-42", project, NOW, "s-41", recent)


async def extract(
    content: str, *, role: str = "user", project: str | None = None, recent: tuple[ExtractionTurn, ...] = ()
) -> list[ExtractedFact]:
    return await extractor.extract(turn(content, role=role, project=project), context(project, recent))


def brief(facts: list[ExtractedFact]) -> list[tuple[str, str, str, str | None]]:
    return [(f.entity, f.category, f.scope, f.project_id) for f in facts]


def test_it_names_itself_a_fallback() -> None:
    assert extractor.name == "offline-rules/1"
    assert extractor.fallback is True


async def test_the_seed_scenario_session_1() -> None:
    """memstream demo's session 1, turn by turn, with the preceding turns as context."""
    expected: list[list[tuple[str, str, str, str | None]]] = [
        [("theme", "preference", "global", None)],
        [],  # "Got it, dark mode everywhere." repeats the user
        [("language", "preference", "global", None), ("database", "preference", "global", None)],
        [],  # "Noted: Python 3.11 and PostgreSQL by default." repeats the user
        [],  # the weather
        [],  # "Sounds nice!"
        [("backend framework", "rule", "project", PROJECT), ("database", "rule", "project", PROJECT)],
        [],  # "Understood: ..." repeats the user
        [("cache", "constraint", "project", PROJECT)],
        [],  # kubectl output
        [("tool timeout", "rule", "project", PROJECT)],
        [("deployment region", "rule", "project", PROJECT)],
        [],  # "I'll keep 30 s tool timeouts ..." repeats the user
        [],  # the standing desk
        [],
    ]
    seen: list[ExtractionTurn] = []
    got = []
    for role, content, project in SESSION_1:
        current = turn(content, role=role, project=project)
        got.append(brief(await extractor.extract(current, context(project, tuple(seen)))))
        seen.append(current)
    assert got == expected


async def test_seed_global_preferences_carry_their_values() -> None:
    facts = await extract("I always write Python 3.11 and my default database is PostgreSQL.")
    assert [f.summary for f in facts] == ["I always write Python 3.11 and my default database is PostgreSQL."] * 2
    assert all(f.importance >= 0.6 for f in facts)
    assert [f.triples for f in facts] == [(), ()]  # user preferences are not a project's graph


async def test_seed_project_rule_reads_the_relations() -> None:
    facts = await extract("Project rule for CloudRetail: the backend is FastAPI running on AlloyDB.", project=PROJECT)
    by_entity = {f.entity: f for f in facts}
    assert by_entity["backend framework"].triples == (Triple("cloudretail", "uses", "fastapi"),)
    assert by_entity["database"].triples == (Triple("fastapi", "runs_on", "alloydb"),)
    assert by_entity["database"].summary == "Project rule for CloudRetail: the backend is FastAPI running on AlloyDB."


@pytest.mark.parametrize(
    ("content", "entity", "triple"),
    [
        ("CloudRetail caches everything in Valkey; do not introduce another cache.", "cache",
         Triple("cloudretail", "uses", "valkey")),
        ("CloudRetail is deployed only to the asia-southeast1 region.", "deployment region",
         Triple("cloudretail", "deployed_to", "asia-southeast1")),
        ("The backend depends on Redis, always.", "cache", Triple("cloudretail", "depends_on", "redis")),
    ],
)  # fmt: skip
async def test_project_relations(content: str, entity: str, triple: Triple) -> None:
    (fact,) = await extract(content, project=PROJECT)
    assert (fact.entity, fact.scope, fact.project_id, fact.triples) == (entity, "project", PROJECT, (triple,))


async def test_a_contradiction_keeps_the_new_value() -> None:
    (fact,) = await extract("we moved CloudRetail from FastAPI to Litestar", project=PROJECT)
    assert brief([fact]) == [("backend framework", "decision", "project", PROJECT)]
    assert fact.summary == "We moved CloudRetail from FastAPI to Litestar."
    assert fact.triples == (Triple("cloudretail", "uses", "litestar"),)
    assert fact.importance >= 0.6


async def test_vs_code_not_vim() -> None:
    (fact,) = await extract("I like VS Code, not Vim")
    assert brief([fact]) == [("editor", "preference", "global", None)]
    assert fact.summary == "I like VS Code, not Vim."
    assert meant_mentions("I like VS Code, not Vim")[0][0].value == "vs code"


@pytest.mark.parametrize(
    ("content", "project", "expected"),
    [
        ("deploy with rsync, not scp", None, ("deployment tool", "constraint", "global", None)),
        ("Deploy my blog for me \u2014 remember to use rsync, not scp", None,
         ("deployment tool", "constraint", "global", None)),
        ("Deploy with rsync, not scp.", PROJECT, ("deployment tool", "constraint", "project", PROJECT)),
    ],
)  # fmt: skip
async def test_rsync_not_scp(content: str, project: str | None, expected: tuple[str, str, str, str | None]) -> None:
    (fact,) = await extract(content, project=project)
    assert brief([fact]) == [expected]
    assert meant_mentions(content)[0][0].value == "rsync"


async def test_a_project_fact_names_its_project_in_the_summary() -> None:
    (fact,) = await extract("Deploy with rsync, not scp.", project=PROJECT)
    assert fact.summary == "CloudRetail: Deploy with rsync, not scp."
    assert fact.triples == (Triple("cloudretail", "uses", "rsync"),)


async def test_a_value_only_refused_becomes_its_own_constraint() -> None:
    facts = await extract("Never use MongoDB or MySQL.")
    assert brief(facts) == [("mongodb", "constraint", "global", None), ("mysql", "constraint", "global", None)]


@pytest.mark.parametrize(
    "content",
    [
        "Unrelated, but the weather was lovely this morning, I went for a run.",
        "Random thought: should I get a standing desk? Never mind.",
        "Should we use Redis for the cache?",
        "If we used Redis it would be faster.",
        "Our blog framework is Astro.",  # not in the gazetteer: the fallback cannot know it
        "My colleague mentions Redis a lot.",  # a value with no statement about it
        "Let's go for a walk.",
    ],
)
async def test_noise_yields_nothing(content: str) -> None:
    assert await extract(content) == []


@pytest.mark.parametrize("role", ["tool", "system"])
async def test_tool_and_system_turns_yield_nothing(role: str) -> None:
    assert await extract("Always use PostgreSQL; deployed to us-east-1 with kubectl.", role=role) == []


async def test_assistant_turns_count_only_when_they_confirm() -> None:
    assert await extract("You could try Redis or Memcached.", role="assistant") == []
    (fact,) = await extract("Understood: CloudRetail's backend is FastAPI.", role="assistant", project=PROJECT)
    assert brief([fact]) == [("backend framework", "rule", "project", PROJECT)]
    assert fact.summary == "CloudRetail's backend is FastAPI."
    (fact,) = await extract("Got it, noted. Deploying with rsync.", role="assistant")
    assert brief([fact]) == [("deployment tool", "decision", "global", None)]


async def test_an_assistant_repeating_the_user_adds_nothing() -> None:
    said = turn("I like VS Code, not Vim")
    assert await extract("Got it, noted. You prefer VS Code.", role="assistant", recent=(said,)) == []
    assert await extract("Got it, noted. You prefer VS Code.", role="assistant") != []


async def test_relative_time_is_rewritten_in_summaries() -> None:
    (fact,) = await extract("Last session we chose Redis.")
    assert fact.summary == "In session s-41 we chose Redis."
    (fact,) = await extract("From now on, I prefer light mode.")
    assert fact.summary == "From session s-42 on, I prefer light mode."
    (fact,) = await extract("Today I switched to Neovim.")
    assert fact.summary == "On 2026-11-29 I switched to Neovim."
    assert (fact.entity, fact.category) == ("editor", "decision")


async def test_session_scope() -> None:
    (fact,) = await extract("For now, use light mode.", project=PROJECT)
    assert brief([fact]) == [("theme", "rule", "session", None)]
    assert fact.summary == "For session s-42, use light mode."
    (fact,) = await extract("The backend runs on SQLite for this session.", project=PROJECT)
    assert (fact.entity, fact.scope, fact.project_id, fact.triples) == ("database", "session", None, ())


async def test_preferences_in_a_project_turn_stay_global() -> None:
    (fact,) = await extract("I prefer dark mode.", project=PROJECT)
    assert brief([fact]) == [("theme", "preference", "global", None)]


async def test_a_bare_relation_is_a_fact_about_its_subject() -> None:
    (fact,) = await extract("FastAPI runs on AlloyDB.")
    assert brief([fact]) == [("fastapi", "entity", "global", None)]
    assert fact.triples == (Triple("fastapi", "runs_on", "alloydb"),)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I write Python 3.11", [("language", "python 3.11")]),
        ("Go ahead, let's go with Litestar in Go 1.22", [("backend framework", "litestar"), ("language", "go")]),
        ("Spring is lovely; we use Spring Boot", [("backend framework", "spring")]),
        ("a 30 s tool timeout, a timeout of 5 min, a 200 ms request timeout",
         [("tool timeout", "30 s"), ("tool timeout", "5 min"), ("request timeout", "200 ms")]),
        ("europe-west4 and us-east-1", [("deployment region", "europe-west4"), ("deployment region", "us-east-1")]),
        ("Neovim, Postgres and memcache", [("editor", "neovim"), ("database", "postgresql"), ("cache", "memcached")]),
    ],
)  # fmt: skip
def test_gazetteer(text: str, expected: list[tuple[str, str]]) -> None:
    assert [(m.entity, m.value) for m in find_mentions(text)] == expected


def test_sentences() -> None:
    assert split_sentences("Hi! I use Python 3.11.\nDeploy with rsync.  Ok?") == [
        "Hi!", "I use Python 3.11.", "Deploy with rsync.", "Ok?"
    ]  # fmt: skip


async def test_deterministic() -> None:
    content = "Project rule for CloudRetail: the backend is FastAPI running on AlloyDB. Never use Redis."
    first = await extract(content, project=PROJECT)
    assert first == await extract(content, project=PROJECT)

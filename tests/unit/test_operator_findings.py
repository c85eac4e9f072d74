"""Operator commands say what they found (issue 46): ``memstream dlq list`` printed nothing for an
empty topic, and ``memstream maintain --dry-run`` an empty report without saying why. Their
stdout stays machine-readable (JSON lines, a JSON list); what they found goes to stderr."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson
import pytest

from ops import dlq, dlq_cli
from ops.cli import _maintain_summary, build_parser
from ops.stack import state
from schemas import topics
from sinks.postgres.maintenance import RetentionPolicy
from streams.maintenance import TenantReport, findings


@dataclass(frozen=True)
class FakeStack:
    def require_kafka(self) -> str:
        return "broker:9092"

    def kafka_security(self) -> Any:
        return None


def letter(offset: int, reason: str) -> dlq.DeadLetter:
    headers = {topics.DLQ_REASON: reason, topics.DLQ_STAGE: "decode", topics.DLQ_SOURCE_TOPIC: topics.TURNS}
    return dlq.DeadLetter(0, offset, None, b"x", headers)


def run_dlq(monkeypatch: pytest.MonkeyPatch, letters: list[dlq.DeadLetter], *argv: str) -> int:
    async def read(bootstrap: str, *, security: Any) -> list[dlq.DeadLetter]:
        return letters

    monkeypatch.setattr(dlq, "read_dead_letters", read)
    monkeypatch.setattr(state, "with_running_stack", lambda settings: FakeStack())
    return dlq_cli.run(build_parser().parse_args(["dlq", *argv]), settings=None)  # type: ignore[arg-type]


def test_dlq_list_says_the_topic_is_empty(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_dlq(monkeypatch, [], "list") == 0
    out, err = capsys.readouterr()
    assert out == "" and err == "memstream dlq: no dead letters in memstream.dlq.v1\n"


def test_dlq_list_says_none_matches(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    letters = [letter(0, "unknown schema id 424242"), letter(1, "content over the limit")]
    assert run_dlq(monkeypatch, letters, "list", "--reason", "timeout", "--offset", "7") == 0
    out, err = capsys.readouterr()
    assert out == ""
    assert err == "memstream dlq: none of the 2 dead letters in memstream.dlq.v1 match --offset 7 --reason 'timeout'\n"
    assert run_dlq(monkeypatch, letters, "replay", "--all", "--dry-run") == 0
    out, err = capsys.readouterr()
    assert [orjson.loads(line)["offset"] for line in out.splitlines()] == [0, 1] and err == "", "found: listed only"


def test_maintain_says_why_nothing_would_happen() -> None:
    report = TenantReport("acme", dry_run=True, expired={"episodes": 0, "facts": 0})
    report.policy = {"compact_after_days": 30, "compact_after_days_from": "deployment", "compact_min_episodes": 5}
    report.notes = findings(report, RetentionPolicy(), compact=True, forget_=True, expire=True)
    assert report.notes == [
        "expiry: 0 episodes, 0 facts past their expiry (a run deletes them)",
        "compaction: no user has a day of 5 episodes or more older than 30 days (the deployment's window)",
        "forgetting: no retention rule is set for this tenant (min_importance, max_age_days, unaccessed_days,"
        " max_per_user are unset: PUT /v1/tenant/retention), so nothing is forgotten",
    ]
    assert _maintain_summary([report.as_dict()], dry_run=True) == [
        "memstream maintain (dry run: nothing changed): tenant acme",
        *(f"  {note}" for note in report.notes),
    ]
    assert _maintain_summary([], dry_run=False) == [
        "memstream maintain: no tenant has stored anything yet: nothing to maintain"
    ]


def test_maintain_names_the_rules_that_forgot() -> None:
    report = TenantReport("acme", dry_run=False, forgotten_ids=["a", "b"])
    policy = RetentionPolicy(max_age_days=90, max_per_user=1000)
    notes = findings(report, policy, compact=False, forget_=True, expire=False)
    assert notes == [
        "expiry: not asked for",
        "compaction: not asked for",
        "forgetting: 2 episodes forgotten by max_age_days 90, max_per_user 1000",
    ]

"""Evidence recall@k on LoCoMo through the real pipeline: ``python -m bench.locomo``.

LoCoMo (Maharana et al., 2024) is a set of very long two-person conversations (19-32
sessions spread over months) with questions whose ``evidence`` names the dialog turns
("D<session>:<turn>") that hold the answer. This benchmark asks how often memstream's
read path puts those turns near the top:

1. a private embedded stack starts (fresh data dir; compaction set to 100 years so the
   2022-2023 sessions are never archived into daily summaries; ``search_candidates=100``
   so that vector and full-text lists are deep enough for R@50 to mean something);
2. every turn is posted to ``POST /v1/turns`` (one tenant per run, one ``user_id`` per
   conversation, one ``session_id`` per LoCoMo session, ``event_time`` from the session's
   date plus one second per turn, the whole conversation shifted so that its last turn was
   a minute before the run (the questions are asked right after the conversation, as in
   the paper, so temporal decay sees the real spacing; ``--original-times`` keeps the
   2022-2023 dates), content ``"<speaker>: <text> [image: <caption>]"``), and
   the run waits until Postgres holds every episode;
3. every question of categories 1-4 with evidence is sent to ``GET /v1/search``
   (``memory_types=episodic``, the conversation's user) once per ranking variant, and
   recall@k is the fraction of the question's evidence turns among the top k hits,
   averaged over questions (in percent).

Variants are query-string options of the search endpoint (``decay``, ``boosts``, ``mmr``,
``decompose``); RRF weights are stack settings (``--vector-weight``/``--text-weight``).
The JSON on stdout carries the paper's DRAGON figures and baselines measured outside the
pipeline on a development split, LoCoMo's first five conversations (the same metric, each
question ranked against its own conversation's turns).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import re
import statistics
import sys
import tempfile
import time
import uuid
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import orjson
import psycopg

from memstream.settings import Settings
from ops.stack.session import StackSession, issue_key, stack_session

log = logging.getLogger(__name__)

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
#: Query-string options per ranking variant (the gateway's defaults are decay, boosts and MMR on).
VARIANTS: dict[str, dict[str, str]] = {
    "default": {},
    "plain": {"decay": "false", "boosts": "false", "mmr": "false"},
    "no-decay": {"decay": "false"},
    "no-mmr": {"mmr": "false"},
    "no-boosts": {"boosts": "false"},
    "boosts-only": {"decay": "false", "mmr": "false"},
    "mmr-only": {"decay": "false", "boosts": "false"},
    "plain-rules": {"decay": "false", "boosts": "false", "mmr": "false", "decompose": "rules"},
}
PAPER_DRAGON = {"R@5": 56.7, "R@10": 66.2, "R@25": 76.7, "R@50": 82.7}
#: Measured outside the pipeline on a development split (LoCoMo's first 5 conversations, categories 1-4):
#: one turn per document, each question ranked against its own conversation's turns.
README_BASELINES = {
    "bm25": {"R@5": 48.3, "R@10": 55.9, "R@25": 66.3, "R@50": 72.5},
    "all-MiniLM-L6-v2": {"R@5": 40.1, "R@10": 49.3, "R@25": 62.8, "R@50": 72.0},
    "wordllama-256": {"R@5": 33.4, "R@10": 40.9, "R@25": 53.8, "R@50": 62.1},
    "rrf bm25+MiniLM 0.7/0.3": {"R@5": 51.4, "R@10": 61.2, "R@25": 69.7, "R@50": 76.7},
    "rrf bm25+MiniLM + session smoothing": {"R@5": 52.6, "R@10": 63.4, "R@25": 71.6, "R@50": 79.1},
    "rrf bm25+wordllama 0.7/0.3": {"R@5": 47.6, "R@10": 57.6, "R@25": 67.8, "R@50": 74.3},
}
_SESSION_KEY = re.compile(r"session_(\d+)")
_EVIDENCE = re.compile(r"D:?(\d+):(\d+)")
_UNSAFE = re.compile(r"[^A-Za-z0-9_.:@/+-]")


@dataclass(frozen=True)
class Question:
    user_id: str
    text: str
    category: int
    evidence: frozenset[str]


@dataclass(frozen=True)
class Corpus:
    #: Per conversation: (user id, turns ready to post, their dia ids in the same order).
    conversations: list[tuple[str, list[dict[str, Any]], list[str]]]
    questions: list[Question]
    #: Evidence ids that name no turn of their conversation (counted as misses).
    unknown_evidence: int


#: Where LoCoMo comes from: it is not part of this repository (CC BY-NC 4.0).
LOCOMO_SOURCE = (
    "LoCoMo is not shipped with memstream (its licence is CC BY-NC 4.0). Download data/locomo10.json from "
    "https://github.com/snap-research/locomo (Maharana et al., 2024: 10 conversations, ~1,990 questions) or use "
    "any JSON list in its format (a subset of its conversations, say), and pass it with --data PATH "
    "(or set MEMSTREAM_LOCOMO_DATA)"
)


def data_path(given: Path | None) -> Path:
    """The LoCoMo file to read: ``--data``, else ``MEMSTREAM_LOCOMO_DATA``; a clear error when missing."""
    path = given or (Path(os.environ["MEMSTREAM_LOCOMO_DATA"]) if os.environ.get("MEMSTREAM_LOCOMO_DATA") else None)
    if path is None:
        raise SystemExit(f"python -m bench.locomo: no data. {LOCOMO_SOURCE}.")
    if not path.is_file():
        raise SystemExit(f"python -m bench.locomo: {path} is not a file. {LOCOMO_SOURCE}.")
    return path


def safe_id(value: str) -> str:
    """An identifier the contract accepts ([A-Za-z0-9][A-Za-z0-9_.:@/+-]{0,127})."""
    cleaned = _UNSAFE.sub("-", value).lstrip("_.:@/+-") or "x"
    return cleaned[:128]


def session_time(text: str) -> datetime:
    """``"1:56 pm on 8 May, 2023"`` as UTC."""
    return datetime.strptime(text, "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def evidence_ids(items: Sequence[str]) -> frozenset[str]:
    """Normalised dia ids; the data has a few slips ("D8:6; D9:17", "D:11:26", "D")."""
    found = set()
    for item in items:
        for part in re.split(r"[;,\s]+", item):
            match = _EVIDENCE.fullmatch(part.strip())
            if match:
                found.add(f"D{match[1]}:{match[2]}")
    return frozenset(found)


def load_corpus(path: Path, *, end_at: datetime | None = None) -> Corpus:
    """The conversations and scored questions; with ``end_at`` each conversation is moved in
    time so that its last turn is at ``end_at`` (spacing kept)."""
    conversations = []
    questions = []
    unknown = 0
    for sample in orjson.loads(path.read_bytes()):
        conv = sample["conversation"]
        user = safe_id(str(sample["sample_id"]))
        roles = {conv["speaker_a"]: "user", conv["speaker_b"]: "assistant"}
        turns: list[dict[str, Any]] = []
        dia_ids: list[str] = []
        sessions = sorted(int(m[1]) for key in conv if (m := _SESSION_KEY.fullmatch(key)))
        for n in sessions:
            start = session_time(conv[f"session_{n}_date_time"])
            for i, turn in enumerate(conv[f"session_{n}"]):
                content = f"{turn['speaker']}: {turn['text']}"
                if turn.get("blip_caption"):
                    content += f" [image: {turn['blip_caption']}]"
                turns.append(
                    {
                        "event_id": str(uuid.uuid4()),
                        "agent_id": "locomo",
                        "user_id": user,
                        "session_id": safe_id(f"{sample['sample_id']}-s{n}"),
                        "role": roles[turn["speaker"]],
                        "content": content,
                        "event_time": (start + timedelta(seconds=i)).isoformat(),
                        "metadata": {"dia_id": turn["dia_id"]},
                    }
                )
                dia_ids.append(turn["dia_id"])
        if end_at is not None and turns:
            shift = end_at - datetime.fromisoformat(turns[-1]["event_time"])
            for t in turns:
                t["event_time"] = (datetime.fromisoformat(t["event_time"]) + shift).isoformat()
        conversations.append((user, turns, dia_ids))
        known = set(dia_ids)
        for qa in sample["qa"]:
            evidence = evidence_ids(qa.get("evidence", []))
            if qa["category"] in CATEGORIES and evidence:
                unknown += len(evidence - known)
                questions.append(Question(user, qa["question"], int(qa["category"]), evidence))
    return Corpus(conversations, questions, unknown)


async def request(client: httpx.AsyncClient, method: str, url: str, **kwargs: Any) -> httpx.Response:
    """One call, retried while the gateway answers 429 or 503."""
    for attempt in range(20):
        response = await client.request(method, url, **kwargs)
        if response.status_code not in (429, 503):
            return response
        await asyncio.sleep(float(response.headers.get("retry-after", 0.1 * (attempt + 1))))
    raise RuntimeError(f"{method} {url} kept answering {response.status_code}")


async def ingest(stack: StackSession, corpus: Corpus, *, api_key: str, batch: int) -> dict[str, str]:
    """Post every turn; returns event id -> dia id."""
    event_to_dia: dict[str, str] = {}
    gate = asyncio.Semaphore(4)
    async with httpx.AsyncClient(timeout=120, headers={"authorization": f"Bearer {api_key}"}) as client:

        async def post(turns: list[dict[str, Any]], dia_ids: list[str]) -> None:
            async with gate:
                response = await request(
                    client, "POST", f"{stack.gateway_url}/v1/turns", content=orjson.dumps({"turns": turns}),
                    headers={"content-type": "application/json"},
                )  # fmt: skip
            if response.status_code != 202:
                raise RuntimeError(f"POST /v1/turns -> {response.status_code}: {response.text}")
            event_ids = response.json()["event_ids"]
            if event_ids != [t["event_id"] for t in turns]:
                raise RuntimeError("the gateway answered other event ids than the ones sent")
            event_to_dia.update(zip(event_ids, dia_ids, strict=True))

        await asyncio.gather(
            *(
                post(turns[i : i + batch], dia_ids[i : i + batch])
                for _, turns, dia_ids in corpus.conversations
                for i in range(0, len(turns), batch)
            )
        )
    return event_to_dia


def wait_durable(database_url: str, tenant: str, expected: int, *, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute("SELECT set_config('app.tenant_id', %s, false)", (tenant,))  # row-level security
        while True:
            row = conn.execute("SELECT count(*) FROM episodes WHERE tenant_id = %s", (tenant,)).fetchone()
            count = int(row[0]) if row else 0
            if count >= expected:
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"only {count} of {expected} episodes after {timeout_s:.0f} s")
            time.sleep(0.25)


@dataclass(frozen=True)
class Ranked:
    question: Question
    dia_ids: list[str]
    elapsed_ms: float


async def search_all(
    stack: StackSession, questions: Sequence[Question], options: dict[str, str], *, api_key: str, k: int,
    concurrency: int, event_to_dia: dict[str, str],
) -> tuple[list[Ranked], str]:  # fmt: skip
    """Every question's top-k dia ids (and the embedding model the gateway reported)."""
    gate = asyncio.Semaphore(concurrency)
    models: set[str] = set()
    async with httpx.AsyncClient(timeout=120, headers={"authorization": f"Bearer {api_key}"}) as client:

        async def one(q: Question) -> Ranked:
            params = {"user_id": q.user_id, "q": q.text, "k": str(k), "memory_types": "episodic", **options}
            async with gate:
                started = time.perf_counter()
                response = await request(client, "GET", f"{stack.gateway_url}/v1/search", params=params)
                elapsed = (time.perf_counter() - started) * 1000
            if response.status_code != 200:
                raise RuntimeError(f"GET /v1/search -> {response.status_code}: {response.text}")
            body = response.json()
            models.add(body["embedding_model"])
            hits = [event_to_dia[h["id"]] for h in body["hits"] if h["id"] in event_to_dia]
            return Ranked(q, hits, elapsed)

        ranked = await asyncio.gather(*(one(q) for q in questions))
    return list(ranked), ", ".join(sorted(models))


def recall(ranked: Sequence[Ranked], ks: Sequence[int]) -> dict[str, float]:
    if not ranked:
        return {f"R@{k}": 0.0 for k in ks}
    return {
        f"R@{k}": round(
            100 * statistics.fmean(len(r.question.evidence & set(r.dia_ids[:k])) / len(r.question.evidence)
                                   for r in ranked), 1)
        for k in ks
    }  # fmt: skip


def report(ranked: Sequence[Ranked], ks: Sequence[int]) -> dict[str, Any]:
    by_category: dict[int, list[Ranked]] = defaultdict(list)
    for r in ranked:
        by_category[r.question.category].append(r)
    return {
        "recall": {
            "overall": recall(ranked, ks),
            "by_category": {str(c): recall(by_category[c], ks) for c in sorted(by_category)},
        },
        "search_p50_ms": round(statistics.median(r.elapsed_ms for r in ranked), 1) if ranked else None,
    }


def flags(options: dict[str, str]) -> dict[str, Any]:
    """A variant's ranking switches, spelled out (the gateway's defaults where not given)."""
    on = {name: options.get(name, "true") == "true" for name in ("decay", "boosts", "mmr")}
    return {**on, "decompose": options.get("decompose", "off")}


def details(variant: str, ranked: Sequence[Ranked]) -> list[bytes]:
    """One JSON line per question: where (1-based) each evidence turn was ranked, or null."""
    return [
        orjson.dumps({
            "variant": variant, "user_id": r.question.user_id, "category": r.question.category,
            "question": r.question.text,
            "evidence": {e: (r.dia_ids.index(e) + 1 if e in r.dia_ids else None) for e in sorted(r.question.evidence)},
            "top5": r.dia_ids[:5],
        })
        for r in ranked
    ]  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.locomo", description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=None, help=f"a LoCoMo JSON file. {LOCOMO_SOURCE}")
    parser.add_argument("--k", default="5,10,25,50", help="comma-separated cut-offs (at most 100)")
    parser.add_argument("--variants", default="default,plain,no-decay,no-mmr", help=f"of {', '.join(VARIANTS)}")
    parser.add_argument("--vector-weight", type=float, default=None, help="RRF weight of the vector list")
    parser.add_argument("--text-weight", type=float, default=None, help="RRF weight of the full-text list")
    parser.add_argument("--candidates", type=int, default=100, help="candidates per list (search_candidates)")
    parser.add_argument("--concurrency", type=int, default=8, help="concurrent search requests")
    parser.add_argument("--batch", type=int, default=500, help="turns per POST")
    parser.add_argument("--original-times", action="store_true", help="keep LoCoMo's dates (no shift to now)")
    parser.add_argument("--details", type=Path, default=None, help="write per-question ranks here (JSON lines)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="%(asctime)s %(name)s %(message)s")
    log.setLevel(logging.INFO)
    ks = sorted({int(k) for k in args.k.split(",") if k.strip()})
    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    if not variants:
        parser.error("--variants: name at least one")
    if not ks or ks[0] < 1 or ks[-1] > 100:
        parser.error("--k: cut-offs between 1 and 100 (the gateway's cap)")
    if unknown := [v for v in variants if v not in VARIANTS]:
        parser.error(f"--variants: unknown {', '.join(unknown)}; choose from {', '.join(VARIANTS)}")

    args.data = data_path(args.data)
    corpus = load_corpus(args.data, end_at=None if args.original_times else datetime.now(UTC) - timedelta(minutes=1))
    turns = sum(len(t) for _, t, _ in corpus.conversations)
    log.info("%d conversations, %d turns, %d questions", len(corpus.conversations), turns, len(corpus.questions))
    overrides: dict[str, Any] = {"compact_after_days": 36_500, "search_candidates": args.candidates}
    if args.vector_weight is not None:
        overrides["rrf_vector_weight"] = args.vector_weight
    if args.text_weight is not None:
        overrides["rrf_text_weight"] = args.text_weight
    tenant = f"locomo-{uuid.uuid4().hex[:8]}"
    results: dict[str, Any] = {}
    lines: list[bytes] = []
    model = ""
    with tempfile.TemporaryDirectory(prefix="memstream-locomo-") as data_dir:
        # An empty data dir holds no running `memstream up`: the stack is always private.
        settings = Settings(**{**Settings().model_dump(), **overrides, "data_dir": Path(data_dir)})
        with stack_session(settings, memory=True) as stack:
            key = issue_key(stack.settings, tenant_id=tenant, scopes=["ingest", "read"], name="bench.locomo",
                            rate_limit_per_s=1e6)  # fmt: skip
            started = time.monotonic()
            event_to_dia = asyncio.run(ingest(stack, corpus, api_key=key, batch=args.batch))
            wait_durable(stack.settings.require_database_url(), tenant, turns, timeout_s=900)
            ingest_s = time.monotonic() - started
            log.info("ingested %d turns in %.1f s", turns, ingest_s)
            for variant in variants:
                ranked, model = asyncio.run(
                    search_all(stack, corpus.questions, VARIANTS[variant], api_key=key, k=ks[-1],
                               concurrency=args.concurrency, event_to_dia=event_to_dia)
                )  # fmt: skip
                results[variant] = {"ranking": flags(VARIANTS[variant]), **report(ranked, ks)}
                lines.extend(details(variant, ranked))
                log.info("%s: %s", variant, results[variant]["recall"]["overall"])
            resolved = stack.settings
    if args.details is not None:
        args.details.write_bytes(b"\n".join(lines) + b"\n")
    output = {
        "benchmark": "locomo",
        "data": str(args.data),
        "configuration": {
            "embedding_model": model,
            "rrf_vector_weight": resolved.rrf_vector_weight,
            "rrf_text_weight": resolved.rrf_text_weight,
            "rrf_k": resolved.rrf_k,
            "search_candidates": resolved.search_candidates,
            "search_half_life_days": resolved.search_half_life_days,
            "search_decay_floor": resolved.search_decay_floor,
            "times": "original LoCoMo dates" if args.original_times else "shifted to end a minute before the run",
            "memory_types": "episodic",
            "search_concurrency": args.concurrency,
            "notes": [
                f"search_candidates={resolved.search_candidates} per list (default 50) so R@50 is meaningful",
                f"search_p50_ms is client-side latency with {args.concurrency} requests in flight",
                "recall in percent, averaged over questions of categories 1-4 with evidence",
            ],
        },
        "counts": {
            "conversations": len(corpus.conversations),
            "turns": turns,
            "questions_scored": len(corpus.questions),
            "by_category": {str(c): sum(q.category == c for q in corpus.questions) for c in CATEGORIES},
            "unknown_evidence_ids": corpus.unknown_evidence,
        },
        "ingest_s": round(ingest_s, 1),
        "variants": results,
        "reference": {"paper_dragon": PAPER_DRAGON, "readme_baselines": README_BASELINES},
    }
    print(orjson.dumps(output, option=orjson.OPT_INDENT_2).decode())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

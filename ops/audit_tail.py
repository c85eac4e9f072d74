"""``memstream audit tail``: the audit topic as JSON lines on stdout, from a consumer group of
its own (see ``ops/audit_follow.py`` for what a follower sees)."""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from typing import Any

import orjson

from memstream.settings import Settings
from ops.audit_follow import AuditFollower


def as_json_line(record: dict[str, Any]) -> bytes:
    detail = record.get("detail")
    return orjson.dumps({**record, "detail": orjson.loads(detail) if isinstance(detail, str) else detail}) + b"\n"


async def tail(settings: Settings, args: argparse.Namespace) -> int:
    follower = AuditFollower(
        settings.require_kafka(), security=settings.kafka_security(), group_id=args.group, tenant=args.tenant,
        from_beginning=args.from_beginning,
    )  # fmt: skip
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)

    async def write(record: dict[str, Any]) -> None:
        sys.stdout.buffer.write(as_json_line(record))
        sys.stdout.buffer.flush()

    stats = await follower.run(write, max_records=args.max, idle_exit_s=args.idle_exit, stop=stop)
    print(
        f"audit tail: {stats.handled} records, {stats.repeats_skipped} repeats skipped,"
        f" {stats.undecodable} undecodable",
        file=sys.stderr,
    )
    return 0


def run_tail(settings: Settings, args: argparse.Namespace) -> int:
    return asyncio.run(tail(settings, args))

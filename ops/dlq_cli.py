"""``memstream dlq list|replay``: look at dead letters, and re-drive them after a fix (``ops/dlq.py``)."""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

import orjson

from memstream.settings import Settings
from schemas import topics

HELP = f"the dead-letter topic {topics.DLQ}: list records and why they failed, replay them after a fix"


def _selection_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--offset", type=int, action="append", default=[], help="a DLQ offset (repeatable)")
    parser.add_argument("--reason", help="records whose reason contains this text (case-insensitive)")
    parser.add_argument("--stage", help="records dead-lettered at this stage (decode, episodes, facts, …)")
    parser.add_argument("--source-topic", help="records that came from this topic")


def add_parser(sub: Any) -> None:
    """Add the subcommand to ``memstream``'s subparsers."""
    dlq = sub.add_parser("dlq", help=HELP, description=HELP)
    actions = dlq.add_subparsers(dest="action", required=True)
    listing = actions.add_parser("list", help="one JSON line per dead letter (offset, stage, reason, source)")
    _selection_arguments(listing)
    replay = actions.add_parser(
        "replay",
        help="publish the selected records again, unchanged, to their source topic (idempotent: sinks key by "
        "event id; a record still bad comes back to the DLQ)",
    )
    _selection_arguments(replay)
    replay.add_argument("--all", action="store_true", help="replay every dead letter (no selection needed)")
    replay.add_argument("--dry-run", action="store_true", help="only list what would be replayed")
    dlq.set_defaults(func=run)


def nothing_found(total: int, selection: str) -> str:
    """Why nothing is listed or replayed: an empty topic, or a selection that matches none."""
    if total == 0:
        return f"no dead letters in {topics.DLQ}"
    return f"none of the {total} dead letter{'s' if total > 1 else ''} in {topics.DLQ} match {selection}"


def _described(args: argparse.Namespace) -> str:
    """The selection as it was given on the command line."""
    given = [f"--offset {o}" for o in args.offset]
    given += [f"{flag} {value!r}" for flag, value in (("--reason", args.reason), ("--stage", args.stage),
              ("--source-topic", args.source_topic)) if value is not None]  # fmt: skip
    return " ".join(given)


def run(args: argparse.Namespace, settings: Settings) -> int:
    from ops.dlq import DeadLetterError, Selection, read_dead_letters, replay_dead_letters
    from ops.stack.state import with_running_stack

    selection = Selection(frozenset(args.offset), args.reason, args.stage, args.source_topic)
    if args.action == "replay" and selection == Selection() and not args.all:
        print("memstream dlq replay: choose records (--offset, --reason, --stage, --source-topic) or --all",
              file=sys.stderr)  # fmt: skip
        return 2
    resolved = with_running_stack(settings)
    bootstrap, security = resolved.require_kafka(), resolved.kafka_security()
    try:
        letters = asyncio.run(read_dead_letters(bootstrap, security=security))
        chosen = [d for d in letters if selection(d)]
        if not chosen:  # stdout stays JSON (none): what was found goes to stderr
            print(f"memstream dlq: {nothing_found(len(letters), _described(args))}", file=sys.stderr)
        if args.action == "list" or args.dry_run:
            for letter in chosen:
                sys.stdout.buffer.write(orjson.dumps(letter.as_dict()) + b"\n")
            sys.stdout.flush()
            return 0
        replayed = asyncio.run(replay_dead_letters(bootstrap, chosen, security=security))
    except DeadLetterError as exc:
        print(f"memstream dlq: {exc}", file=sys.stderr)
        return 1
    summary = {"replayed": len(replayed), "offsets": [d.offset for d in replayed]}
    print(orjson.dumps(summary).decode())
    return 0

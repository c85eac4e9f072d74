"""``memstream replay``: rebuild memory from the event log (see ``streams/replay``)."""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Callable
from datetime import datetime
from typing import Any

import orjson

from memstream.settings import Settings

HELP = "rebuild memory from the event log: into fresh tables switched in when done, or --in-place"


def add_parser(sub: Any, instant: Callable[[str], datetime]) -> None:
    """Add the subcommand to ``memstream``'s subparsers."""
    replay = sub.add_parser("replay", help=HELP, description=HELP)
    replay.add_argument("--tenant", help="one tenant (default: every tenant)")
    replay.add_argument("--user", help="one user of --tenant")
    replay.add_argument("--since", type=instant, help="events from this time (ISO 8601 with a timezone; --in-place)")
    replay.add_argument("--until", type=instant, help="events before this time (--in-place)")
    mode = replay.add_mutually_exclusive_group()
    mode.add_argument("--in-place", action="store_true", help="write into the live tables (idempotent)")
    mode.add_argument(
        "--verify", action="store_true", help="rebuild into fresh tables, compare with the live memory, drop it"
    )
    mode.add_argument("--digest", action="store_true", help="only print the digest of the live memory")
    replay.add_argument("--re-extract", action="store_true",
                        help="call the LLM again instead of reusing recorded extraction results")  # fmt: skip
    replay.add_argument(
        "--buffers", action="store_true", help="also re-append the turns to their Redis session buffers"
    )
    replay.add_argument("--batch-size", type=int, default=500, help="events per batch (default 500)")
    replay.add_argument("--restart", action="store_true", help="abandon an unfinished run of this scope; start over")
    replay.add_argument("--switch-timeout", type=float, default=60.0, help="seconds to keep retrying the switch")
    replay.add_argument("--fail-after-batches", type=int, help=argparse.SUPPRESS)  # a simulated crash (tests)
    replay.set_defaults(func=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    from ops.stack.state import with_running_stack
    from streams.replay.runner import ReplayOptions, run_replay, scope_digest
    from streams.replay.scope import Scope, Target

    resolved = with_running_stack(settings)
    scope = Scope(args.tenant, args.user, args.since, args.until)
    if args.digest:
        result: dict[str, Any] = {"scope": scope.describe(), "digest": asyncio.run(scope_digest(resolved, scope))}
        print(orjson.dumps(result, option=orjson.OPT_INDENT_2).decode())
        return 0
    if args.batch_size < 1:
        print("memstream replay: --batch-size must be at least 1", file=sys.stderr)
        return 2
    target: Target = "in-place" if args.in_place else "verify" if args.verify else "shadow"
    options = ReplayOptions(
        scope=scope, target=target, batch_size=args.batch_size, re_extract=args.re_extract, buffers=args.buffers,
        restart=args.restart, switch_timeout_s=args.switch_timeout, fail_after_batches=args.fail_after_batches,
    )  # fmt: skip
    report = asyncio.run(run_replay(resolved, options))
    print(orjson.dumps(report.as_dict(), option=orjson.OPT_INDENT_2).decode())
    if report.matches is False:
        print(f"memstream replay: the rebuilt memory differs from the live one ({report.run_id})", file=sys.stderr)
        return 1
    return 0

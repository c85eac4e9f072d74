"""The ``memstream`` command line."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from memstream.errors import MemstreamError
from memstream.settings import Settings


def _logging(level: str) -> None:
    logging.basicConfig(
        level=level.upper(),
        format="%(asctime)s %(levelname)-7s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    for chatty in ("httpx", "httpcore", "aiokafka"):
        logging.getLogger(chatty).setLevel(max(logging.WARNING, logging.getLogger().level))


def _up(args: argparse.Namespace, settings: Settings) -> int:
    from memstream.stack.supervisor import run_up

    return run_up(settings, worker=not args.no_worker, gateway=not args.no_gateway)


def _worker(_: argparse.Namespace, settings: Settings) -> int:
    from streams.worker import run_worker

    run_worker(settings)
    return 0


def _gateway(_: argparse.Namespace, settings: Settings) -> int:
    import uvicorn

    from agents_gateway.app import create_app

    uvicorn.run(
        create_app(settings),
        host=settings.gateway_host,
        port=settings.gateway_port,
        log_level=settings.log_level.lower(),
        access_log=False,
    )
    return 0


def _migrate(_: argparse.Namespace, settings: Settings) -> int:
    from memstream.stack.state import with_running_stack
    from memstream.stack.supervisor import prepare_storage

    prepare_storage(with_running_stack(settings), app_role=settings.database_app_role)
    return 0


def _demo(args: argparse.Namespace, settings: Settings) -> int:
    from memstream.demo import run_demo

    return run_demo(settings, gateway=args.gateway)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="memstream", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    up = sub.add_parser(
        "up",
        help="run the stack in the foreground (embedded services for what you did not configure)",
    )
    up.add_argument("--no-worker", action="store_true", help="do not start a worker")
    up.add_argument("--no-gateway", action="store_true", help="do not start the gateway")
    up.set_defaults(func=_up)
    sub.add_parser(
        "worker", help="run a Faust worker (needs Kafka, Postgres, Redis configured)"
    ).set_defaults(func=_worker)
    sub.add_parser("gateway", help="run the HTTP gateway").set_defaults(func=_gateway)
    sub.add_parser("migrate", help="apply database migrations, the vector index and topics").set_defaults(
        func=_migrate
    )
    demo = sub.add_parser("demo", help="play the seed scenario against a running stack (or one it starts)")
    demo.add_argument("--gateway", help="gateway URL (default: the running `memstream up`)")
    demo.set_defaults(func=_demo)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        settings = Settings()
    except ValueError as exc:
        print(f"memstream: invalid configuration: {exc}", file=sys.stderr)
        return 2
    _logging(settings.log_level)
    try:
        result: int = args.func(args, settings)
    except MemstreamError as exc:
        logging.getLogger("memstream").error("%s", exc)
        return 1
    return result

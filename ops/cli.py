"""The ``memstream`` command line."""

from __future__ import annotations

import argparse
import logging
import os
import sys
import tempfile
from collections.abc import Sequence
from contextlib import nullcontext
from datetime import datetime
from pathlib import Path
from typing import Any

from memstream.errors import MemstreamError
from memstream.settings import Settings, warn_unknown_variables
from ops import dlq_cli, replay_cli
from schemas.errors import SchemaError


def _logging(level: str) -> None:
    logging.basicConfig(
        level=level.upper(),
        format="%(asctime)s %(levelname)-7s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    for chatty in ("httpx", "httpcore", "aiokafka"):
        logging.getLogger(chatty).setLevel(max(logging.WARNING, logging.getLogger().level))


def _up(args: argparse.Namespace, settings: Settings) -> int:
    from ops.stack.supervisor import run_up

    if args.gateway_workers is not None:
        settings = settings.model_copy(update={"gateway_workers": args.gateway_workers})
    return run_up(settings, worker=not args.no_worker, gateway=not args.no_gateway)


def _worker(args: argparse.Namespace, settings: Settings) -> int:
    from streams.worker import run_worker

    run_worker(settings, memory=args.memory)
    return 0


def gateway_app() -> Any:
    """The gateway of one of ``gateway_workers`` processes (uvicorn's factory: each process
    reads the settings from its environment, as ``memstream gateway`` did)."""
    from agents_gateway.app import create_app

    settings = Settings()
    _logging(settings.log_level)
    return create_app(settings, server_process=True)


#: The tokenizer's batches in the caller's thread, in the gateway: a request encodes a few
#: short texts (its question, a context's new lines), and spread over the Rust tokenizer's
#: thread pool they took a fifth more CPU, with its idle threads spinning on the other core
#: (``sched_yield``) while Postgres needed it. An operator's own setting is kept.
GATEWAY_ENVIRONMENT = {"TOKENIZERS_PARALLELISM": "false"}


def _gateway(_: argparse.Namespace, settings: Settings) -> int:
    from agents_gateway.metrics import MULTIPROCESS_DIR

    for name, value in GATEWAY_ENVIRONMENT.items():  # before anything is encoded; inherited by its processes
        os.environ.setdefault(name, value)
    several = settings.gateway_workers > 1
    with tempfile.TemporaryDirectory(prefix="memstream-gateway-metrics-") if several else nullcontext() as counters:
        if counters is not None:  # the processes' counters, summed by whichever answers a scrape
            os.environ[MULTIPROCESS_DIR] = counters
        return _serve(settings, several=several)


def _serve(settings: Settings, *, several: bool) -> int:
    import uvicorn

    from agents_gateway.app import create_app
    from agents_gateway.limits import server_options

    options: dict[str, Any] = {
        "log_level": settings.log_level.lower(),
        "access_log": False,
        **server_options(settings),  # header size and read timeout, keep-alive, concurrency cap
    }
    if several:  # each process with its own socket: ops/gateway_processes.py says why
        from ops.gateway_processes import GatewayProcesses

        app = f"{__name__}:{gateway_app.__name__}"
        try:
            processes = GatewayProcesses({"app": app, "factory": True, **options}, host=settings.gateway_host,
                                         port=settings.gateway_port, count=settings.gateway_workers)  # fmt: skip
        except OSError as exc:  # as uvicorn says it for one process
            print(f"error while attempting to bind on {settings.gateway_host}:{settings.gateway_port}: {exc}",
                  file=sys.stderr)  # fmt: skip
            return 1
        return processes.run()
    served = create_app(settings, server_process=True)
    uvicorn.run(served, host=settings.gateway_host, port=settings.gateway_port, **options)
    return 0


def _migrate(_: argparse.Namespace, settings: Settings) -> int:
    from ops.stack.state import with_running_stack
    from ops.stack.supervisor import prepare_storage

    resolved = with_running_stack(settings)  # a running embedded stack names its app role
    prepare_storage(resolved, app_role=resolved.database_app_role)
    return 0


def _demo(args: argparse.Namespace, settings: Settings) -> int:
    from ops.demo import run_demo

    return run_demo(settings, gateway=args.gateway, api_key=args.api_key)


def _mcp(args: argparse.Namespace, settings: Settings) -> int:
    """The MCP server on stdio (``memstream_client.mcp``), against ``--base-url`` or
    ``MEMSTREAM_BASE_URL``, else this machine's gateway as settings place it."""
    try:
        from memstream_client.mcp import main as mcp_main
    except ImportError as exc:
        print(
            f"memstream mcp needs the MCP extra ({exc.name} is missing): pip install 'memstream[mcp]'", file=sys.stderr
        )
        return 2
    from ops.stack.state import gateway_url

    argv = list(args.args)
    if not any(a == "--base-url" or a.startswith("--base-url=") for a in argv) and not os.environ.get(
        "MEMSTREAM_BASE_URL"
    ):
        argv = ["--base-url", gateway_url(settings), *argv]
    return mcp_main(argv, prog="memstream mcp")


def _keys(args: argparse.Namespace, settings: Settings) -> int:
    import psycopg

    from ops.stack.state import with_running_stack
    from sinks.postgres.api_keys import create_key, list_keys, revoke_key

    url = with_running_stack(settings).require_owner_database_url()
    with psycopg.connect(url, autocommit=True) as conn:
        if args.action == "create":
            key = create_key(
                conn,
                tenant_id=args.tenant,
                agent_id=args.agent,
                scopes=[s.strip() for s in args.scopes.split(",") if s.strip()],
                name=args.name,
                rate_limit_per_s=args.rate,
            )
            print(key)  # shown once: only a hash is stored
            return 0
        if args.action == "revoke":
            if revoke_key(conn, args.key_id):
                print(f"revoked {args.key_id}")
                return 0
            print(f"no active key {args.key_id}", file=sys.stderr)
            return 1
        for k in list_keys(conn, args.tenant):
            state = f"revoked {k.revoked_at:%Y-%m-%d}" if k.revoked_at else "active"
            agent = k.agent_id or "*"
            print(f"{k.key_id}  {k.tenant_id}  agent={agent}  {','.join(k.scopes)}  {state}  {k.name}")
    return 0


def _audit(args: argparse.Namespace, settings: Settings) -> int:
    from ops.audit_export import run_export
    from ops.stack.state import with_running_stack

    if args.action == "tail":
        from ops.audit_tail import run_tail

        return run_tail(with_running_stack(settings), args)
    url = with_running_stack(settings).require_database_url()
    count = run_export(url, args.tenant, args.out, fmt=args.format, since=args.since, until=args.until)
    print(f"wrote {count} audit records to {args.out}", file=sys.stderr)
    return 0


def _maintain(args: argparse.Namespace, settings: Settings) -> int:
    import asyncio

    import orjson

    from ops.stack.state import with_running_stack

    resolved = with_running_stack(settings)

    async def run() -> list[dict[str, object]]:
        from memstream.embedder import build_embedder
        from memstream.extraction.factory import build_models
        from memstream.tokens import TokenCounter
        from sinks.postgres.pool import create_pool
        from streams.maintenance import Maintainer

        pool = create_pool(
            resolved.require_database_url(), name="maintain", text_search_config=resolved.text_search_config
        )
        models, embedder = build_models(resolved), build_embedder(resolved)
        await pool.open()
        try:
            maintainer = Maintainer(pool, resolved, models.summarizer, embedder, TokenCounter())
            options = {"dry_run": args.dry_run, "compact": not args.no_compact, "forget_": not args.no_forget,
                       "expire": not args.no_expire}  # fmt: skip
            targets = [args.tenant] if args.tenant else await maintainer.tenants()
            return [(await maintainer.run(t, **options)).as_dict() for t in targets]
        finally:
            await pool.close()
            await models.aclose()
            await embedder.aclose()

    reports = asyncio.run(run())
    print(orjson.dumps(reports, option=orjson.OPT_INDENT_2).decode())
    # What was found, for a person, on stderr: the JSON on stdout stays the report alone.
    for line in _maintain_summary(reports, dry_run=args.dry_run):
        print(line, file=sys.stderr)
    return 0


def _maintain_summary(reports: list[dict[str, object]], *, dry_run: bool) -> list[str]:
    """What ``memstream maintain`` found, in words: each tenant's notes (``TenantReport.notes``),
    or that there was no tenant to look at."""
    mode = " (dry run: nothing changed)" if dry_run else ""
    if not reports:
        return [f"memstream maintain{mode}: no tenant has stored anything yet: nothing to maintain"]
    lines = []
    for report in reports:
        lines.append(f"memstream maintain{mode}: tenant {report['tenant_id']}")
        notes = report.get("notes")
        lines += [f"  {note}" for note in (notes if isinstance(notes, list) else [])]
    return lines


def _instant(value: str) -> datetime:
    parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    if parsed.tzinfo is None:
        raise argparse.ArgumentTypeError("give a timezone, e.g. 2026-11-30T00:00:00Z")
    return parsed


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="memstream", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    up = sub.add_parser(
        "up",
        help="run the stack in the foreground (embedded services for what you did not configure)",
    )
    up.add_argument("--no-worker", action="store_true", help="do not start a worker")
    up.add_argument("--no-gateway", action="store_true", help="do not start the gateway")
    up.add_argument(
        "--gateway-workers", type=int, metavar="N", choices=range(1, 65),
        help="gateway processes sharing its port (default 1, or MEMSTREAM_GATEWAY_WORKERS)",
    )  # fmt: skip
    up.set_defaults(func=_up)
    worker = sub.add_parser("worker", help="run a Faust worker (needs Kafka, Postgres, Redis configured)")
    worker.add_argument(
        "--memory", action="store_true", help="the long-term memory worker (facts, graph, skills, summaries)"
    )
    worker.set_defaults(func=_worker)
    sub.add_parser("gateway", help="run the HTTP gateway").set_defaults(func=_gateway)
    sub.add_parser("migrate", help="apply database migrations, the vector index and topics").set_defaults(func=_migrate)
    keys = sub.add_parser("keys", help="gateway API keys (create, list, revoke)")
    key_actions = keys.add_subparsers(dest="action", required=True)
    create = key_actions.add_parser("create", help="create a key and print it (once)")
    create.add_argument("--tenant", required=True)
    create.add_argument("--agent", help="bind the key to one agent (it then sees its own and shared memory)")
    create.add_argument(
        "--scopes",
        default="ingest,read",
        help="comma-separated: ingest, read, admin, system (system: may post system turns)",
    )
    create.add_argument("--name", default="", help="a note to recognise the key by")
    create.add_argument("--rate", type=float, help="requests/s for this key (default: the gateway's)")
    listing = key_actions.add_parser("list", help="list keys (never their secrets)")
    listing.add_argument("--tenant")
    revoke = key_actions.add_parser("revoke", help="revoke a key (within MEMSTREAM_AUTH_CACHE_S everywhere)")
    revoke.add_argument("key_id")
    keys.set_defaults(func=_keys)

    audit = sub.add_parser("audit", help="the audit log")
    audit_actions = audit.add_subparsers(dest="action", required=True)
    export = audit_actions.add_parser("export", help="write a tenant's audit records to a file")
    export.add_argument("--tenant", required=True)
    export.add_argument("--since", type=_instant, help="ISO 8601 with a timezone (inclusive)")
    export.add_argument("--until", type=_instant, help="ISO 8601 with a timezone (exclusive)")
    export.add_argument("--format", choices=["avro", "jsonl"], default="jsonl")
    export.add_argument("--out", type=Path, required=True)
    tail = audit_actions.add_parser(
        "tail", help="follow memstream.audit.v1 in a consumer group of its own, one JSON line per change"
    )
    tail.add_argument("--group", default="memstream-audit-tail", help="consumer group (its own position)")
    tail.add_argument("--tenant", help="only this tenant's records")
    tail.add_argument("--from-beginning", action="store_true", help="a new group starts at the oldest record")
    tail.add_argument("--max", type=int, help="stop after this many records")
    tail.add_argument("--idle-exit", type=float, help="stop when nothing arrived for this many seconds")
    audit.set_defaults(func=_audit)

    maintain = sub.add_parser("maintain", help="expire, compact and forget now (JSON report)")
    maintain.add_argument("--tenant", help="one tenant (default: every tenant seen)")
    maintain.add_argument(
        "--dry-run", action="store_true", help="change nothing: report what would be expired, compacted and forgotten"
    )
    maintain.add_argument("--no-compact", action="store_true")
    maintain.add_argument("--no-forget", action="store_true")
    maintain.add_argument("--no-expire", action="store_true")
    maintain.set_defaults(func=_maintain)

    replay_cli.add_parser(sub, _instant)
    dlq_cli.add_parser(sub)

    mcp = sub.add_parser(
        "mcp",
        help="serve memory tools to an MCP client on stdio (memstream mcp --help for its options)",
        add_help=False,
        prefix_chars="\0",  # every argument is the MCP server's own (memstream_client.mcp)
    )
    mcp.add_argument("args", nargs=argparse.REMAINDER)
    mcp.set_defaults(func=_mcp)

    demo = sub.add_parser("demo", help="play the seed scenario against a running stack (or one it starts)")
    demo.add_argument("--gateway", help="gateway URL (default: the running `memstream up`)")
    demo.add_argument("--api-key", help="a key of tenant 'demo' (default: made with the stack's owner role)")
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
    warn_unknown_variables(os.environ)
    try:
        result: int = args.func(args, settings)
    except (MemstreamError, SchemaError) as exc:  # an operator's error, said in one line
        logging.getLogger("memstream").error("%s", exc)
        return 1
    return result

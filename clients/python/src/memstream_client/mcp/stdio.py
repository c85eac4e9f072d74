"""``memstream mcp``: the MCP server on stdio, for desktop agents and IDEs, talking to a gateway
through the SDK with one API key (the key's tenant, agent and scopes decide what it may do)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from mcp.server.mcpserver import MCPServer

from memstream_client import AsyncMemstream
from memstream_client.mcp.server import Defaults, build_server


def stdio_server(client: AsyncMemstream, defaults: Defaults | None = None) -> MCPServer:
    """The server with one client for every call."""
    return build_server(lambda _ctx: client, defaults=defaults)


def parser(prog: str = "memstream mcp") -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=prog,
        description="Serve memstream's memory tools over MCP on stdio (for desktop agents and IDEs).",
    )
    p.add_argument("--base-url", help="the gateway (default: $MEMSTREAM_BASE_URL)")
    p.add_argument("--api-key", help="an API key (default: $MEMSTREAM_API_KEY; prefer the variable)")
    p.add_argument("--user-id", default=os.environ.get("MEMSTREAM_USER_ID"), help="default user of every tool")
    p.add_argument("--agent-id", default=os.environ.get("MEMSTREAM_AGENT_ID"), help="default agent (unbound keys)")
    p.add_argument("--project-id", default=os.environ.get("MEMSTREAM_PROJECT_ID"), help="default project")
    p.add_argument(
        "--session-id",
        default=os.environ.get("MEMSTREAM_SESSION_ID"),
        help="default session, and the only one permissions are checked in (default: mcp, shared)",
    )
    return p


def main(argv: Sequence[str] | None = None, *, prog: str = "memstream mcp") -> int:
    args = parser(prog).parse_args(argv)
    api_key = args.api_key or os.environ.get("MEMSTREAM_API_KEY")
    if not api_key:
        print(f"{prog}: no API key: pass --api-key or set MEMSTREAM_API_KEY", file=sys.stderr)
        return 2
    for flag, value in (("--project-id", args.project_id), ("--session-id", args.session_id)):
        if value is not None and not value.strip():  # a binding that binds nothing: say so
            print(f"{prog}: {flag} is empty (leave it out for none)", file=sys.stderr)
            return 2
    defaults = Defaults(
        user_id=args.user_id, agent_id=args.agent_id, project_id=args.project_id, session_id=args.session_id
    )
    client = AsyncMemstream(base_url=args.base_url, api_key=api_key)
    stdio_server(client, defaults).run(transport="stdio")
    return 0

"""The memstream MCP server (``pip install 'memstream-client[mcp]'``): ``build_server`` for any
transport, ``main`` for ``memstream mcp`` on stdio."""

from memstream_client.mcp.server import DEFAULT_HEADERS, Defaults, MemoryTurn, build_server
from memstream_client.mcp.stdio import main, stdio_server

__all__ = ["DEFAULT_HEADERS", "Defaults", "MemoryTurn", "build_server", "main", "stdio_server"]

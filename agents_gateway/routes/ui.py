"""``/ui``: the memory explorer, a single page served from the package's static files.

The page holds no data: it asks the person for an API key and calls the ``/v1`` endpoints with
it, so ``/ui`` needs no key (the request guard authenticates ``/v1`` and ``/mcp`` only). Every
answer under ``/ui`` — a file, a 404, a 405 — carries a strict Content-Security-Policy (no
inline script, no eval, nothing from another origin), ``nosniff`` and ``no-referrer``: memory
content is untrusted, and the page renders it as text only. Nothing is built or downloaded at
run time; the files are read once from the package and kept in memory. None of these routes
is in the OpenAPI document.
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass
from importlib import resources

from fastapi import APIRouter, Request
from fastapi.routing import APIRoute
from starlette.datastructures import MutableHeaders
from starlette.exceptions import HTTPException
from starlette.responses import Response
from starlette.types import Message, Receive, Scope, Send

from agents_gateway.errors import error_response

#: The policy of every /ui answer: the page's own files only, styles from files (no inline
#: ``style`` attributes or elements), images from files or ``data:``, fetches to the gateway.
CONTENT_SECURITY_POLICY = "; ".join(
    (
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data:",
        "connect-src 'self'",
        "font-src 'self'",
        "object-src 'none'",
        "frame-ancestors 'none'",
        "base-uri 'none'",
        "form-action 'none'",
    )
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cross-Origin-Opener-Policy": "same-origin",
}
#: The package folder of the page's files, and the types it may serve (anything else is a 404).
STATIC = "static"
MEDIA_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
    ".png": "image/png",
}
INDEX = "index.html"


@dataclass(frozen=True)
class Asset:
    body: bytes
    media_type: str
    etag: str


@functools.cache
def assets() -> dict[str, Asset]:
    """Every file of the page by its path under /ui/ (read once, on the first request)."""
    found: dict[str, Asset] = {}
    pending = [(resources.files("agents_gateway.ui").joinpath(STATIC), "")]
    while pending:
        folder, prefix = pending.pop()
        for entry in folder.iterdir():
            name = f"{prefix}{entry.name}"
            if entry.is_dir():
                pending.append((entry, f"{name}/"))
                continue
            media_type = MEDIA_TYPES.get("." + entry.name.rpartition(".")[2])
            if media_type is None:
                continue
            body = entry.read_bytes()
            found[name] = Asset(body, media_type, '"' + hashlib.sha256(body).hexdigest()[:32] + '"')
    return found


class SecuredRoute(APIRoute):
    """A route whose every answer carries ``SECURITY_HEADERS``, its errors (405) included:
    Starlette raises those from ``handle``, to be answered outside the route."""

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def secured(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in SECURITY_HEADERS.items():
                    headers[name] = value
            await send(message)

        try:
            await super().handle(scope, receive, secured)
        except HTTPException as exc:
            headers = dict(exc.headers or {})
            if exc.status_code == 405:
                headers["Allow"] = ", ".join(sorted(self.methods or ()))
            await error_response(exc.status_code, "http_error", str(exc.detail), headers=headers)(
                scope, receive, secured
            )


router = APIRouter(tags=["ui"], route_class=SecuredRoute, include_in_schema=False)


def _serve(request: Request, name: str) -> Response:
    asset = assets().get(name)
    if asset is None:
        return error_response(404, "not_found", "no such file of the memory explorer")
    headers = {"ETag": asset.etag, "Cache-Control": "no-cache"}  # revalidated, so an upgrade shows at once
    if asset.etag in request.headers.get("if-none-match", ""):
        return Response(status_code=304, headers=headers)
    return Response(asset.body, media_type=asset.media_type, headers=headers)


@router.get("/ui", summary="The memory explorer")
async def page(request: Request) -> Response:
    return _serve(request, INDEX)


@router.get("/ui/{asset:path}", summary="A file of the memory explorer")
async def page_file(request: Request, asset: str) -> Response:
    """A file by its path; ``/ui/`` (no file) and a folder are 404s, as every trailing slash is."""
    return _serve(request, asset)

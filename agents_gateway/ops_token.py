"""The operational endpoints behind a token of their own (``MEMSTREAM_OPS_TOKEN``).

``/metrics`` holds deployment-wide counts and the process's internals, and the API
document (``/openapi.json``, and ``/docs`` and ``/redoc`` when they are served) maps every
endpoint: neither is for the public. When the token is set, these paths answer only a request
carrying ``Authorization: Bearer <token>`` (compared in constant time); any other gets a 401 in
the gateway's error shape. The probes (``/healthz``, ``/readyz``, ``/readyz/workers``) stay
open: orchestrators call them without credentials. Unset, nothing changes. API keys are not
accepted here, nor is the token anywhere else: the two never stand in for each other.

``RequestGuard`` (``agents_gateway/limits.py``) calls :func:`ops_refusal` before anything else
of the request is looked at.
"""

from __future__ import annotations

import hmac

from pydantic import SecretStr
from starlette.datastructures import Headers
from starlette.responses import Response

from agents_gateway.errors import error_response

#: The paths the token guards (FastAPI's docs, its OAuth2 redirect page and the document itself).
OPS_PATHS = frozenset({"/metrics", "/openapi.json", "/docs", "/docs/oauth2-redirect", "/redoc"})


def operational(path: str) -> bool:
    """Whether ``path`` is one the ops token guards."""
    return path in OPS_PATHS


def ops_refusal(headers: Headers, token: SecretStr) -> Response | None:
    """None when the request carries the token, else the 401."""
    scheme, _, presented = headers.get("authorization", "").partition(" ")
    expected = token.get_secret_value().encode()
    # compare_digest takes as long for any presented value of a given length: no timing oracle on
    # the token's characters (its length is not secret: MEMSTREAM_OPS_TOKEN's minimum is public).
    if scheme.lower() == "bearer" and hmac.compare_digest(presented.strip().encode(), expected):
        return None
    return error_response(
        401, "ops_token_required",
        "this operational endpoint needs Authorization: Bearer <MEMSTREAM_OPS_TOKEN> (an API key is not accepted)",
        headers={"WWW-Authenticate": 'Bearer realm="memstream-ops"'},
    )  # fmt: skip

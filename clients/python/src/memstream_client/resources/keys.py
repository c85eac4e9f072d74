"""``client.whoami()``: the key the client calls with."""

from __future__ import annotations

from memstream_client.endpoint import RequestParts, endpoint
from memstream_client.models.keys import Identity


@endpoint("GET", "/v1/whoami", response=Identity)
def whoami() -> RequestParts:
    """The client's key: its tenant, its id, the agent it is bound to (None for a tenant-level
    key) and its scopes. Any valid key may ask."""
    return RequestParts()

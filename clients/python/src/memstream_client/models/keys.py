"""The calling key (gateway schema ``WhoamiOut``)."""

from __future__ import annotations

from memstream_client.models.base import Model


class Identity(Model):
    """Who the client's key is: its tenant, its agent (None: a tenant-level key), its scopes."""

    tenant_id: str
    #: The key's id (never its secret).
    key_id: str
    agent_id: str | None
    #: Sorted: some of ``ingest``, ``read``, ``admin``, ``system``.
    scopes: list[str]

"""The stores: Postgres (``postgres/``) and Redis (``redis/``).

- ``postgres/``: migrations, the connection pool and tenant transactions (row-level
  security), and one module per thing written — the event log, episodes, facts, skills,
  audit, erasure, tenant settings, replay runs; ``postgres/queries/`` holds the read-only
  queries (retrieval, facts as of a moment, the graph, the audit log, the replay's reads);
- ``redis/``: the session buffers, rate limits, event-id claims, and every key name
  (``redis/keys.py``: one module, so no two features can collide on a key).

Sinks import ``memstream`` and ``schemas`` only: the stream workers and the gateway call
them, never the other way round.
"""

"""Sink stages: what a decoded batch does to the stores, one module per stage.

A stage writes idempotently (keyed by event id) and raises to have its batch retried or
its bad event isolated (``base.py``). Stages know nothing of Kafka consumption: the Faust
agents that feed them are in ``streams/faust_agents.py``.

- ``event_log``: every accepted turn appended to the durable history (ingest worker);
- ``episodes``: turns embedded and upserted as episodic memory (ingest worker);
- ``buffer``: the session buffers in Redis, with compaction requests (ingest worker);
- ``extract``: fact extraction, publishing to ``memstream.facts.v1`` (memory worker);
- ``procedures``: tool outcomes into skills and lessons (memory worker);
- ``facts``: facts embedded and applied to semantic memory and the graph (memory worker);
- ``summaries``: a session's overflow folded into its rolling summary (memory worker).
"""

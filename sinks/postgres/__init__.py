"""Postgres: the durable store of the event log and every memory projection (see ``sinks/__init__.py``)."""

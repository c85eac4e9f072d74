"""Replay: re-derive the memory projections from the durable event log in Postgres.

The event log's rows are fed, in log order and in batches, to the same stages the live workers
run (``streams.stages.base.process_batch``: decode, validate, redact, then episodes, fact
extraction, procedures — and the session buffer with ``--buffers``); extracted facts go
straight to the same fact sink the facts agent uses, and logged compactions are re-applied
by the same maintenance code. Only where a stage reads *live state* (the Redis buffer as
extraction context) does the replay read the log instead.

- ``scope.py``: which events (tenant, user, time range);
- ``resources.py``, ``stages.py``, ``pipeline.py``: the pipeline a replay runs;
- ``runner.py``: runs, checkpoints, catch-up, the switch, verification;
- ``digests.py``, ``progress.py``: digests of the projections, progress on stderr.
"""

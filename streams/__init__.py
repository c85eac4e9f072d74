"""The stream processors: two Faust workers that turn the event log into memory.

- ``app.py`` / ``memory_app.py``: the ingest worker and the long-term memory worker (each
  its own consumer group), built from settings;
- ``faust_agents.py``: which topic each Faust agent consumes and what it does with a batch,
  all through the one loop of ``consume.py`` (decode or dead-letter, handle, acknowledge);
- ``stages/``: the sink stages the agents write through;
- ``retry.py``, ``defects.py``, ``deadletter.py``, ``parking.py``: how failures are waited
  out, made loud, set aside or parked — never lost;
- ``replay/``: rebuilding memory from the event log; ``maintenance.py``: expiry, compaction
  and forgetting; ``worker.py``: running a worker; ``tansu.py``, ``broker_reset.py``: the
  embedded broker's workarounds.

Streams import ``sinks``, ``memstream`` and ``schemas``, never the gateway or the operator
commands (``make lint`` checks it).
"""

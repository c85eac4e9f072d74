"""Read-only queries: what the gateway's read path, the replay and the audit consumers read.

Nothing here writes. The modules beside this package (``sinks/postgres/*.py``) write, with
the reads a write needs (a policy before it changes, the versions a fact supersedes).

- ``retrieval``: vector and full-text candidates over episodes, facts and skills;
- ``facts``: a user's facts now or as of a moment, and an entity's history;
- ``graph``: entities within N hops;
- ``skills``: a user's skills as the reader may see them, best first for a task, or by name;
- ``timeline``: a user's episodes newest first, with where each came from;
- ``users``: the tenant's users the reader may see, with their counts;
- ``audit``: the audit log in order, or newest first;
- ``replay_log``: the event log as a replay reads it;
- ``digest``: order-independent digests of memory tables (replay verification).
"""

"""Type aliases shared by the models and the resources: the values the gateway takes by name."""

from __future__ import annotations

from typing import Literal

#: Who spoke a turn (``system`` needs a key with the ``system`` scope).
Role = Literal["user", "assistant", "tool", "system"]
#: A tool turn's outcome.
ToolStatus = Literal["success", "failure", "pending"]
#: A reported tool or skill outcome (``tool_events.record``).
Outcome = Literal["success", "failure"]
#: The kinds of memory search finds.
MemoryType = Literal["episodic", "procedural", "summary", "fact", "skill"]
#: The kinds of episode (a user's memories as a timeline).
EpisodeType = Literal["episodic", "procedural", "summary"]
#: Where a fact holds.
FactScope = Literal["global", "project", "session"]
#: How a query is split into sub-queries before retrieval.
Decompose = Literal["off", "rules", "llm"]
#: Which graph edges to follow.
Direction = Literal["out", "in", "both"]
#: What a permission rule does.
Effect = Literal["ALLOW", "BLOCK"]
#: The HTTP methods the gateway's endpoints use.
Method = Literal["GET", "POST", "PUT", "DELETE"]

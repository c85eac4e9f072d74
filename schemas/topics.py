"""Topic names and the dead-letter topic's header keys: part of the event contract, as the
Avro schemas are (dotted, versioned constants). No Faust here: the gateway and the operator
commands read them without the stream processor. Declaring and creating topics is
``streams/topics.py``'s.
"""

from __future__ import annotations

TURNS = "memstream.turns.v1"
DLQ = "memstream.dlq.v1"
AUDIT = "memstream.audit.v1"
FACTS = "memstream.facts.v1"
COMPACTION = "memstream.compaction.v1"
#: Turns whose extraction the LLM could not do yet, parked for a later try (streams/parking.py).
RETRY = "memstream.retry.v1"

#: DLQ record headers (bytes values).
DLQ_REASON = "memstream.dlq.reason"
DLQ_ERROR = "memstream.dlq.error"
DLQ_SOURCE_TOPIC = "memstream.dlq.source.topic"
DLQ_SOURCE_PARTITION = "memstream.dlq.source.partition"
DLQ_SOURCE_OFFSET = "memstream.dlq.source.offset"
DLQ_STAGE = "memstream.dlq.stage"
DLQ_FAILED_AT = "memstream.dlq.failed_at"

"""The event contract as Faust codecs (``value_serializer="memstream.turn"``)."""

from __future__ import annotations

from typing import Any

from faust.serializers import codecs

from schemas.codec import AvroCodec
from schemas.registry import AUDIT_RECORD, COMPACTION_REQUEST, FACT_EVENT, TURN_EVENT

#: Faust serializer names of our record types.
CODEC_NAMES = {
    TURN_EVENT: "memstream.turn",
    AUDIT_RECORD: "memstream.audit",
    FACT_EVENT: "memstream.fact",
    COMPACTION_REQUEST: "memstream.compaction",
}


class FaustAvroCodec(codecs.Codec):
    """Adapts :class:`AvroCodec` to Faust's codec interface."""

    def __init__(self, name: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.avro = AvroCodec(name)

    def _dumps(self, obj: Any) -> bytes:
        return self.avro.encode(obj)

    def _loads(self, s: bytes) -> Any:
        return self.avro.decode(s)


def register_faust_codecs() -> None:
    """Register every record type with Faust; idempotent."""
    for name, codec_name in CODEC_NAMES.items():
        codecs.register(codec_name, FaustAvroCodec(name))

"""The metadata request the embedded broker's clients send (``streams/topics.py``): from
version 4 on it says not to auto-create, unless a caller asks for creation itself."""

from __future__ import annotations

from aiokafka.protocol.metadata import MetadataRequest_v0, MetadataRequest_v4, MetadataRequest_v5

from streams.topics import MetadataRequestWithoutAutoCreation


def test_versions_with_the_flag_say_no_auto_creation() -> None:
    for version in (MetadataRequest_v4, MetadataRequest_v5):
        built = MetadataRequestWithoutAutoCreation(["memstream.turns.v1"]).build(version)
        assert (built.topics, built.allow_auto_topic_creation) == (["memstream.turns.v1"], False)


def test_an_explicit_request_for_creation_is_kept() -> None:
    built = MetadataRequestWithoutAutoCreation(["t"], allow_auto_topic_creation=True).build(MetadataRequest_v5)
    assert built.allow_auto_topic_creation is True


def test_older_versions_are_unchanged() -> None:
    assert MetadataRequestWithoutAutoCreation(None).build(MetadataRequest_v0).topics == []

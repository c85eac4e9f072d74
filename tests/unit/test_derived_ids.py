"""Ids derived from several texts never collide because of a separator inside one of them."""

import uuid

from sinks.postgres.facts import edge_id
from sinks.postgres.skills import derived_skill_id


def test_edge_ids_keep_triples_apart_whatever_their_texts_hold() -> None:
    fact = uuid.uuid4()
    assert edge_id(fact, "a|b", "c", "d") != edge_id(fact, "a", "b|c", "d")
    assert edge_id(fact, "a\\", "|b", "c") != edge_id(fact, "a\\|", "b", "c")
    assert edge_id(fact, "x", "uses", "y") == edge_id(fact, "x", "uses", "y")


def test_skill_ids_are_per_tenant_user_and_name() -> None:
    assert derived_skill_id("t", "u", "deploy") != derived_skill_id("t", "v", "deploy")
    assert derived_skill_id("t", "u", "deploy") == derived_skill_id("t", "u", "deploy")

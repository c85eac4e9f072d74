"""Every Redis key is built from an unambiguous encoding of its parts (sinks/redis/keys.py)."""

from urllib.parse import unquote

from hypothesis import example, given, settings
from hypothesis import strategies as st

from sinks.redis.keys import (
    buffer_key,
    escape,
    grant_key,
    principal_bucket_keys,
    rate_limit_key,
    redis_key,
    summary_key,
)

# Any text, with the characters that could break a naive encoding made likely.
part = st.lists(
    st.sampled_from(["a", "b", ":", "%", "{", "}", "3A", "%3A", " ", "\x00", "é"])
    | st.characters(exclude_categories=("Cs",)),
    max_size=8,
).map("".join)
triple = st.tuples(part, part, part)


def hash_tag(key: str) -> str:
    """What Redis Cluster hashes: between the first '{' and the next '}'."""
    start = key.index("{")
    return key[start + 1 : key.index("}", start + 1)]


@settings(derandomize=True, max_examples=500)
@given(triple, triple)
@example(("acme", "u", "corp:s1"), ("acme:corp", "u", "s1"))  # the attacker's collision (issue 10)
@example(("a", "b:c", "d"), ("a:b", "c", "d"))
@example(("a%3A", "b", "c"), ("a:", "b", "c"))
def test_distinct_buffers_never_share_a_key(one: tuple[str, str, str], other: tuple[str, str, str]) -> None:
    if one != other:
        assert buffer_key(*one) != buffer_key(*other)
        assert summary_key(*one) != summary_key(*other)


@settings(derandomize=True, max_examples=300)
@given(part, part, part, part)
@example("acme", "corp:s1", "acme:corp", "s1")
def test_distinct_sessions_never_share_a_grant(tenant_a: str, session_a: str, tenant_b: str, session_b: str) -> None:
    if (tenant_a, session_a) != (tenant_b, session_b):
        assert grant_key(tenant_a, session_a, "h") != grant_key(tenant_b, session_b, "h")


@settings(derandomize=True, max_examples=300)
@given(triple)
def test_a_buffers_keys_share_one_hash_slot_made_of_its_own_parts(ref: tuple[str, str, str]) -> None:
    tags = {hash_tag(buffer_key(*ref)), hash_tag(summary_key(*ref))}
    assert tags == {":".join(escape(p) for p in ref)}
    for encoded in tags:
        assert "{" not in encoded and "}" not in encoded


@settings(derandomize=True, max_examples=300)
@given(part)
def test_escaping_is_reversible_and_leaves_no_separator(value: str) -> None:
    encoded = escape(value)
    assert ":" not in encoded and "{" not in encoded and "}" not in encoded
    assert not any(ch.isspace() or not ch.isprintable() for ch in encoded)
    assert unquote(encoded, errors="strict") == value  # percent-escapes are the UTF-8 bytes


def test_every_space_is_escaped_whatever_its_script() -> None:
    """The quick check for a part needing no escape looks for the ASCII space only: every
    other space (no-break, ideographic, line separators) is not printable, so caught too."""
    spaces = [chr(c) for c in range(0x110000) if chr(c).isspace()]
    assert len(spaces) > 20
    for space in spaces:
        encoded = "".join(f"%{byte:02X}" for byte in space.encode())
        assert escape(f"a{space}b") == f"a{encoded}b"


def test_a_lone_surrogate_is_escaped_too() -> None:
    assert escape("\ud800") == "%ED%A0%80" and escape("\ud800") != escape("\ud801")


def test_kinds_and_scopes_keep_keys_apart() -> None:
    assert rate_limit_key("key", "x") != rate_limit_key("tenant", "x")
    key, tenant = principal_bucket_keys("acme", "0123456789abcdef")
    assert key != tenant and key.split("}")[0] == tenant.split("}")[0], "one cluster slot: the tenant's"
    assert principal_bucket_keys("acme:x", "k")[1] != principal_bucket_keys("acme", "x:k")[1]
    assert rate_limit_key("addr", "tenant") not in principal_bucket_keys("tenant", "k")
    assert redis_key("buf", ("a",)) != redis_key("bufsum", ("a",))
    assert buffer_key("acme", "u", "s-9") == "ms:buf:{acme:u:s-9}"

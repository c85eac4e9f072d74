"""A request head that could be framed two ways is refused (``agents_gateway/framing.py``); the
served gateway's answer to each is in ``tests/integration/test_gateway_limits.py``."""

from __future__ import annotations

import h11
import pytest

from agents_gateway.framing import UnambiguousConnection, head_refusal

START = b"POST /v1/turns HTTP/1.1\r\nhost: gateway\r\n"

AMBIGUOUS = {
    "content-length and transfer-encoding": b"content-length: 5\r\ntransfer-encoding: chunked\r\n",
    "transfer-encoding and content-length": b"Transfer-Encoding: chunked\r\nContent-Length: 5\r\n",
    "content-length twice, the same value": b"content-length: 5\r\ncontent-length: 5\r\n",
    "content-length as a list": b"content-length: 5, 5\r\n",
    "transfer-encoding twice": b"transfer-encoding: chunked\r\ntransfer-encoding: chunked\r\n",
    "transfer-encoding as a list": b"transfer-encoding: chunked, chunked\r\n",
    "another coding": b"transfer-encoding: gzip, chunked\r\n",
    "identity": b"transfer-encoding: identity\r\n",
    "a near miss": b"transfer-encoding: xchunked\r\n",
    "obs-fold": b"x-note: a\r\n b\r\n",
    "obs-fold with a tab": b"transfer-encoding:\r\n\tchunked\r\n",
    "a space before the colon": b"transfer-encoding : chunked\r\n",
    "a tab before the colon": b"content-length\t: 5\r\n",
    "an underscore in the name": b"content_length: 5\r\n",
    "an underscore, transfer-encoding": b"Transfer_Encoding: chunked\r\n",
    "a lone LF": b"x-note: a\nx-other: b\r\n",
    "a lone CR": b"x-note: a\rtransfer-encoding: chunked\r\n",
}


@pytest.mark.parametrize("fields", AMBIGUOUS.values(), ids=AMBIGUOUS.keys())
def test_an_ambiguous_head_is_refused(fields: bytes) -> None:
    assert head_refusal(START + fields + b"\r\n") is not None


def test_ends_of_the_head_other_than_crlf_are_refused() -> None:
    assert head_refusal(b"GET / HTTP/1.1\nhost: gateway\n\n") is not None
    assert head_refusal(b"GET / HTTP/1.1\r\nhost: gateway\r\n\n") is not None
    assert head_refusal(b"GET / HTTP/1.1\r\nhost: gateway\n\r\n") is not None


def test_transfer_encoding_in_http_1_0_is_refused() -> None:
    assert head_refusal(b"POST /v1/turns HTTP/1.0\r\ntransfer-encoding: chunked\r\n\r\n") is not None


@pytest.mark.parametrize(
    "fields",
    [
        b"",
        b"content-length: 5\r\n",
        b"transfer-encoding: chunked\r\n",
        b"Transfer-Encoding: Chunked\r\n",  # coding names are case-insensitive
        b"content-length:5\r\nx-list: a, b\r\nx-spaced:  a b  \r\n",
        b"x-content-length: 5\r\nx-transfer-encoding: gzip\r\n",
    ],
)
def test_a_plain_head_passes(fields: bytes) -> None:
    assert head_refusal(START + fields + b"\r\n") is None


def test_only_the_first_head_is_read_and_an_incomplete_one_waits() -> None:
    body = b"x-note: a\r\n b\r\n\r\n"  # what follows the head (a body) is not a head's concern
    assert head_refusal(START + b"content-length: 17\r\n\r\n" + body) is None
    assert head_refusal(START + b"content-length: 5\r\ntransfer-encoding: chunked\r\n") is None


def test_the_connection_refuses_before_h11_reads_the_head() -> None:
    plain = UnambiguousConnection(h11.SERVER)
    plain.receive_data(START + b"content-length: 2\r\n\r\n{}")
    assert isinstance(plain.next_event(), h11.Request)
    smuggling = UnambiguousConnection(h11.SERVER)
    smuggling.receive_data(START + b"content-length: 5\r\ntransfer-encoding: chunked\r\n\r\n0\r\n\r\n")
    with pytest.raises(h11.RemoteProtocolError):
        smuggling.next_event()
    assert smuggling.refusal == "both content-length and transfer-encoding"


def test_a_pipelined_request_is_checked_too() -> None:
    """The second request of a connection arrives with the first and is read after its answer."""
    connection = UnambiguousConnection(h11.SERVER)
    connection.receive_data(b"GET /healthz HTTP/1.1\r\nhost: g\r\n\r\n" + START + b"x-note: a\r\n b\r\n\r\n")
    assert isinstance(connection.next_event(), h11.Request)
    assert isinstance(connection.next_event(), h11.EndOfMessage)
    connection.send(h11.Response(status_code=200, headers=[("content-length", "0")]))
    connection.send(h11.EndOfMessage())
    connection.start_next_cycle()
    with pytest.raises(h11.RemoteProtocolError):
        connection.next_event()
    assert connection.refusal == "a header folded over two lines (obs-fold)"


def test_a_head_sent_a_byte_at_a_time_is_checked_when_it_ends() -> None:
    connection = UnambiguousConnection(h11.SERVER)
    for byte in START + b"content-length: 5\r\ncontent-length: 5\r\n":
        connection.receive_data(bytes([byte]))
        assert connection.next_event() is h11.NEED_DATA
    connection.receive_data(b"\r\n")
    with pytest.raises(h11.RemoteProtocolError):
        connection.next_event()

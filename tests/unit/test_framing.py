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


# --- chunked bodies ----------------------------------------------------------------------------

CHUNKED = START + b"transfer-encoding: chunked\r\n\r\n"


def body_events(body: bytes, *, step: int | None = None) -> list[object]:
    """What the connection reads of a chunked request with ``body`` (sent whole, or ``step``
    bytes at a time), up to its end."""
    connection = UnambiguousConnection(h11.SERVER)
    connection.receive_data(CHUNKED)
    assert isinstance(connection.next_event(), h11.Request)
    events: list[object] = []
    pieces = [body] if step is None else [body[i : i + step] for i in range(0, len(body), step)]
    for piece in pieces:
        connection.receive_data(piece)
        while (event := connection.next_event()) is not h11.NEED_DATA:
            events.append(event)
            if isinstance(event, h11.EndOfMessage):
                return events
    return events


AMBIGUOUS_BODIES = {
    "a lone LF after the last chunk": b"5\r\nhello\r\n0\r\n\n",
    "a trailer": b"5\r\nhello\r\n0\r\nx-note: a\r\n\r\n",
    "an obs-folded trailer": b"0\r\nx-note: a\r\n b\r\n\r\n",
    "a trailer ended by a lone LF": b"0\r\nx-note: a\n\n",
    "a lone CR in an extension": b"5;a\rb\r\nhello\r\n0\r\n\r\n",
    "a blank before the line end": b"5 \r\nhello\r\n0\r\n\r\n",
    "a blank after the size": b"5 ;a=b\r\nhello\r\n0\r\n\r\n",
    "an empty extension": b"5;\r\nhello\r\n0\r\n\r\n",
    "a size of 17 hex digits": b"00000000000000005\r\nhello\r\n0\r\n\r\n",
    "a size ended by a lone LF": b"5\nhello\r\n0\r\n\r\n",
    "a negative size": b"-5\r\nhello\r\n0\r\n\r\n",
    "a size with a prefix": b"0x5\r\nhello\r\n0\r\n\r\n",
    "an endless chunk line": b"5;" + b"a" * 2000,
}


@pytest.mark.parametrize("step", [None, 1])
@pytest.mark.parametrize("body", AMBIGUOUS_BODIES.values(), ids=AMBIGUOUS_BODIES.keys())
def test_a_chunked_body_framed_loosely_is_refused(body: bytes, step: int | None) -> None:
    with pytest.raises(h11.RemoteProtocolError):
        body_events(body, step=step)


@pytest.mark.parametrize("step", [None, 1, 3])
@pytest.mark.parametrize(
    "body",
    [
        b"0\r\n\r\n",
        b"5\r\nhello\r\n0\r\n\r\n",
        b"5;name=value;flag\r\nhello\r\n000\r\n\r\n",
        b'5;name="quoted value"\r\nhello\r\nA\r\n0123456789\r\n0\r\n\r\n',
        b"b\r\nhello world\r\n0\r\n\r\n",
    ],
)
def test_a_strictly_framed_chunked_body_is_read(body: bytes, step: int | None) -> None:
    events = body_events(body, step=step)
    assert isinstance(events[-1], h11.EndOfMessage) and events[-1].headers == []
    data = b"".join(e.data for e in events if isinstance(e, h11.Data))
    assert data in (b"", b"hello", b"hello0123456789", b"hello world")

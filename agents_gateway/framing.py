"""Where a request ends, read one way only: a request head that could be read two ways is
refused (400) and its connection closed, before h11 reads it.

A proxy in front of the gateway and the gateway must agree where each request ends. When a
head can be read two ways (RFC 9112 §2.2, §5.1, §5.2, §6.1, §6.3), a proxy that frames it one
way and the gateway the other way pass a second, hidden request (request smuggling). h11, the
parser uvicorn runs here, already refuses two different Content-Lengths, a repeated
Transfer-Encoding and any coding but ``chunked``; it tolerates the rest, and these are refused:

- Content-Length together with Transfer-Encoding (h11 reads the body as chunked and keeps
  the connection: the bytes a proxy framing by Content-Length took for the body are read as
  the next request);
- Content-Length more than once, even with the same value, or as a list (``5, 5``);
- Transfer-Encoding more than once, or anything but ``chunked`` (case aside), or in an
  HTTP/1.0 request (whose framing RFC 9112 says to treat as faulty);
- a header folded over two lines (obs-fold: a line that starts with a space or a tab), which
  h11 unfolds;
- whitespace between a header's name and its colon;
- a line ended by a lone LF (h11 takes it for CRLF) or holding a lone CR;
- a name that reads as a framing header once ``_`` is taken for ``-`` (``Content_Length``:
  some proxies and CGI-style servers read it so; h11 does not).

``UnambiguousConnection`` is h11's connection with that check in front of each request head;
``GuardedH11Protocol`` (``limits.py``) serves with it and answers the refusal in the error
shape, ``Connection: close``.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

import h11

#: Where h11 ends a request head (``h11/_receivebuffer.py``): the first empty line, LF or CRLF.
_HEAD_END = re.compile(rb"\n\r?\n")
#: A line end other than CRLF: an LF without its CR, or a CR without its LF.
_LONE_CR_OR_LF = re.compile(rb"\r(?!\n)|(?<!\r)\n")
_FRAMING = (b"content-length", b"transfer-encoding")


def head_refusal(received: bytes) -> str | None:
    """Why the request head at the start of ``received`` can be read two ways, or None (also
    when the head is not complete yet: h11 waits for the rest, and it is checked then)."""
    end = _HEAD_END.search(received)
    if end is None:
        return None
    head = received[: end.end()]
    if _LONE_CR_OR_LF.search(head):
        return "a line of the request head ends without CRLF"
    request_line, *lines = head[: -len(b"\r\n\r\n")].split(b"\r\n")
    names: Counter[bytes] = Counter()
    values: dict[bytes, bytes] = {}
    for line in lines:
        if line[:1] in (b" ", b"\t"):
            return "a header folded over two lines (obs-fold)"
        name, colon, value = line.partition(b":")
        if not colon:
            continue  # not a header at all: h11 refuses it
        if name != name.rstrip(b" \t"):
            return "whitespace between a header name and its colon"
        lowered = name.lower()
        if lowered not in _FRAMING and lowered.replace(b"_", b"-") in _FRAMING:
            return f"{name.decode('latin-1')}: a framing header's name with an underscore"
        names[lowered] += 1
        values[lowered] = value.strip(b" \t")
    for framing in _FRAMING:
        if names[framing] > 1:
            return f"{framing.decode()} more than once"
    if names[b"content-length"] and b"," in values[b"content-length"]:
        return "content-length as a list"
    if not names[b"transfer-encoding"]:
        return None
    if names[b"content-length"]:
        return "both content-length and transfer-encoding"
    if values[b"transfer-encoding"].lower() != b"chunked":
        return "a transfer-encoding other than chunked"
    if request_line.endswith(b" HTTP/1.0"):
        return "transfer-encoding in an HTTP/1.0 request"
    return None


class UnambiguousConnection(h11.Connection):
    """h11's server connection, refusing a request head ``head_refusal`` finds ambiguous
    (``h11.RemoteProtocolError``, its reason kept in ``refusal``) before h11 reads it."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.refusal: str | None = None
        #: Whether an LF came since the head was last looked at: a head can only end with one,
        #: so a client sending its head a byte at a time costs one look per line, not per byte.
        self._new_line = False

    def receive_data(self, data: bytes) -> None:
        self._new_line = self._new_line or b"\n" in data
        super().receive_data(data)

    def start_next_cycle(self) -> None:
        super().start_next_cycle()
        self._new_line = True  # the next request may have arrived whole, with the last one

    def next_event(self) -> h11.Event | type[h11.NEED_DATA] | type[h11.PAUSED]:
        if self.their_state is h11.IDLE and self._new_line:
            self._new_line = False
            refusal = head_refusal(self.trailing_data[0])
            if refusal is not None:
                self.refusal = refusal
                raise h11.RemoteProtocolError(refusal, error_status_hint=400)
        return super().next_event()

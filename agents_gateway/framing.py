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

A chunked body is framed one way only too (``StrictChunkedReader``): h11 ends the trailer
section at a lone LF (``0\r\n\n``), takes any byte but LF in a chunk extension (a lone CR
too) and blanks before a chunk line's CRLF, and unfolds obs-folded trailers; a proxy that
reads those otherwise passes what follows as a request of its own. So a chunk line is its
size in at most 16 hex digits, then extensions of tokens (a quoted value without CR or LF),
then CRLF; and the last chunk is followed by CRLF alone: trailers are refused (no client of
this API sends any).

``UnambiguousConnection`` is h11's connection with that check in front of each request head
and that reader for chunked bodies; ``GuardedH11Protocol`` (``limits.py``) serves with it and
answers the refusal in the error shape, ``Connection: close``.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any, cast

import h11
from h11._readers import READERS, ChunkedReader
from h11._receivebuffer import ReceiveBuffer
from h11._state import SEND_BODY

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


#: A chunk line as RFC 9112 §7.1 writes it (``chunk-ext`` without the blanks it tolerates).
_TOKEN = rb"[!#$%&'*+.^_`|~0-9A-Za-z-]+"
_CHUNK_LINE = re.compile(rb"[0-9A-Fa-f]{1,16}(?:;" + _TOKEN + rb"(?:=(?:" + _TOKEN + rb'|"[^"\r\n\\]*"))?)*\r\n')
#: The longest chunk line looked at before it must have ended.
MAX_CHUNK_LINE = 1024


class AmbiguousBody(h11.RemoteProtocolError):
    """A chunked body whose framing another parser could read otherwise."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason, error_status_hint=400)
        self.reason = reason


class StrictChunkedReader(ChunkedReader):
    """h11's chunked reader, refusing (``AmbiguousBody``) a chunk line that is not exactly
    ``_CHUNK_LINE`` and anything but CRLF after the last chunk, before h11 reads them."""

    def __call__(self, buf: ReceiveBuffer) -> h11.Data | h11.EndOfMessage | None:
        if self._reading_trailer:
            start = bytes(buf._data[:2])
            if start not in (b"", b"\r", b"\r\n"):
                raise AmbiguousBody("the last chunk is followed by trailers or a line end other than CRLF")
        elif self._bytes_in_chunk == 0 and not self._bytes_to_discard:
            window = bytes(buf._data[:MAX_CHUNK_LINE])
            end = window.find(b"\n")
            if end < 0 and len(window) >= MAX_CHUNK_LINE:
                raise AmbiguousBody(f"a chunk line longer than {MAX_CHUNK_LINE} bytes")
            if end >= 0 and _CHUNK_LINE.fullmatch(window[: end + 1]) is None:
                raise AmbiguousBody("a chunk line that is not a size in hex, token extensions and CRLF")
        return super().__call__(buf)


_CHUNKED: dict[str, Any] = {**cast(dict[str, Any], READERS[SEND_BODY]), "chunked": StrictChunkedReader}
_READERS: Any = {**READERS, SEND_BODY: _CHUNKED}


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
        try:
            return super().next_event()
        except AmbiguousBody as exc:
            self.refusal = exc.reason
            raise

    def _get_io_object(self, role: Any, event: Any, io_dict: Any) -> Any:
        """h11's reader or writer for the state, the chunked reader being ``StrictChunkedReader``."""
        return super()._get_io_object(role, event, _READERS if io_dict is READERS else io_dict)

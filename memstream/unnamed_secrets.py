"""Secrets that no name announces, for the privacy filter (``memstream.privacy`` runs these
finders among its detectors): found by what stands beside them, by a checksum, by what they
decode to, or by how random an assigned value is.

- ``aws_secret_spans``: an AWS secret access key near its access key id (``AKIA…``/``ASIA…``):
  40 characters of base64, upper and lower case, within ``AWS_REACH`` characters before or
  after the id, whatever the layout — same line, next line, ``credentials.csv``, the prompts
  of ``aws configure``, ``--output text``, INI, env, JSON, YAML (and an ``ASIA`` id's session
  token: a run of 100 or more).
- ``secret_column_spans``: the cells of a table's column whose header names a secret
  (``credentials.csv``'s ``Password`` and ``Secret access key``; any CSV, TSV, ``;`` or ``|``
  table), on the rows under it that have as many cells as the header.
- ``iban_spans``: IBANs, spaced or compact, in any case: only one that python-stdnum
  validates (the country's format and the mod-97 checksum) is taken.
- ``encoded_secret_spans``: a base64 blob (standard or URL-safe, wrapped over lines or not)
  that decodes to text in which the filter finds a secret (``echo YXdzX3Nl… | base64 -d``).
- ``random_value_spans``: a value assigned to any name (``JWT_SIGNING=…``, ``"signing": "…"``,
  ``seed: …``) that looks random: 20 or more characters, letters and digits in short runs,
  high entropy; not a path, a UUID, base64 of readable text, nor the value of a name that
  says it is a hash or an id (``commit``, ``sha256``, ``integrity``, ``request_id``, …).

Each finder reads the filter's normalised view and yields (start, end) spans of it, in order.
Each is linear in the text: runs are consumed possessively and read from their first
character, and what is read around a finding (a window, a name, a row) is bounded or read once
(``tests/unit/test_privacy_linear.py``).
"""

from __future__ import annotations

import base64
import binascii
import bisect
import math
import re
from collections import Counter
from collections.abc import Callable, Iterator

from stdnum import iban as stdnum_iban

Span = tuple[int, int]

# --- an AWS secret access key near its key id ---------------------------------------------------

#: How far from its key id (before or after) a secret access key is looked for: the id and the
#: secret of one credential stand within a few lines of each other in every layout AWS prints.
AWS_REACH = 256
_AWS_KEY_ID = re.compile(r"(?:AKIA|ASIA)[0-9A-Z]{16}")
_BASE64_RUN = re.compile(r"(?<![A-Za-z0-9+/])[A-Za-z0-9+/]++=*+")
_UPPER = re.compile(r"[A-Z]")
_LOWER = re.compile(r"[a-z]")
_DIGIT = re.compile(r"[0-9]")


def _aws_secret_like(run: str) -> bool:
    """40 characters of base64 (a secret access key), or 100 and more (an STS session token),
    with upper and lower case: not a hex digest nor a word in capitals."""
    size = len(run.rstrip("="))
    return (size == 40 or size >= 100) and _UPPER.search(run) is not None and _LOWER.search(run) is not None


def aws_secret_spans(text: str) -> Iterator[Span]:
    """Secret access keys within ``AWS_REACH`` characters of an access key id. The windows
    around the ids are merged first, so that each character is read once however many ids
    there are."""
    windows: list[list[int]] = []
    for key_id in _AWS_KEY_ID.finditer(text):
        lo, hi = max(0, key_id.start() - AWS_REACH), key_id.end() + AWS_REACH
        if windows and lo <= windows[-1][1]:
            windows[-1][1] = hi
        else:
            windows.append([lo, hi])
    for lo, hi in windows:
        for run in _BASE64_RUN.finditer(text, lo, min(len(text), hi)):
            if run.end() == hi and hi < len(text):
                run = _BASE64_RUN.match(text, run.start()) or run  # cut by the window: read it whole
            if _aws_secret_like(run.group()):
                yield run.span()


# --- a column whose header names a secret -------------------------------------------------------

_DELIMITERS = (",", "\t", ";", "|")
#: What every name of a secret contains (``memstream.privacy.secret_name`` says which are).
_SECRET_WORD_ANYWHERE = re.compile(r"pass|pwd|secret|token|key|credential|auth")
#: A header's cell: a short name of a few words (``Secret access key``, ``password``, ``DB_PASSWORD``).
_HEADER_CELL = re.compile(r"[A-Za-z][A-Za-z0-9 _.()/-]{0,63}+")
#: A Markdown table's rule under its header: ``|---|:---:|``.
_TABLE_RULE = re.compile(r"[ \t|:-]*+-[ \t|:-]*+")
_MAX_HEADER_WORDS = 4
#: A cell under a secret's header is taken when it is one word of 4 characters or more: a
#: credential, not a clause of prose that happened to follow a line with as many commas.
_BLANK = re.compile(r"[ \t]")
_MIN_CELL = 4
#: Words of prose, not of a column's name: ``Reset your password`` is a clause, ``DB password`` a header.
_PROSE_WORDS = frozenset(
    "a an the my your our their his her its this that to then and or but of for with from in on at is was are"
    " be been i you we they it please".split()
)
_MAX_SECRET_NAME_WORDS = 3


def _cells(text: str, start: int, stop: int, delimiter: str) -> list[Span]:
    """The cells of the line ``text[start:stop]`` (a quoted cell may hold the delimiter; ``""``
    is a quote inside it), each without its blanks and quotes."""
    cells: list[Span] = []
    pos = start
    while True:
        while pos < stop and text[pos] in " \t":
            pos += 1
        if pos < stop and text[pos] == '"':
            close = pos + 1
            while (close := text.find('"', close, stop)) >= 0 and text.startswith('""', close):
                close += 2
            if close >= 0:
                cells.append((pos + 1, close))
                following = text.find(delimiter, close, stop)
                if following < 0:
                    return cells
                pos = following + 1
                continue
        following = text.find(delimiter, pos, stop)
        end = stop if following < 0 else following
        cells.append(_unquoted(text, pos, end))
        if following < 0:
            return cells
        pos = following + 1


_ESCAPED_QUOTE = re.compile(r'\\*+"')


def _unquoted(text: str, start: int, end: int) -> Span:
    """A cell without its blanks, and without its quotes when they are escaped (a CSV line
    inside JSON: ``\\"host\\",\\"api_token\\"``)."""
    while end > start and text[end - 1] in " \t\r":
        end -= 1
    opening = _ESCAPED_QUOTE.match(text, start, end)
    if opening is not None and opening.end() - start > 1 and end - opening.end() > 0:
        closing = text.rfind('"', opening.end(), end)
        back = closing
        while back > opening.end() and text[back - 1] == "\\":
            back -= 1
        if closing == end - 1 and back < closing:
            return opening.end(), back
    return start, end


def _secret_columns(text: str, cells: list[Span], is_secret_name: Callable[[str], bool]) -> list[int]:
    """The columns of a header line that name a secret; empty when the line is no header (a
    cell that is not a short name, or no secret's name among them)."""
    columns = []
    for i, (start, end) in enumerate(cells):
        cell = text[start:end]
        if not cell:
            continue  # the edges of a Markdown table: | a | b |
        if not _HEADER_CELL.fullmatch(cell) or len(cell.split()) > _MAX_HEADER_WORDS:
            return []
        words = cell.split()
        if _PROSE_WORDS.intersection(w.lower() for w in words):
            return []
        if len(words) <= _MAX_SECRET_NAME_WORDS and is_secret_name("_".join(words)):
            columns.append(i)
    return columns


def secret_column_spans(text: str, lower: str, is_secret_name: Callable[[str], bool]) -> Iterator[Span]:
    """Under a header line whose cells are names and one names a secret, that column's cell of
    each following line with as many cells (a Markdown table's rule line is passed over), up
    to the first line that has not. Only a line with a secret's word can be a header; each line
    is read once, as a header or as a row. ``lower``: the text with its ASCII letters in lower
    case, offsets unchanged."""
    pos, size = 0, len(text)
    while (word := _SECRET_WORD_ANYWHERE.search(lower, pos)) is not None:
        line_start = text.rfind("\n", pos, word.start()) + 1 or pos
        stop = text.find("\n", word.end())
        stop = size if stop < 0 else stop
        following = stop + 1
        line = text[line_start:stop]
        delimiter = next((d for d in _DELIMITERS if d in line), None)
        if delimiter is not None:
            header = _cells(text, line_start, stop, delimiter)
            named = sum(1 for start, end in header if end > start)
            columns = _secret_columns(text, header, is_secret_name) if named >= 2 else []
            while columns and following < size:
                row_stop = text.find("\n", following)
                row_stop = size if row_stop < 0 else row_stop
                if _TABLE_RULE.fullmatch(text, following, row_stop):
                    following = row_stop + 1
                    continue
                row = _cells(text, following, row_stop, delimiter)
                if len(row) != len(header):
                    break
                for column in columns:
                    start, end = row[column]
                    if end - start >= _MIN_CELL and not _BLANK.search(text, start, end):
                        yield start, end
                following = row_stop + 1
        pos = following


# --- IBANs ----------------------------------------------------------------------------------------

#: Where an IBAN may start: a country's letters and two check digits at the start of a word.
_IBAN_HEAD_AT = re.compile(r"(?<![A-Za-z0-9])[A-Za-z]{2}[0-9]{2}")
_IBAN_HEAD = re.compile(r"[A-Za-z]{2}[0-9]{2}")
#: After a head: up to 30 more letters and digits, one blank or dash at most between two of them
#: (``DE89 3704 0044 0532 0130 00``), then the rest of the last group.
_IBAN_BODY = re.compile(r"(?:[ \t-]?+[A-Za-z0-9]){0,30}+[A-Za-z0-9]*+")
_IBAN_MIN, _IBAN_MAX = 15, 34


def _alnum_value(ch: str) -> int:
    """A character of an IBAN as its number for the mod-97 check (A=10 … Z=35)."""
    return ord(ch) - 48 if ch <= "9" else (ord(ch) & ~32) - 55


#: 10 to each power mod 97 (10 has order 96 mod 97).
_POW10 = tuple(pow(10, k, 97) for k in range(96))
_GROUP_SEPARATORS = " \t-"


def _ibans_in(text: str, start: int, stop: int) -> Iterator[Span]:
    """The valid IBANs of a run: each of its groups that starts like one is tried, at every
    group's end 15 to 34 characters on. The run is read once (each character's value mod 97
    as a prefix, so that any stretch's is two lookups); python-stdnum confirms what the
    mod-97 check passes (the country's length and format)."""
    ends: list[int] = []  # of each letter or digit: where it ends in the text
    digits = [0]  # before each: how many decimal digits the stretch so far reads as (a letter: two)
    mods = [0]  # before each: what the stretch so far reads as, mod 97
    heads: list[int] = []  # where each group starts
    group_ends: list[int] = []  # after where each group ends
    for i in range(start, stop):
        ch = text[i]
        if ch in _GROUP_SEPARATORS:
            if ends and (not group_ends or group_ends[-1] != len(ends)):
                group_ends.append(len(ends))
            continue
        if not ends or text[i - 1] in _GROUP_SEPARATORS:
            heads.append(len(ends))
        value = _alnum_value(ch)
        wide = value > 9
        mods.append((mods[-1] * (100 if wide else 10) + value) % 97)
        digits.append(digits[-1] + (2 if wide else 1))
        ends.append(i + 1)
    if not group_ends or group_ends[-1] != len(ends):
        group_ends.append(len(ends))

    def stretch(a: int, b: int) -> int:
        return (mods[b] - mods[a] * _POW10[(digits[b] - digits[a]) % 96]) % 97

    taken = 0
    for a in heads:
        where = ends[a] - 1
        if a < taken or not _IBAN_HEAD.match(text, where):
            continue
        head, head_digits = stretch(a, a + 4), digits[a + 4] - digits[a]
        found = -1
        k = bisect.bisect_left(group_ends, a + _IBAN_MIN)
        while k < len(group_ends) and group_ends[k] <= a + _IBAN_MAX:
            b = group_ends[k]
            k += 1
            if (stretch(a + 4, b) * _POW10[head_digits % 96] + head) % 97 != 1:
                continue
            if stdnum_iban.is_valid(text[where : ends[b - 1]].replace("\t", " "), check_country=False):
                found = b
        if found > 0:
            yield where, ends[found - 1]
            taken = found


def iban_spans(text: str) -> Iterator[Span]:
    """Valid IBANs, from any group that starts like one (``ref AB12 DE89 …``): the stretch
    each head may reach (34 letters and digits) is read, stretches that overlap as one."""
    window: list[int] = []
    for head in _IBAN_HEAD_AT.finditer(text):
        body = _IBAN_BODY.match(text, head.end())
        end = body.end() if body is not None else head.end()
        if window and head.start() < window[1]:
            window[1] = max(window[1], end)
            continue
        if window:
            yield from _ibans_in(text, *window)
        window = [head.start(), end]
    if window:
        yield from _ibans_in(text, *window)


# --- base64 that decodes to a secret --------------------------------------------------------------

#: A base64 run: the standard or the URL-safe alphabet, padded or not, 12 characters at least
#: before its padding (``pwd=x1234`` is ``cHdkPXgxMjM0``).
_ENCODED = re.compile(r"(?<![A-Za-z0-9+/_-])[A-Za-z0-9+/_-]{12,}+=*+")
#: Lines of base64 wrapped by ``base64`` (76), PEM (64) or anything else: a line that is a whole
#: number of base64 quanta, 40 characters or more, continues on the next.
_WRAP_MIN = 40
_ENCODED_LINE = re.compile(r"[A-Za-z0-9+/_-]++=*+")
_NEWLINE = re.compile(r"\r?\n")
_PRINTABLE_SHARE = 0.95


def decode_text(blob: str) -> str | None:
    """The text a base64 blob encodes (line breaks ignored), or None: not base64, not UTF-8,
    or not mostly printable."""
    compact = _NEWLINE.sub("", blob).rstrip("=")
    if len(compact) % 4 == 1:
        return None
    padded = compact + "=" * (-len(compact) % 4)
    urlsafe = "-" in compact or "_" in compact
    if urlsafe and ("+" in compact or "/" in compact):
        return None
    try:
        raw = base64.urlsafe_b64decode(padded) if urlsafe else base64.b64decode(padded, validate=True)
        decoded = raw.decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None
    printable = sum(1 for ch in decoded if ch.isprintable() or ch in "\t\r\n")
    return decoded if decoded and printable >= _PRINTABLE_SHARE * len(decoded) else None


def _encoded_blobs(text: str) -> Iterator[tuple[int, int, int]]:
    """Each base64 run, joined with the lines it is wrapped onto: (start, end, and where its
    last line starts when that line is shorter than the others — a word after a blob may be
    read as its last line, so the blob is also tried without it; else ``end``)."""
    pos = 0
    while (run := _ENCODED.search(text, pos)) is not None:
        start, end = run.span()
        line, last = end - start, end
        while line >= _WRAP_MIN and line % 4 == 0 and (newline := _NEWLINE.match(text, end)) is not None:
            more = _ENCODED_LINE.match(text, newline.end())
            if more is None:
                break
            last = end if more.end() - more.start() < line else more.end()
            end, line = more.end(), more.end() - more.start()
        yield start, end, last
        pos = end


def encoded_secret_spans(text: str, holds_secret: Callable[[str], bool]) -> Iterator[Span]:
    """Base64 blobs whose text ``holds_secret`` (the filter itself: what it would redact in
    the text it redacts in the text's encoding; each level of encoding is a quarter shorter,
    so encodings inside encodings cost no more than the text does once)."""
    for start, end, last in _encoded_blobs(text):
        if _UPPER.search(text, start, end) is None or _LOWER.search(text, start, end) is None:
            continue  # base64 of text has both cases; a lower-case path or identifier is none
        for stop in (end, last) if last < end else (end,):
            decoded = decode_text(text[start:stop])
            if decoded is not None:
                if holds_secret(decoded):
                    yield start, stop
                break


# --- an assigned value that looks random -----------------------------------------------------------

#: A value: letters, digits and what base64, URL-safe base64 and tokens use (``+/_-.~``, padding).
_VALUE = re.compile(r"(?<![A-Za-z0-9+/_.~-])[A-Za-z0-9+/_.~-]{20,}+=*+")
_VALUE_MIN = 20
#: Before a value, read backwards: its opening quote, a separator (``=``, ``:``, ``:=``, ``=>``)
#: with blanks (and a line break: YAML's ``name:⏎  value``), the name's closing quote (escaped in
#: JSON inside JSON), the name.
_ASSIGNED_BACK = re.compile(
    r"(?:[\"'`]\\*+)?+[ \t]*+(?:\n\r?+[ \t]*+)?+(?P<sep>=:|>=|=|:)[ \t]*+(?:[\"'`]\\*+)?+"
    r"(?P<name>[A-Za-z0-9_.-]{1,64}+)"
)
_NAME_REACH = 80
_BEFORE_VALUE = frozenset("\"'`\\ \t\r\n")
#: Words of a name that say its value is a digest, an identifier, a version or public, not a
#: secret (``_id``, ``_path``, ``_url``, ``cache_key``, … are the filter's own: ``not_secret_name``).
_NOT_SECRET_WORDS = frozenset(
    "id ids uuid guid oid sha sha1 sha256 sha384 sha512 shasum md5 crc crc32 hash digest checksum commit rev"
    " revision etag integrity fingerprint nonce ref public pub trace traceparent tracestate span correlation"
    " request version".split()
)
#: The key types an OpenSSH public key's blob starts with (``AAAAC3NzaC1lZDI1NTE5…``), after
#: their length.
_SSH_KEY_TYPES = (b"ssh-", b"ecdsa-", b"sk-")


def _ssh_public_key(value: str) -> bool:
    if not value.startswith("AAAA"):
        return False
    try:
        head = base64.b64decode(value[:12], validate=True)
    except (binascii.Error, ValueError):
        return False
    return head[4:].startswith(_SSH_KEY_TYPES)


_NAME_WORDS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|[0-9]+")
_UUID = re.compile(r"[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}")
#: The runs a value splits into: lower-case words, capitalised words, capitals, digits.
_RUNS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|[0-9]+")
#: What separates the words of an identifier or a path (``create_k8s_hpa``, ``k8s.client``); a
#: generated token has none (base62, hex) or few (base64's ``/``, URL-safe base64's ``-_``: one
#: in 32 characters).
_SEPARATORS = re.compile(r"[_.~/-]")
#: Of a value with separators, only its pieces of 8 characters or more are judged, and they must
#: add up to 12: the words of ``fDAQmx_DIO_PortWidth`` or ``k8s.client.BatchV1Api`` are too short
#: to be random, a token's pieces are not.
_PIECE_MIN, _PIECES_MIN = 8, 12
#: Words: runs of three letters or more with a vowel (``Part``, ``Converter``, ``dash``). They
#: hold most of an identifier's letters (``A2APartToGenAIPartConverter``, ``lbBoxLineDashSegLenF``)
#: and seldom more than half of a random token's.
_VOWEL = re.compile(r"[aeiouyAEIOUY]")
_MAX_WORD_SHARE = 0.6
#: The words are counted where the runs are longer than a random token's median (2.4).
_WORDY_MEAN_RUN = 2.4
#: Random text breaks into short runs (mean 1.9 characters in base62, 2.1 in hex, 2.4 in base36;
#: 2.7, 3.3 and 4.4 at the 99th percentile of 20 characters); words and identifiers into long
#: ones (``processIncomingWebhookEvent2``: 5.6).
_MAX_MEAN_RUN = 3.6
#: Bits per character: base62 of 20 characters has ~4.0, hex of 20 ~3.5; words and dates less.
_MIN_ENTROPY, _MIN_HEX_ENTROPY = 3.3, 3.0
_MIN_DISTINCT, _MIN_HEX_DISTINCT = 10, 8


def _entropy(value: str) -> float:
    size = len(value)
    return -sum(n / size * math.log2(n / size) for n in Counter(value).values())


def looks_random(value: str) -> bool:
    """A value a machine generated (a key, a token, a signing secret) rather than a word, an
    identifier, a path, a version or a date: 20 or more characters with letters and digits (or
    both cases), in short runs, with high entropy; judged on its pieces of 8 characters or more
    when it has separators. A UUID, an SSH public key or base64 of readable text is not."""
    core = value.rstrip("=")
    if len(core) < _VALUE_MIN or core.startswith(("/", "./", "../", "~", ".")) or _UUID.search(core):
        return False
    if _ssh_public_key(core):
        return False
    letters = _UPPER.search(core) is not None, _LOWER.search(core) is not None
    if not any(letters) or not (_DIGIT.search(core) is not None or all(letters)):
        return False
    if _HEX.fullmatch(core):
        if len(set(core)) < _MIN_HEX_DISTINCT or _entropy(core) < _MIN_HEX_ENTROPY:
            return False
    else:
        pieces = [p for p in _SEPARATORS.split(core) if len(p) >= _PIECE_MIN] if _SEPARATORS.search(core) else [core]
        joined = "".join(pieces)
        if len(joined) < _PIECES_MIN:
            return False
        runs = _RUNS.findall(joined)
        mean_run = sum(map(len, runs)) / len(runs) if runs else math.inf
        if mean_run > _MAX_MEAN_RUN:
            return False
        if mean_run > _WORDY_MEAN_RUN:
            in_words = sum(len(r) for r in runs if len(r) >= 3 and r[0].isalpha() and _VOWEL.search(r))
            if in_words > _MAX_WORD_SHARE * sum(len(r) for r in runs if r[0].isalpha()):
                return False
        if len(set(joined)) < _MIN_DISTINCT or _entropy(joined) < _MIN_ENTROPY:
            return False
    return decode_text(value) is None  # base64 of readable text says what it is: judged by that


#: Hexadecimal values are digests as often as keys (an SBOM's ``"content": "<sha-256>"``): one is
#: taken under a name written as configuration (``JWT_SIGNING``, ``app.jwt.signer``, ``sessionSeed``)
#: or a plain name that says what a key does (``hmac: …``, ``seed: …``).
_HEX = re.compile(r"[0-9a-f]++|[0-9A-F]++")
_HEX_SECRET_WORDS = frozenset(
    "sign signing signer signature hmac mac seed master session cookie license licence private encryption"
    " encrypt cipher otp totp mfa".split()
)


def _holds_hex_secret(name: str) -> bool:
    if any(c in name for c in "_.-") or (name.isupper() and len(name) > 1):
        return True
    words = _NAME_WORDS.findall(name)
    return len(words) > 1 or any(word.lower() in _HEX_SECRET_WORDS for word in words)


def _name_says_not_secret(name: str) -> bool:
    if name.lower().replace("-", "").replace("_", "") in _NOT_SECRET_WORDS:  # ETag, Trace-Parent
        return True
    return any(word.lower() in _NOT_SECRET_WORDS for word in _NAME_WORDS.findall(name))


def random_value_spans(text: str, not_secret_name: Callable[[str], bool]) -> Iterator[Span]:
    """Values that look random (``looks_random``) assigned to a name (``NAME=…``, ``name: …``,
    ``"name": "…"``, ``name => '…'``) that does not say it holds a digest, an id or anything
    else that is no secret (``not_secret_name``: the filter's ``password_file``, ``auth_url``,
    ``cache_key``, …). The name is read backwards from the value, at most ``_NAME_REACH``
    characters."""
    for value in _VALUE.finditer(text):
        start = value.start()
        before = start - 1
        while before >= 0 and text[before] in _BEFORE_VALUE:  # quotes, backslashes, blanks
            before -= 1
        if before < 0 or text[before] not in "=:>":
            continue  # not assigned: the common case, decided without reading the name
        back = text[max(0, start - _NAME_REACH) : start][::-1]
        assigned = _ASSIGNED_BACK.match(back)
        if assigned is None:
            continue
        if assigned.group("sep") == ":" and value.group().startswith("//"):
            continue  # a URL: scheme://…
        name = assigned.group("name")[::-1]
        if _name_says_not_secret(name) or not_secret_name(name) or not looks_random(value.group()):
            continue
        if _HEX.fullmatch(value.group()) and not _holds_hex_secret(name):
            continue
        yield value.span()

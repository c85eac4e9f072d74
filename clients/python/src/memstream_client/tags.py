# ruff: noqa: RUF001, RUF002, RUF003 - look-alike characters are what this module is about
"""Tags that frame memory for a model, found in untrusted text however they are spelled, and
defused there.

A block of quoted memory between ``<memstream-context>`` and ``</memstream-context>`` (the ADK
plugin's) or ``<PAST_CONVERSATIONS>`` tags (ADK's own preloaded memory) ends where a model
reads its closing tag, and a model reads far more spellings than the exact one. So each text is
first folded to a *skeleton* in which every spelling of a tag is the plain one:

- entity-encoded and escaped characters are decoded (``&lt;``, ``&LT;``, ``&#60;``,
  ``&#x3c;``, ``&lt`` as HTML reads it, ``\\u003c``, ``\\x3c``, ``%3C``; twice encoded too);
- compatibility forms become their plain letters (NFKD: full-width ``＜``, ``﹤``,
  mathematical and circled letters, ligatures), and accents are dropped;
- invisible characters are dropped: format characters (Unicode category Cf: zero-width
  space and joiners, soft hyphen, direction marks, tags), combining marks, fillers;
- Cyrillic, Greek, Armenian and Cherokee letters that look like Latin ones, small capitals and
  a few Latin look-alikes become those Latin letters (``_LOOKALIKES``, after Unicode's
  confusables list), and the angle brackets that look like ``<`` become it (``‹``, ``〈``,
  ``⟨``, ``❮``, ``˂``, ``ᐸ``: ``_BRACKETS``); then everything is lower case.

In the skeleton, a tag is a ``<``, then up to 16 characters that are neither letters nor
digits (``/``, spaces), then the tag's words with up to 8 such characters between them
(hyphens of every kind, spaces, underscores, or none), a ``0`` standing for an ``o``. The
original text is left as it was but for each such tag's bracket, which becomes ``[``: the
memory stays readable and no longer holds the tag, nor anything a model could take for its
bracket (a square bracket is no look-alike of ``<``, so defused text stays as it is when it is
defused again). Folding only ever finds more tags: a text without one is returned unchanged.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Sequence
from html.entities import html5

#: What each defused bracket becomes: no angle bracket, nor a look-alike of one.
DEFUSED_BRACKET = "["
#: The tags that frame memory for a model where memstream's adapters put it: the ADK plugin's
#: block (``<memstream-context>``) and ADK's preloaded memory (``<PAST_CONVERSATIONS>``, around
#: what ``MemstreamMemoryService.search_memory`` returns).
MEMORY_TAGS = (("memstream", "context"), ("past", "conversations"))

#: Letters that look like Latin ones, by the Latin letter they pass for (any case: the
#: skeleton is lower case). NFKD already folds full-width, mathematical and circled letters.
_LOOKALIKES = {
    "a": "аАαΑɑᎪꓮ",
    "b": "ВвβΒƅᏴꓐ",
    "c": "сСϲϹᏟꓚⅽ",
    "d": "ԁᎠꓓⅾ",
    "e": "еЕёЁεΕᎬꓰ℮ҽ",
    "g": "ɡᏀꓖ",
    "h": "һНнΗᎻꓧհ",
    "i": "іІїЇιΙɩıӏӀꓲ",
    "j": "јЈϳᎫꓙ",
    "k": "кКκΚᏦꓗ",
    "l": "ⅼꓡ",
    "m": "мМΜᎷꓟ",
    "n": "пΝηոꓠ",
    "o": "оОοΟօՕꓳ",
    "p": "рРρΡᏢꓑ",
    "q": "ԛԚ",
    "r": "гᏒꓣ",
    "s": "ѕЅᏚꓢ",
    "t": "тТτΤᎢꓔ",
    "u": "υս",
    "v": "νᏙꓦⅴ",
    "w": "ԝԜᎳꓪ",
    "x": "хХχΧꓫⅹ",
    "y": "уУΥꓬ",
    "z": "ΖᏃꓜ",
}
#: Small capitals (not folded by NFKD), by their letter.
_SMALL_CAPITALS = dict(zip("abcdefghijklmnopqrstuvwyz", "ᴀʙᴄᴅᴇꜰɢʜɪᴊᴋʟᴍɴᴏᴘꞯʀꜱᴛᴜᴠᴡʏᴢ", strict=True))
#: Angle brackets NFKD keeps, that look like ``<`` (full-width and small ones it folds itself).
_BRACKETS = "\u2039\u2329\u3008\u27e8\u276e\u02c2\u1438\u29fc\u276c\u2770"
_FOLD = {
    **{alike: latin for latin, alikes in _LOOKALIKES.items() for alike in alikes},
    **{capital: latin for latin, capital in _SMALL_CAPITALS.items()},
    **dict.fromkeys(_BRACKETS, "<"),
}
#: Invisible characters outside categories Cf, Mn and Me: Hangul fillers, the blank braille
#: pattern, and the combining grapheme joiner's relatives in other categories.
_INVISIBLE = frozenset("\u115f\u1160\u3164\uffa0\u2800\u180e")

#: An encoded character: an HTML reference (numeric, or named: ``&lt;``, and the names HTML
#: takes without a semicolon), a JSON or Python escape, a URL's percent-encoding.
_ENCODED = re.compile(
    r"&#(?:[0-9]{1,8}|[xX][0-9a-fA-F]{1,8});?|&[A-Za-z][A-Za-z0-9]{0,31};?"
    r"|\\u[0-9a-fA-F]{4}|\\x[0-9a-fA-F]{2}|%[0-9a-fA-F]{2}"
)
#: Passes of decoding and folding at most (each one decodes one more level of encoding).
_PASSES = 4
_LEGACY_NAMES = sorted((name for name in html5 if not name.endswith(";")), key=len, reverse=True)

#: Characters that are neither letters nor digits in the skeleton (what may surround the words).
_GAP = "[^0-9a-z]"


def defused(text: str, names: Sequence[Sequence[str]]) -> str:
    """``text`` with the bracket of every tag named in ``names`` (each a tag name as its words,
    e.g. ``("memstream", "context")``) replaced by ``DEFUSED_BRACKET``, however the tag is
    spelled (see the module's docstring)."""
    found = bracket_spans(text, names)
    if not found:
        return text
    out: list[str] = []
    position = 0
    for start, end in sorted(set(found)):
        if start < position:
            continue  # nested in an encoding already replaced
        out.append(text[position:start])
        out.append(DEFUSED_BRACKET)
        position = end
    out.append(text[position:])
    return "".join(out)


def bracket_spans(text: str, names: Sequence[Sequence[str]]) -> list[tuple[int, int]]:
    """Where in ``text`` (start, end) the opening bracket of each tag named in ``names`` is
    written: one character, or an encoding of it such as ``&lt;``."""
    folded, spans = skeleton(text)
    return [spans[found.start()] for found in _tag(tuple(tuple(words) for words in names)).finditer(folded)]


def skeleton(text: str) -> tuple[str, list[tuple[int, int]]]:
    """``text`` folded (the module's docstring says how), and for each of its characters the
    span of ``text`` it comes from."""
    current, spans = text, [(i, i + 1) for i in range(len(text))]
    if text.isascii() and _ENCODED.search(text) is None:  # most memory: nothing to decode or fold
        return text.lower(), spans
    for _ in range(_PASSES):
        folded, folded_spans = _folded(*_decoded(current, spans))
        if folded == current:
            break
        current, spans = folded, folded_spans
    return current, spans


def _decoded(text: str, spans: list[tuple[int, int]]) -> tuple[str, list[tuple[int, int]]]:
    out: list[str] = []
    out_spans: list[tuple[int, int]] = []
    position = 0
    for found in _ENCODED.finditer(text):
        if found.start() < position:
            continue
        decoded, length = _decode(found.group())
        if not decoded:
            continue
        end = found.start() + length
        out.extend(text[position : found.start()])
        out_spans.extend(spans[position : found.start()])
        span = (spans[found.start()][0], spans[end - 1][1])
        out.extend(decoded)
        out_spans.extend([span] * len(decoded))
        position = end
    out.extend(text[position:])
    out_spans.extend(spans[position:])
    return "".join(out), out_spans


def _decode(encoded: str) -> tuple[str, int]:
    """What an encoding decodes to and how many of its characters it takes ("" when none)."""
    if encoded.startswith("&#"):
        digits = encoded[2:].rstrip(";")
        number = int(digits[1:], 16) if digits[:1] in "xX" else int(digits)
        return (chr(number), len(encoded)) if 0 < number <= 0x10FFFF else ("", 0)
    if encoded.startswith("&"):
        if encoded.endswith(";") and encoded[1:] in html5:
            return html5[encoded[1:]], len(encoded)
        # As HTML reads "&lt/…": the longest name it knows without a semicolon.
        name = next((n for n in _LEGACY_NAMES if encoded[1:].startswith(n)), None)
        return (html5[name], 1 + len(name)) if name else ("", 0)
    number = int(encoded[2:], 16) if encoded[0] == "\\" else int(encoded[1:], 16)
    return chr(number), len(encoded)


def _folded(text: str, spans: list[tuple[int, int]]) -> tuple[str, list[tuple[int, int]]]:
    out: list[str] = []
    out_spans: list[tuple[int, int]] = []
    for char, span in zip(text, spans, strict=True):
        plain = _fold(char)
        out.append(plain)
        out_spans.extend([span] * len(plain))
    return "".join(out), out_spans


@functools.cache
def _fold(char: str) -> str:
    """One character's skeleton: none, one or a few plain characters."""
    if char in _FOLD or char.isascii():  # a look-alike before NFKD: "ϲ" would become "ς"
        return _FOLD.get(char, char).lower()
    plain = "".join(_FOLD.get(part, part) for part in _visible(char))
    return "".join(_visible(plain.lower()))  # lower case may add a mark again: "İ" is "i̇"


def _visible(text: str) -> list[str]:
    """``text``'s compatibility decomposition without invisible characters and marks."""
    return [
        part
        for part in unicodedata.normalize("NFKD", text)
        if part not in _INVISIBLE and unicodedata.category(part) not in ("Cf", "Mn", "Me")
    ]


@functools.cache
def _tag(names: tuple[tuple[str, ...], ...]) -> re.Pattern[str]:
    """A tag of any of ``names`` in a skeleton: the bracket, a gap, the words."""
    alternatives = "|".join(f"{_GAP}{{0,8}}".join(_spelled(word) for word in words) for words in names)
    return re.compile(f"<{_GAP}{{0,16}}(?:{alternatives})")


def _spelled(word: str) -> str:
    """A word's letters in a skeleton; a digit that reads as a letter is not folded (it would
    break the entity ``&#60;``), so it is taken here."""
    return "".join("[o0]" if letter == "o" else re.escape(letter) for letter in word.lower())

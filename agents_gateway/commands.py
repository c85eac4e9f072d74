"""Commands as the permission engine matches them: normalised, and split into the simple
commands a shell would run.

A rule is written for one command (``ALLOW pytest.*--timeout=30``), but a command line can
chain several: ``pytest --timeout=30 && rm -rf /data`` contains the allowed command and a
blocked one. So the engine matches patterns against the whole line *and* against each part,
and allows only when every part is allowed (see ``permissions.py``).

This is not a shell parser. It splits at the control operators (``;`` ``&&`` ``||`` ``|``
``&``, line breaks) outside quotes, and takes command substitutions (``$(…)``, backticks,
``<(…)``, ``>(…)``, also inside double quotes) as parts of their own. Where it is unsure it
splits more, which can only make a line less allowed, never more: a line is blocked when the
whole line or any part is blocked.

Normalisation (for matching only; the command is audited as sent): NFKC, so full-width and
other compatibility forms read as their plain letters, then every run of whitespace (tabs,
NBSP and the other Unicode spaces) as one space — ``rm<TAB>-rf`` is ``rm -rf``.
"""

from __future__ import annotations

import re
import unicodedata

#: A line with more parts than this is not judged part by part (the engine fails closed).
MAX_PARTS = 64

_SPACES = re.compile(r"\s+")
_OPERATORS = (";", "&&", "||", "|&", "|", "&", "\n")


def normalise(command: str) -> str:
    """The command as rules see it: NFKC, whitespace runs as one space, trimmed."""
    return _SPACES.sub(" ", unicodedata.normalize("NFKC", command.replace("\r", "\n"))).strip()


def _line_breaks_kept(command: str) -> str:
    """NFKC with every whitespace run but line breaks as one space (line breaks separate commands)."""
    text = unicodedata.normalize("NFKC", command.replace("\r", "\n"))
    return "\n".join(_SPACES.sub(" ", line) for line in text.split("\n"))


def _closing(text: str, start: int, opener: str) -> int:
    """Index just past the substitution opened at ``start`` (``$(``, ``<(``, ``>(`` or a backtick)."""
    if opener == "`":
        end = text.find("`", start)
        return len(text) if end < 0 else end + 1
    depth, i, quote = 1, start, ""
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == quote:
                quote = ""
            elif ch == "\\" and quote == '"':
                i += 1
        elif ch in "'\"":
            quote = ch
        elif ch == "\\":
            i += 1
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return len(text)


def _split(text: str, parts: list[str]) -> None:
    current: list[str] = []
    quote = ""
    i = 0

    def flush() -> None:
        part = " ".join("".join(current).split())
        if part:
            parts.append(part)
        current.clear()

    while i < len(text):
        ch = text[i]
        if quote == "'":
            current.append(ch)
            if ch == "'":
                quote = ""
            i += 1
            continue
        opener = "`" if ch == "`" else text[i : i + 2] if text[i : i + 2] in ("$(", "<(", ">(") else ""
        if opener:
            body_start = i + len(opener)
            end = _closing(text, body_start, opener)
            inner_end = end - 1 if end <= len(text) and text[end - 1 : end] in (")", "`") else end
            _split(text[body_start:inner_end], parts)
            current.append(" ")
            i = end
            continue
        if ch == "\\" and i + 1 < len(text):
            current.append(text[i : i + 2])
            i += 2
            continue
        if quote == '"':
            current.append(ch)
            if ch == '"':
                quote = ""
            i += 1
            continue
        if ch in "'\"":
            quote = ch
            current.append(ch)
            i += 1
            continue
        operator = next((op for op in _OPERATORS if text.startswith(op, i)), None)
        if operator is not None:
            flush()
            i += len(operator)
            continue
        current.append(ch)
        i += 1
    flush()


def parts(command: str) -> list[str]:
    """The simple commands of a command line, normalised, in order (substitutions after the
    command that holds them). A line without operators is one part: itself."""
    found: list[str] = []
    _split(_line_breaks_kept(command), found)
    return found

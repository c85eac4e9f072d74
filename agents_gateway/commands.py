"""Commands as the permission engine matches them: normalised, and cut into fragments at
every character where a shell could end one command and start another.

A rule is written for one command (``ALLOW pytest.*--timeout=30``), but a command line can
chain several: ``pytest --timeout=30 && rm -rf /data`` contains the allowed command and a
blocked one. So the engine matches patterns against the whole line *and* against each
fragment, and allows only when every fragment is allowed (see ``permissions.py``).

**This is deliberately not a shell parser.** A guardrail that parses quotes, escapes and
comments will, somewhere, disagree with the shell that runs the command — full-width quotes
that NFKC turns into ASCII ones, a quote inside a ``#`` comment, ANSI-C ``$'\\''`` — and then
judge as one command what the shell runs as two. So the line is cut *without regard to
quotes, escapes or comments*, with no recursion:

- at every control-operator character: ``;`` ``&`` ``|``, line feed, carriage return (and the
  other Unicode line breaks);
- at every substitution or grouping character: ``(`` and ``)`` (so ``$(…)``, ``<(…)``,
  ``>(…)``, subshells, arithmetic) and the backtick. The ``$`` of ``$(`` (``<``, ``>``) and the
  backtick itself stay at the end of the fragment before the cut, so a substitution in a
  command name's place (``$(cat x)``, ```cat x```: the shell runs what ``cat x`` prints)
  leaves a fragment that no ALLOW rule for a command matches;
- twice: in the text as sent (what the shell sees) and, fragment by fragment, in its NFKC form
  (what the rules see: a full-width ``;`` or ``&`` becomes an ASCII operator there, which can
  only add cuts).

The one exception is redirection to a file descriptor: the ``&`` of ``>&`` / ``<&``
(``2>&1``, ``<&3``) and of ``&>`` / ``&>>`` is not a cut, because a shell never runs a command
after it — but only when the text around it cannot make it one: the ``>``/``<`` must not be
escaped or part of another operator (``\\>&`` and ``>>&`` are cut), and ``&>`` must not
follow ``&`` or ``|`` (``a&&>x`` is cut). It is decided first on the text as sent, so an
ampersand next to a full-width ``>`` (an ordinary character to the shell) is cut before NFKC.

A quoted operator therefore cuts too: ``pytest -k 'a; b'`` has the fragments
``pytest -k 'a`` and ``b'``, and an ALLOW rule for pytest no longer covers the line — the
engine answers PENDING and a human confirms. That is the price of never under-splitting.

Braces (``{ …; }``, ``${…}``) are not cuts: a brace group's commands are separated by
``;``, ``&`` or line breaks, which cut, and a parameter expansion runs a command only
through ``$(`` or a backtick, which cut.

Normalisation (for matching only; the command is audited as sent): NFKC, so full-width and
other compatibility forms read as their plain letters, then every run of whitespace (tabs,
NBSP and the other Unicode spaces) as one space — ``rm<TAB>-rf`` is ``rm -rf``.
"""

from __future__ import annotations

import re
import unicodedata

#: A line with more fragments than this is not judged fragment by fragment (the engine fails closed).
MAX_PARTS = 64

#: Where a command may end and another begin: control operators, line breaks (every kind,
#: though a POSIX shell knows only LF), substitutions and subshells.
CUTS = frozenset(";&|\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029`()")

_SPACES = re.compile(r"\s+")


def normalise(command: str) -> str:
    """The command as rules see it: NFKC, whitespace runs as one space, trimmed."""
    return _SPACES.sub(" ", unicodedata.normalize("NFKC", command)).strip()


def _redirect_ampersand(text: str, i: int) -> bool:
    """Whether the ``&`` at ``text[i]`` belongs to a redirection (``>&``, ``<&``, ``&>``,
    ``&>>``) that no quoting or escaping around it can turn into a control operator."""
    before = text[i - 1] if i >= 1 else ""
    if before in ("<", ">"):
        # ``2>&1``: the ``>`` must be a redirection itself, not escaped (``\\>&`` runs what
        # follows in the background) nor the end of another operator (``>>&``, ``<>&``, ``&>&``).
        return i < 2 or text[i - 2] not in "\\<>&|"
    if text[i + 1 : i + 2] == ">":
        # ``&>file``: not the second ``&`` of ``&&`` or of ``|&``, nor an escaped ``\\&``.
        return before not in ("&", "|", "\\", "<", ">")
    return False


def _cut(text: str) -> list[str]:
    """``text`` cut at every character of ``CUTS`` (but redirection ampersands), unnormalised.
    A backtick stays at the end of the fragment before it, as the ``$`` of ``$(`` does: a
    substitution where a command name belongs (```cat x``` runs what ``cat x`` prints) leaves
    a fragment no ALLOW rule for a command matches, never an empty one."""
    pieces: list[str] = []
    start = 0
    for i, ch in enumerate(text):
        if ch in CUTS and not (ch == "&" and _redirect_ampersand(text, i)):
            pieces.append(text[start : i + 1 if ch == "`" else i])
            start = i + 1
    pieces.append(text[start:])
    return pieces


def parts(command: str) -> list[str]:
    """The fragments of a command line, normalised, in order: the line cut where the shell
    would cut it and, fragment by fragment, where its NFKC form has an operator. A line
    without any cut is one part: itself (normalised)."""
    found: list[str] = []
    for raw in _cut(command):
        for piece in _cut(unicodedata.normalize("NFKC", raw)):
            part = _SPACES.sub(" ", piece).strip()
            if part:
                found.append(part)
    return found

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
``;``, ``&`` or line breaks, which cut. But cutting cannot find every command a line runs:
**expansions run code without any operator** — ``${x@P}`` decodes ``\\044\\050`` to ``$(`` and
runs it, an array subscript in any arithmetic context (``$[…]``, ``${PATH:x}`` with
``x='a[…]'``) is evaluated, ``$'\\x3b'`` spells an operator. A guardrail cannot enumerate
them, so ``expansion`` finds the characters that start one (``$`` of any kind, the backtick,
``!`` of history expansion) and the engine never ALLOWs a fragment that holds one.

Nor does a rule for a program see what the program runs. ``unnamed`` lists what a fragment
runs that an ALLOW rule must *name* to allow it: its program (the first word that is neither
an assignment nor a redirection), the variables assigned before it (``LD_PRELOAD=…``,
``BASH_ENV=…``), and any word that names a shell (``env sh -c …``, ``xargs bash``, quoted or
as a path) or is find's ``-exec`` family — each with that part replaced by a neutral word.
A pattern that still matches the replaced text is not about that part (``pytest.*`` in
``bash -c evilcmd pytest``), so it does not allow the fragment.

Two views of a line are judged (the command is audited as sent):

- **as normalised** (``normalise``, ``parts``): NFKC, so full-width and other compatibility
  forms read as their plain letters, then every run of whitespace (tabs, NBSP and the other
  Unicode spaces) as one space — ``rm<TAB>-rf`` and ``\uff52\uff4d -rf`` are ``rm -rf``. A BLOCK rule
  that matches this view blocks. It is never what an ALLOW rule allows: a shell does not
  normalise, and runs a program literally named ``\uff4c\uff53`` (full-width) as it is;
- **as sent** (``as_sent``, ``sent_parts``): the line the shell reads, cut at the same
  characters, with only its runs of blanks (space, tab: what a shell splits words at) as one
  space. A BLOCK rule that matches it blocks too, and it alone is what ALLOW rules allow:
  every fragment of it must be allowed. A fragment holding a character outside printable
  ASCII (a non-ASCII letter, a look-alike, NBSP or another unusual space, a format
  character) is allowed only by a rule whose pattern holds that very character
  (``Fragment.unusual``): normalisation can only add refusals.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Literal

#: A line with more fragments than this is not judged fragment by fragment (the engine fails closed).
MAX_PARTS = 64

#: Where a command may end and another begin: control operators, line breaks (every kind,
#: though a POSIX shell knows only LF), substitutions and subshells.
CUTS = frozenset(";&|\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029`()")

_SPACES = re.compile(r"\s+")


def normalise(command: str) -> str:
    """The command as BLOCK rules also see it: NFKC, whitespace runs as one space, trimmed."""
    return _SPACES.sub(" ", unicodedata.normalize("NFKC", command)).strip()


#: The blanks a shell splits words at (line breaks cut; every other space is a character).
_BLANKS = re.compile(r"[ \t]+")


def _blanks_as_one(text: str) -> str:
    return _BLANKS.sub(" ", text).strip(" ")


def as_sent(command: str) -> str:
    """The command as the shell reads it: nothing normalised but its runs of blanks (space,
    tab) as one space, trimmed of them (NBSP and the other Unicode spaces stay)."""
    return _blanks_as_one(command)


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


def sent_parts(command: str) -> list[str]:
    """The fragments of a command line as the shell reads them, in order: the line cut where
    a shell would cut it, each fragment's blanks as one space (``as_sent``)."""
    return [part for part in map(_blanks_as_one, _cut(command)) if part]


def unusual(part: str) -> frozenset[str]:
    """The characters of ``part`` outside printable ASCII: non-ASCII letters, look-alikes,
    unusual spaces, format characters (a shell reads each as itself)."""
    return frozenset(ch for ch in part if not " " <= ch <= "~" and ch != "\t")


# --- what an ALLOW rule cannot see ---------------------------------------------------------


def expansion(part: str) -> str | None:
    """The first character of ``part`` at which a shell starts an expansion that can run
    code, or None: ``$`` (parameter expansion with its transformations ``@P``/``@E`` and
    indirection ``${!x}``, arithmetic ``$[…]``/``$((…))`` whose array subscripts are
    evaluated, ANSI-C ``$'…'`` and locale ``$"…"`` quoting, the ``$`` of ``$(``), the
    backtick, and ``!`` followed by anything but a space, ``=`` or the end (history
    expansion, in an interactive shell, pastes earlier command lines into this one). Quotes
    do not matter: ``'$x'`` counts too, as every cut does."""
    for i, ch in enumerate(part):
        if ch in "$`":
            return ch
        if ch == "!" and part[i + 1 : i + 2] not in ("", " ", "="):
            return ch
    return None


#: The parts of a fragment an ALLOW rule must name.
Unnamed = Literal["program", "assignments", "runner"]

#: Shells, by the name they are run as (also with a version: ``bash5.2``, ``zsh-5.9``).
SHELLS = frozenset(
    "sh bash dash zsh ksh ksh93 mksh pdksh oksh ash yash rbash lksh posh fish csh tcsh busybox toybox"
    " pwsh powershell nu xonsh elvish osh ysh".split()
)
#: find's options that run a command of their own.
FIND_RUNNERS = frozenset({"-exec", "-execdir", "-ok", "-okdir"})
_VERSION = re.compile(r"-?[0-9][0-9.]*$")
_GLOB = re.compile(r"[*?\[]")
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\[[^\]]*\])?\+?=")
_REDIRECTION = re.compile(r"(?:[0-9]*|\{[A-Za-z_][A-Za-z0-9_]*\})(?:&>>?|<<<|<<-?|<>|>>|>\||[<>]&?)")
#: What a part is replaced with to ask whether a pattern names it (a second one when the part
#: happens to be the first).
_NEUTRAL: dict[Unnamed, tuple[str, str]] = {
    "program": ("program", "command"),
    "assignments": ("NAME=value", "OTHER=value"),
    "runner": ("word", "other"),
}


def _words(part: str) -> list[tuple[int, int]]:
    """The spans of ``part``'s space-separated words (a normalised fragment has single spaces)."""
    spans: list[tuple[int, int]] = []
    start = 0
    for word in part.split(" "):
        if word:
            spans.append((start, start + len(word)))
        start += len(word) + 1
    return spans


def _runs_a_shell(word: str) -> bool:
    """Whether ``word`` names a shell (``sh``, ``/bin/bash``, ``'ba''sh'``, ``b\\ash``,
    ``bash5``, ``/bin/ba?h``, ``/bin/ba[[:alpha:]]h``, ``{ba,}sh``) or is find's ``-exec``
    family (``-exec``, ``-exe[c]``, ``-ex[^x]c``: a glob a file named ``-exec`` in the folder
    would match)."""
    bare = word.replace("'", "").replace('"', "").replace("\\", "")
    if bare in FIND_RUNNERS:
        return True
    name = bare.rsplit("/", 1)[-1].lower()
    if "{" in name and ("," in name or ".." in name):
        return True  # brace expansion: it could spell any name
    if _GLOB.search(bare):
        if any(glob_regex(bare).fullmatch(runner) for runner in FIND_RUNNERS):
            return True
        spelled = glob_regex(_VERSION.sub("", name) or name)
        return any(spelled.fullmatch(shell) for shell in SHELLS)
    return name in SHELLS or _VERSION.sub("", name) in SHELLS


#: Bash's bracket classes, as the characters of a regular expression's class (any other class
#: is taken to match any character).
_BRACKET_CLASSES = {
    "alpha": "a-zA-Z",
    "upper": "A-Z",
    "lower": "a-z",
    "digit": "0-9",
    "xdigit": "0-9A-Fa-f",
    "alnum": "a-zA-Z0-9",
    "word": "a-zA-Z0-9_",
    "blank": " \t",
    "space": " \t\n\r\f\v",
    "punct": re.escape("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"),
    "print": " -~",
    "graph": "!-~",
}


def glob_regex(glob: str) -> re.Pattern[str]:
    """What bash's glob ``glob`` matches, as a regular expression (matched case-insensitively,
    and erring wide): ``*``, ``?``, and bracket expressions with ``!`` or ``^``, ranges,
    ``[:class:]``; an equivalence class ``[=c=]`` or collating symbol ``[.c.]`` matches any
    character, as does a bracket expression this cannot read."""
    out: list[str] = []
    i, n = 0, len(glob)
    while i < n:
        ch = glob[i]
        if ch == "*":
            out.append(".*")
        elif ch == "?":
            out.append(".")
        elif ch == "[" and (end := _bracket(glob, i, out)) > i:
            i = end
            continue
        else:
            out.append(re.escape(ch))
        i += 1
    try:
        return re.compile("".join(out), re.DOTALL | re.IGNORECASE)
    except re.error:
        return re.compile(".*", re.DOTALL)


def _bracket(glob: str, start: int, out: list[str]) -> int:
    """Read the bracket expression at ``glob[start] == '['`` into ``out``; the index after it,
    or ``start`` when it is not closed (then ``[`` is itself)."""
    i, n = start + 1, len(glob)
    negate = i < n and glob[i] in "!^"
    i += negate
    members: list[str] = []
    if i < n and glob[i] == "]":
        members.append("\\]")
        i += 1
    while i < n and glob[i] != "]":
        if glob.startswith(("[:", "[=", "[."), i):
            close = glob.find(glob[i + 1] + "]", i + 2)
            if close >= 0:
                named = glob[i + 2 : close]
                members.append(_BRACKET_CLASSES.get(named, "\\s\\S") if glob[i + 1] == ":" else "\\s\\S")
                i = close + 2
                continue
        if i + 2 < n and glob[i + 1] == "-" and glob[i + 2] != "]":
            members.append(f"{re.escape(glob[i])}-{re.escape(glob[i + 2])}")
            i += 3
            continue
        members.append(re.escape(glob[i]))
        i += 1
    if i >= n:
        return start
    out.append(("[^" if negate else "[") + "".join(members) + "]")
    return i + 1


#: What makes a program's word another name by the time the shell runs it: brace expansion
#: (``{evilcmd,pytest}``), a glob, quotes and escapes, a ``..`` that leaves a folder the word
#: names (``…/pytest/../../bin/evilcmd``); and an ``=``: a word with one that is no assignment
#: (``1a=x``, ``a-b=x``) is a program of that name, which a pattern for assignments matches.
_REWRITTEN_PROGRAM = re.compile(r"[{}*?\[\]'\"\\=]|(?:^|/)\.\.(?:/|$)")


def rewritten_program(word: str) -> bool:
    """Whether a shell runs another program than the one ``word`` spells as it stands."""
    return _REWRITTEN_PROGRAM.search(word) is not None


@dataclass(frozen=True)
class Fragment:
    """A fragment as the engine judges it for ALLOW rules."""

    text: str
    #: The first character starting an expansion that can run code (``expansion``), or None.
    expansion: str | None
    #: For each part an ALLOW rule must name: the fragment with that part replaced by a
    #: neutral word. A pattern that still matches it is not about that part.
    unnamed: tuple[tuple[Unnamed, str], ...]
    #: Its characters outside printable ASCII (``unusual``): an ALLOW rule must hold each of
    #: them in its pattern to allow it.
    unusual: frozenset[str] = frozenset()
    #: Its program's word is rewritten by the shell before it runs (``rewritten_program``):
    #: no ALLOW rule allows it, whatever it names.
    rewritten: bool = False

    def names_unusual(self, pattern: str) -> bool:
        """Whether ``pattern`` holds every unusual character of this fragment itself."""
        return all(ch in pattern for ch in self.unusual)


def _replaced(text: str, spans: list[tuple[int, int]], kind: Unnamed) -> str:
    """``text`` with every span replaced by the neutral word for ``kind`` (the second one
    where a span is the first already)."""
    first, second = _NEUTRAL[kind]
    neutral = second if any(text[s:e] == first for s, e in spans) else first
    pieces: list[str] = []
    last = 0
    for start, end in spans:
        pieces.append(text[last:start])
        pieces.append(neutral)
        last = end
    pieces.append(text[last:])
    return "".join(pieces)


def analyse(part: str) -> Fragment:
    """``part`` (a normalised fragment) with what an ALLOW rule must name in it: its program
    (the first word that is neither an assignment ``NAME=…`` nor a redirection or its
    target), the assignments before it (one part together), and the words that name a shell
    or find's ``-exec`` family (one part together). Words are split at spaces, regardless of
    quotes, like the cuts: a quoted space makes more words, so more to name."""
    words = _words(part)
    assignments: list[tuple[int, int]] = []
    program: tuple[int, int] | None = None
    target = False
    for start, end in words:
        word = part[start:end]
        if target:
            target = False
            continue
        redirection = _REDIRECTION.match(word)
        if redirection is not None:
            target = redirection.end() == len(word)  # ``> file``: the next word is its target
            continue
        if _ASSIGNMENT.match(word):
            assignments.append((start, end))
            continue
        program = (start, end)
        break
    runners = [span for span in words if span != program and _runs_a_shell(part[span[0] : span[1]])]
    unnamed: list[tuple[Unnamed, str]] = []
    if program is not None:
        unnamed.append(("program", _replaced(part, [program], "program")))
    if assignments:
        unnamed.append(("assignments", _replaced(part, assignments, "assignments")))
    if runners:
        unnamed.append(("runner", _replaced(part, runners, "runner")))
    rewritten = program is not None and rewritten_program(part[program[0] : program[1]])
    return Fragment(part, expansion(part), tuple(unnamed), unusual(part), rewritten)

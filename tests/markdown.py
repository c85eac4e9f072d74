"""What the documentation tests read in Markdown: the README's marked quickstart blocks, the
outputs they promise, and relative links.

A quickstart block is a fenced block right after an HTML comment ``<!-- quickstart: KIND -->``:

- ``stack``: starts the stack (``make run``); a test starts its own stack instead;
- ``shell``: commands for bash, run as written;
- ``eventually``: the same, for what only holds once the workers caught up (a test repeats the
  block until its output matches, within a deadline);
- ``python``: a Python snippet;
- ``output``: what the block before it prints; ``…`` stands for any text within a line, and a
  line holding only ``…`` for any number of lines (none included).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_MARKED_BLOCK = re.compile(
    r"^<!-- quickstart: (?P<kind>[a-z]+) -->\n```(?P<lang>[a-z]*)\n(?P<body>.*?)^```$", re.MULTILINE | re.DOTALL
)
KINDS = frozenset({"stack", "shell", "eventually", "python", "output"})
ELLIPSIS = "…"


@dataclass(frozen=True)
class Block:
    kind: str
    lang: str
    body: str
    #: What it prints (the ``output`` block right after it), if it says.
    output: str | None = None


def quickstart_blocks(text: str) -> list[Block]:
    """The marked blocks in order, each ``output`` block attached to the block before it."""
    blocks: list[Block] = []
    for m in _MARKED_BLOCK.finditer(text):
        kind, lang, body = m["kind"], m["lang"], m["body"]
        if kind not in KINDS:
            raise ValueError(f"unknown quickstart block kind {kind!r}")
        if kind == "output":
            if not blocks or blocks[-1].output is not None or blocks[-1].kind in ("stack", "output"):
                raise ValueError("an output block must follow a shell, eventually or python block")
            last = blocks.pop()
            blocks.append(Block(last.kind, last.lang, last.body, output=body))
        else:
            blocks.append(Block(kind, lang, body))
    return blocks


def output_pattern(expected: str) -> re.Pattern[str]:
    """A pattern for a promised output: ``…`` is any text within a line; a line of ``…`` alone
    any number of whole lines. Trailing blanks and blank lines do not count."""
    parts: list[str] = []
    for line in expected.rstrip().splitlines():
        if line.strip() == ELLIPSIS:
            parts.append(r"(?:[^\n]*\n)*?")
        else:
            parts.append(".*?".join(re.escape(p) for p in line.rstrip().split(ELLIPSIS)) + r"\n")
    return re.compile("".join(parts))


def matches(expected: str, actual: str) -> bool:
    lines = [line.rstrip() for line in actual.rstrip().splitlines()]
    return output_pattern(expected).fullmatch("".join(f"{line}\n" for line in lines)) is not None


# --- code fences -------------------------------------------------------------------------------

#: A line that may open or close a fenced code block: three or more backticks or tildes (indented
#: any amount: inside a list item a fence is indented with it), then the rest of the line.
_FENCE_LINE = re.compile(r"^[ \t]*(?P<fence>`{3,}|~{3,})(?P<rest>.*)$")


def fence_problems(text: str) -> list[str]:
    """What is wrong with the fenced code blocks of ``text``, as CommonMark reads fences: a
    block closes on a line of at least as many of its own character and nothing else but
    blanks. So a would-be closing fence with text after it (```` ``` The ````) closes nothing
    and the prose after it renders as code, up to the next bare fence (which then opens where
    a block was meant to close); and a block still open at the end takes the rest of the page.
    A backtick fence's info string holds no backtick."""
    problems: list[str] = []
    opened: tuple[int, str] | None = None  # (line, fence)
    for number, line in enumerate(text.splitlines(), 1):
        m = _FENCE_LINE.match(line)
        if m is None:
            continue
        fence, rest = m["fence"], m["rest"]
        if opened is None:
            if not (fence[0] == "`" and "`" in rest):
                opened = (number, fence)
        elif fence[0] == opened[1][0] and len(fence) >= len(opened[1]):
            if rest.strip():
                problems.append(
                    f"line {number}: a fence with text after it, inside the block line {opened[0]} opened"
                    " (it closes nothing: a closing fence takes nothing after it)"
                )
            else:
                opened = None
    if opened is not None:
        problems.append(f"line {opened[0]}: a code fence never closed")
    return problems


def fenced_blocks(text: str, lang: str) -> list[str]:
    """The bodies of the fenced blocks of ``lang`` (```` ```json ````), in order."""
    return [
        m["body"] for m in re.finditer(rf"^```{re.escape(lang)}\n(?P<body>.*?)^```$", text, re.MULTILINE | re.DOTALL)
    ]


def markdown_files(root: Path) -> list[Path]:
    """Every Markdown file under ``root``, but in hidden folders (``.venv``, ``.git``, caches)
    and built metadata (``*.egg-info``)."""
    found: list[Path] = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and not d.endswith(".egg-info"))
        found += (Path(folder) / f for f in files if f.endswith(".md"))
    return sorted(found)


# --- links -------------------------------------------------------------------------------------

_FENCE = re.compile(r"^```.*?^```$", re.MULTILINE | re.DOTALL)
_CODE_SPAN = re.compile(r"`[^`\n]*`")
_LINK = re.compile(r"\[[^\]\n]*\]\(([^)\s]+)\)")
_HEADING = re.compile(r"^#{1,6} (.+?)\s*$", re.MULTILINE)


def links(text: str) -> list[str]:
    """The targets of inline links outside code."""
    prose = _CODE_SPAN.sub("", _FENCE.sub("", text))
    return _LINK.findall(prose)


def anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as dashes."""
    text = re.sub(r"`|\*\*|\[([^\]]*)\]\([^)]*\)", r"\1", heading).strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(text: str) -> set[str]:
    found: set[str] = set()
    for heading in _HEADING.findall(_FENCE.sub("", text)):
        base, n = anchor(heading), 0
        while (name := base if n == 0 else f"{base}-{n}") in found:
            n += 1
        found.add(name)
    return found


def broken_links(page: Path) -> list[str]:
    """Relative links of ``page`` whose file or ``#anchor`` does not exist."""
    broken: list[str] = []
    for target in links(page.read_text()):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto: ...
            continue
        path, _, fragment = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            broken.append(f"{target}: no such file")
        elif fragment and file.suffix == ".md" and fragment not in anchors(file.read_text()):
            broken.append(f"{target}: no heading #{fragment} in {file.relative_to(ROOT)}")
    return broken

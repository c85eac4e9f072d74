"""The README and docs/ hold together: every relative link resolves, the quickstart is marked so
that tests/integration/test_readme_quickstart.py can run it, and the README stays short."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.markdown import (
    ROOT,
    anchor,
    anchors,
    broken_links,
    fence_problems,
    links,
    markdown_files,
    matches,
    quickstart_blocks,
)

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
README = (ROOT / "README.md").read_text()


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(page: Path) -> None:
    assert not broken_links(page)


def test_every_docs_page_is_reachable_from_the_readme() -> None:
    """A page nobody links to is a page nobody reads."""
    reached: set[Path] = set()
    todo = [ROOT / "README.md"]
    while todo:
        page = todo.pop()
        for target in links(page.read_text()):
            path = target.partition("#")[0]
            file = (page.parent / path).resolve() if path and "://" not in path else None
            if file is not None and file.suffix == ".md" and file.exists() and file not in reached:
                reached.add(file)
                todo.append(file)
    orphans = sorted(str(p.relative_to(ROOT)) for p in PAGES[1:] if p.resolve() not in reached)
    assert not orphans


def test_the_readme_stays_a_readme() -> None:
    assert len(README.splitlines()) <= 230


def test_the_quickstart_is_marked_in_order() -> None:
    blocks = quickstart_blocks(README)
    assert [b.kind for b in blocks] == ["stack", "shell", "eventually", "python"]
    assert blocks[0].body == "make run\n" and blocks[0].output is None
    assert all(b.output for b in blocks[1:])
    assert README.index("## Quickstart") < README.index("<!-- quickstart: stack -->")


def test_promised_outputs_match_with_ellipses() -> None:
    assert matches('{"accepted":1,"event_ids":["…"]}', '{"accepted":1,"event_ids":["3ea4f062-0000"]}\n')
    assert not matches('{"accepted":1,"event_ids":["…"]}', '{"accepted":2,"event_ids":["x"]}')
    expected = "# Memory for alice (session s-2)\n## Long-term facts\n- [global] theme: dark.\n…\n"
    assert matches(expected, "# Memory for alice (session s-2)\n## Long-term facts\n- [global] theme: dark.\n")
    assert matches(expected, expected.replace("…\n", "## Recent turns\nuser: Thanks!\n"))
    assert not matches(expected, "# Memory for alice (session s-2)\n## Long-term facts\n")
    assert not matches("a\nb\n", "a\nb\nc\n"), "without an ellipsis line, nothing more may follow"


def test_anchors_are_githubs() -> None:
    assert anchor("The vector index: `auto`, chosen by measurement") == "the-vector-index-auto-chosen-by-measurement"
    assert anchor("TLS in a reverse proxy") == "tls-in-a-reverse-proxy"
    assert anchors("# A\n## B\n## B\n```\n## not a heading\n```\n") == {"a", "b", "b-1"}


@pytest.mark.parametrize("page", markdown_files(ROOT), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_code_fence_is_closed(page: Path) -> None:
    """A fence left open turns what follows into code (issue 46: the SDK README's "Errors"
    section rendered as code after a closing fence with text on its line)."""
    assert not fence_problems(page.read_text()), page.relative_to(ROOT)


def test_fence_problems_are_found() -> None:
    assert fence_problems("text\n```python\ncode\n```\n") == []
    found = fence_problems("```\ncode\n``` The\nprose\n```sh\nx\n```\n")
    assert [problem.split(":")[0] for problem in found] == ["line 3", "line 5"], found
    assert "inside the block line 1 opened" in found[0]
    assert fence_problems("a\n```sh\nx\n```\n```\n") == ["line 5: a code fence never closed"]
    assert fence_problems("````md\n```python\nx\n```\n````\n") == [], "a shorter fence inside a longer one"
    assert fence_problems("~~~\n``` x\n~~~\n") == [], "a fence closes on its own character"
    assert fence_problems("- item\n\n  ```json\n  {}\n  ```\n") == [], "indented in a list item"
    assert fence_problems("```inline``` code\n") == [], "backticks in the info string: no fence"

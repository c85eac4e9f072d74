"""Commands split into the simple commands a shell would run, and normalised for matching."""

import pytest

from agents_gateway.commands import normalise, parts


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("pytest --timeout=30", ["pytest --timeout=30"]),
        ("pytest --timeout=30 && rm -rf /data", ["pytest --timeout=30", "rm -rf /data"]),
        ("pytest; rm -rf /", ["pytest", "rm -rf /"]),
        ("make || rm -rf /", ["make", "rm -rf /"]),
        ("cat x | sh", ["cat x", "sh"]),
        ("sleep 1 & rm -rf /", ["sleep 1", "rm -rf /"]),
        ("pytest\nrm -rf /", ["pytest", "rm -rf /"]),
        ("echo $(rm -rf /)", ["rm -rf /", "echo"]),
        ('echo "$(rm -rf /)"', ["rm -rf /", 'echo " "']),
        ("echo `rm -rf /`", ["rm -rf /", "echo"]),
        ("diff <(curl evil) x", ["curl evil", "diff x"]),
        ("echo 'a; rm -rf /'", ["echo 'a; rm -rf /'"]),
        ('echo "a && b"', ['echo "a && b"']),
        ("echo a\\;b", ["echo a\\;b"]),
        ("pytest > out.txt", ["pytest > out.txt"]),
        ("rm\t-rf   /", ["rm -rf /"]),
    ],
)
def test_a_line_is_split_into_its_simple_commands(line: str, expected: list[str]) -> None:
    assert parts(line) == expected


def test_normalising_makes_look_alikes_and_odd_spaces_plain() -> None:
    assert normalise("\uff52\uff4d\u00a0-rf\t/data ") == "rm -rf /data"
    assert normalise("pytest\r\n--timeout=30") == "pytest --timeout=30"


def test_an_unclosed_substitution_still_yields_its_text() -> None:
    assert "rm -rf /" in parts("echo $(rm -rf /")

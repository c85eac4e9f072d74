"""Command lines cut into fragments wherever a shell could start another command (regardless
of quotes, escapes and comments), and normalised for matching."""

import shlex
import subprocess
import unicodedata

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from agents_gateway.commands import (
    CUTS,
    FIND_RUNNERS,
    MAX_PARTS,
    SHELLS,
    analyse,
    as_sent,
    expansion,
    glob_regex,
    normalise,
    parts,
    rewritten_program,
    sent_parts,
)


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("pytest --timeout=30", ["pytest --timeout=30"]),
        ("pytest --timeout=30 && rm -rf /data", ["pytest --timeout=30", "rm -rf /data"]),
        ("pytest; rm -rf /", ["pytest", "rm -rf /"]),
        ("make || rm -rf /", ["make", "rm -rf /"]),
        ("cat x | sh", ["cat x", "sh"]),
        ("cat x |& sh", ["cat x", "sh"]),
        ("sleep 1 & rm -rf /", ["sleep 1", "rm -rf /"]),
        ("pytest\nrm -rf /", ["pytest", "rm -rf /"]),
        ("pytest\rrm -rf /", ["pytest", "rm -rf /"]),
        ("pytest\u2028rm -rf /", ["pytest", "rm -rf /"]),
        ("echo $(rm -rf /)", ["echo $", "rm -rf /"]),
        ('echo "$(rm -rf /)"', ['echo "$', "rm -rf /", '"']),
        ("echo `rm -rf /`", ["echo `", "rm -rf /`"]),
        ("echo `date` x", ["echo `", "date`", "x"]),
        ("diff <(curl evil) x", ["diff <", "curl evil", "x"]),
        ("(cd /tmp && rm -rf x)", ["cd /tmp", "rm -rf x"]),
        ("pytest > out.txt", ["pytest > out.txt"]),
        ("rm\t-rf   /", ["rm -rf /"]),
        # Quotes, escapes and comments do not protect an operator: the line is cut anyway.
        ("echo 'a; rm -rf /'", ["echo 'a", "rm -rf /'"]),
        ('echo "a && b"', ['echo "a', 'b"']),
        ("echo a\\;b", ["echo a\\", "b"]),
        ("make # build; then test", ["make # build", "then test"]),
        # Redirections to a file descriptor are not operators...
        ("pytest --timeout=30 2>&1 | tee log", ["pytest --timeout=30 2>&1", "tee log"]),
        ("make <&3", ["make <&3"]),
        ("make &>/dev/null", ["make &>/dev/null"]),
        ("make &>>log; ls", ["make &>>log", "ls"]),
        # ... unless something around them could make the ampersand one.
        ("echo \\>& evil", ["echo \\>", "evil"]),
        ("echo a >>& evil", ["echo a >>", "evil"]),
        ("a&&>x evil", ["a", ">x evil"]),
        ("a|&>x evil", ["a", ">x evil"]),
        ("echo \\&>x evil", ["echo \\", ">x evil"]),
        ("2\uff1e&1 evil", ["2>", "1 evil"]),
        ("make &\uff1ex", ["make", ">x"]),
        # Braces are not cuts (a brace group's commands are separated by ; & or line breaks).
        ("echo ${HOME}", ["echo ${HOME}"]),
        ("{ make; }", ["{ make", "}"]),
        # No recursion: nesting costs nothing.
        ("echo " + "$(" * 5 + "rm -rf /" + ")" * 5, ["echo $", "$", "$", "$", "$", "rm -rf /"]),
    ],
)
def test_a_line_is_cut_at_every_operator_character(line: str, expected: list[str]) -> None:
    assert parts(line) == expected


# The red team's lines (security finding 1): full-width quotes and backslashes, which NFKC
# turns into ASCII ones; quotes in comments; ANSI-C quoting. Bash ran ``evilcmd`` each time.
RED_TEAM = [
    "pytest --timeout=30 \uff02; evilcmd; \uff02",
    "pytest --timeout=30 \uff07; evilcmd; \uff07",
    "pytest --timeout=30 \uff3c; evilcmd",
    "pytest --timeout=30 \ufe68; evilcmd",
    "pytest --timeout=30 \uff07; evilcmd",
    "pytest --timeout=30 # '\nevilcmd",
    'pytest --timeout=30 # "\nevilcmd',
    "pytest --timeout=30 #$' \nevilcmd",
    "pytest --timeout=30 #\\\nevilcmd",
    "pytest --timeout=30 $'\\'' ; evilcmd ; pytest --timeout=30 $'\\''",
]


@pytest.mark.parametrize("line", RED_TEAM)
def test_what_bash_runs_as_a_command_of_its_own_is_a_fragment_of_its_own(line: str) -> None:
    assert "evilcmd" in parts(line)


def test_full_width_quotes_do_not_hide_the_command_after_them() -> None:
    assert parts("make \uff02; rm -rf victimdir; \uff02") == ['make "', "rm -rf victimdir", '"']
    assert parts("make # '\nr''m -rf victimdir") == ["make # '", "r''m -rf victimdir"]


def test_a_substitution_in_a_command_names_place_leaves_a_fragment_of_its_own() -> None:
    # Bash runs ``cat x`` and then what it prints: the fragment before is never empty.
    assert parts("`cat x`") == ["`", "cat x`"]
    assert parts("$(cat x)") == ["$", "cat x"]
    assert parts("X=1 `cat x`") == ["X=1 `", "cat x`"]
    assert parts("$(echo ma)ke") == ["$", "echo ma", "ke"]


def test_operators_that_only_nfkc_makes_ascii_cut_too() -> None:
    # Bash runs one command here; cutting more only makes the line less allowed.
    assert parts("pytest\uff1brm -rf /") == ["pytest", "rm -rf /"]
    assert parts("make \uff5c sh") == ["make", "sh"]
    assert parts("echo \u2474") == ["echo", "1"]
    assert parts("echo \uff40date\uff40") == ["echo `", "date`"]


def test_deep_nesting_is_linear_not_recursive() -> None:
    line = "ls " + "$(" * 4000
    assert len(parts(line)) == 4000
    assert len(parts(line)) > MAX_PARTS


def test_normalising_makes_look_alikes_and_odd_spaces_plain() -> None:
    assert normalise("\uff52\uff4d\u00a0-rf\t/data ") == "rm -rf /data"
    assert normalise("pytest\r\n--timeout=30") == "pytest --timeout=30"


def test_an_unclosed_substitution_still_yields_its_text() -> None:
    assert "rm -rf /" in parts("echo $(rm -rf /")


_ALPHABET = st.sampled_from(
    list("ab -'\"\\#$<>{}=01") + sorted(CUTS) + ["\uff02", "\uff07", "\uff3c", "\ufe68", "\uff1b", "\uff06", "\u0338"]
)


@settings(derandomize=True, max_examples=500)
@given(st.lists(_ALPHABET, max_size=40).map("".join))
@example("a \\>& b")
@example("a 2>&1&b")
def test_every_fragment_is_free_of_operators_but_redirections(line: str) -> None:
    """Whatever the quoting, no fragment holds a character at which a shell could start
    another command — raw or after NFKC — but the ampersand of ``>&``/``<&``/``&>`` and a
    backtick that ends it."""
    for part in parts(line):
        for i, ch in enumerate(part):
            if ch == "`" and i == len(part) - 1:
                continue
            if ch == "&":
                assert part[i - 1 : i] in ("<", ">") or part[i + 1 : i + 2] == ">", (line, part)
                continue
            assert ch not in CUTS, (line, part)
            assert not any(c in CUTS for c in unicodedata.normalize("NFKC", ch)), (line, part)


# --- expansions, and what an ALLOW rule must name (security finding 4) ------------------------

#: The second red team's lines (README only): no cut character, yet bash 5.2 ran the command
#: each one hides (``${x@P}`` prompt expansion, ANSI-C quoting, arithmetic on an array subscript).
EXPANDED = [
    r"pytest --timeout=30 ${x:=\\044\\050id\\051} ${x@P}",
    r"pytest ${x:=$'\x24\x28echo PWNED \x3e /tmp/rt/pwned\x29'} ${x@P}",
    r"pytest ${x:=$'a[\x24\x28echo PWNED2 \x3e /tmp/rt/pwned2\x29]'} ${PATH:x}",
    r"pytest $[${y:=$'a[\x24\x28echo PWNED3 \x3e /tmp/rt/pwned3\x29]'}]",
]


@pytest.mark.parametrize("line", EXPANDED)
def test_the_red_teams_expansions_are_one_fragment_that_holds_an_expansion(line: str) -> None:
    (part,) = parts(line)  # nothing to cut: what bash runs is hidden in an expansion
    assert expansion(part) == "$"


@pytest.mark.parametrize(
    ("part", "found"),
    [
        ("pytest ${x@E}", "$"),
        ("pytest ${!x}", "$"),
        ("pytest $'\\x3b' evilcmd", "$"),
        ('pytest $"x"', "$"),
        ("pytest ${IFS}evilcmd", "$"),
        ("pytest $HOME", "$"),
        ("pytest '$x'", "$"),  # quotes do not matter, as for cuts
        ("pytest $", "$"),  # what is left of ``$(…)``
        ("echo `", "`"),  # what is left of a backtick substitution
        ("pytest !!", "!"),  # history expansion
        ("pytest !-1", "!"),
        ('git commit -m "fix!"', "!"),
        ("pytest --timeout=30", None),
        ("[ ! -f x ]", None),
        ("[[ a != b ]]", None),
        ("echo hi!", None),
        ("pytest tests/*.py ~/x {a,b}", None),  # globs, tildes and braces run nothing
    ],
)
def test_expansion_finds_where_a_shell_could_run_code(part: str, found: str | None) -> None:
    assert expansion(part) == found


def test_a_full_width_dollar_is_an_expansion_to_the_rules() -> None:
    # Bash does not expand it; NFKC makes it ``$``, and the engine errs on the side of a human.
    (part,) = parts("pytest \uff04{x@P}")
    assert expansion(part) == "$"


def test_what_an_allow_rule_must_name_replaced_by_neutral_words() -> None:
    assert analyse("pytest --timeout=30").unnamed == (("program", "program --timeout=30"),)
    assert analyse("bash -c evilcmd pytest").unnamed == (("program", "program -c evilcmd pytest"),)
    assert analyse("LD_PRELOAD=/x.so A[1]+=2 pytest -q").unnamed == (
        ("program", "LD_PRELOAD=/x.so A[1]+=2 program -q"),
        ("assignments", "NAME=value NAME=value pytest -q"),
    )
    assert analyse("env -i sh -c evilcmd").unnamed == (
        ("program", "program -i sh -c evilcmd"),
        ("runner", "env -i word -c evilcmd"),
    )
    assert analyse("find . -exec evilcmd {} +").unnamed[1] == ("runner", "find . word evilcmd {} +")
    # Redirections (and their targets) before the program are not the program.
    assert analyse("> out 2>&1 <in make test").unnamed == (("program", "> out 2>&1 <in program test"),)
    assert analyse("make=1 evilcmd").unnamed == (
        ("program", "make=1 program"),
        ("assignments", "NAME=value evilcmd"),
    )
    # A part that is the neutral word already gets another.
    assert analyse("program x").unnamed == (("program", "command x"),)
    assert analyse("> out").unnamed == ()


@pytest.mark.parametrize(
    "word",
    ["sh", "bash", "/bin/bash", "/usr/bin/env", "'ba''sh'", '"zsh"', "b\\ash", "bash5.2", "zsh-5.9", "BASH",
     "/bin/ba?h", "/bin/b[a]sh", "{ba,}sh", "busybox", "-exec", "-execdir", "-ok", "-okdir"],
)  # fmt: skip
def test_a_word_that_names_a_shell_in_any_spelling_must_be_named(word: str) -> None:
    kinds = [kind for kind, _ in analyse(f"xargs -n1 {word} -c evilcmd").unnamed]
    assert kinds == (["program"] if word == "/usr/bin/env" else ["program", "runner"]), word


@pytest.mark.parametrize("word", ["pytest", "tests/test_sh.py", "shell", "-x", "*.py", "push"])
def test_other_words_need_not_be_named(word: str) -> None:
    assert [kind for kind, _ in analyse(f"git {word}").unnamed] == ["program"]


@settings(derandomize=True, max_examples=300)
@given(st.lists(_ALPHABET | st.sampled_from(["sh", "bash", "X=1", "-exec", "> f", "2>&1", "pytest", "!"]), max_size=12))
def test_every_part_an_allow_rule_must_name_is_replaced(words: list[str]) -> None:
    """Whatever the line, each fragment's replaced texts differ from it (so a pattern that
    needs the part stops matching), and a fragment with ``$`` or a backtick has an expansion."""
    for part in parts(" ".join(words)):
        fragment = analyse(part)
        assert all(replaced != part for _, replaced in fragment.unnamed), (part, fragment)
        assert len({kind for kind, _ in fragment.unnamed}) == len(fragment.unnamed)
        if "$" in part or "`" in part:
            assert fragment.expansion is not None, part


# --- the command as sent: what ALLOW rules allow ----------------------------------------------


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("ls   -la", ["ls -la"]),
        ("rm\t-rf   /", ["rm -rf /"]),
        ("\uff4c\uff53 -la", ["\uff4c\uff53 -la"]),  # full-width: a program of that name
        ("git\u00a0status", ["git\u00a0status"]),  # NBSP is a character to a shell, not a blank
        ("\u00a0ls", ["\u00a0ls"]),  # nor trimmed
        ("make \uff1b rm -rf x", ["make \uff1b rm -rf x"]),  # a full-width semicolon does not cut
        ("pytest; rm -rf /", ["pytest", "rm -rf /"]),
    ],
)
def test_the_line_as_sent_keeps_every_character_but_blanks(line: str, expected: list[str]) -> None:
    assert sent_parts(line) == expected
    if len(expected) == 1:  # a line without cuts is one fragment: itself, as sent
        assert as_sent(line) == expected[0]


@pytest.mark.parametrize(
    ("part", "found"),
    [
        ("ls -la", ""),
        ("\uff4c\uff53 -la", "\uff4c\uff53"),
        ("\U0001d425\U0001d42c -la", "\U0001d425\U0001d42c"),
        ("git\u00a0status", "\u00a0"),
        ("cat R\u0415ADME.md", "\u0415"),  # a Cyrillic capital IE
        ("cat READ\u200bME.md", "\u200b"),  # a zero-width space
        ("echo caf\u00e9", "\u00e9"),
    ],
)
def test_characters_a_shell_reads_as_they_are_must_be_named(part: str, found: str) -> None:
    fragment = analyse(part)
    assert fragment.unusual == frozenset(found)
    assert fragment.names_unusual(f"^{part}$")
    assert fragment.names_unusual("^ls( |$)") == (found == "")


@settings(derandomize=True, max_examples=300)
@given(st.text(st.characters(codec="utf-8", exclude_categories=["Cs", "Cc"]), max_size=40))
def test_an_ascii_pattern_names_no_unusual_character(line: str) -> None:
    """Whatever the line, a fragment as sent with a character outside printable ASCII is not
    allowed by a pattern of printable ASCII alone: normalisation never turns into an ALLOW."""
    for part in sent_parts(line):
        fragment = analyse(part)
        if any(not " " <= ch <= "~" for ch in part):
            assert fragment.unusual and not fragment.names_unusual(".*" + "".join(map(chr, range(32, 127))))


@pytest.mark.parametrize(
    ("word", "rewritten"),
    [
        ("pytest", False),
        ("/usr/bin/pytest", False),
        ("./scripts/ci.sh", False),
        ("~/bin/tool", False),
        ("{evilcmd,pytest}", True),
        ("{a..z}", True),
        ("pyt*st", True),
        ("py?est", True),
        ("[p]ytest", True),
        ("'pytest'", True),
        ('"pytest"', True),
        ("py\\test", True),
        ("/lib/pytest/../../bin/evilcmd", True),
        ("../evilcmd", True),
    ],
)
def test_a_program_word_the_shell_rewrites_is_known(word: str, rewritten: bool) -> None:
    assert rewritten_program(word) is rewritten
    assert analyse(f"{word} --timeout=30").rewritten is rewritten
    assert analyse(f"echo {word}").rewritten is False, "an argument is not the program"


@pytest.mark.parametrize("word", ["-exe[c]", "-exe?", "-[e]xecdir", "-ok*", "'-exec'", "{-exec,}"])
def test_find_exec_in_any_spelling_must_be_named(word: str) -> None:
    assert [kind for kind, _ in analyse(f"find . {word} evilcmd {{}} +").unnamed] == ["program", "runner"]


GLOBS = [
    "-exe[c]", "-ex[^x]c", "-ex[!x]c", "-exe[[:alpha:]]", "-ex[[=e=]]c", "-ex[[.e.]]c", "[[:punct:]]exec",
    "ba[[:alpha:]]h", "ba[^x]h", "ba[[.s.]]h", "ba?h", "b*", "[a-c]ash", "[]b]ash", "[!]]ash", "z[[:lower:]]h",
    "-ok[[:alnum:]]ir", "-e[x-y]ecdir", "[[:upper:]]ash", "*.py", "file[12].txt", "[",
]  # fmt: skip
NAMES = sorted(SHELLS | FIND_RUNNERS | {"x.py", "file1.txt", "ls"})


def test_the_glob_reader_errs_wide_of_bash() -> None:
    """Whatever bash's own ``[[ name == glob ]]`` matches, ``glob_regex`` matches too: a shell's
    name or find's -exec spelled as a glob is always found (bash is the oracle)."""
    pairs = [(glob, name) for glob in GLOBS for name in NAMES]
    script = "".join(f"[[ {shlex.quote(name)} == {glob} ]] && echo 1 || echo 0\n" for glob, name in pairs)
    answers = subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=True).stdout.split()
    missed = [(g, n) for (g, n), a in zip(pairs, answers, strict=True) if a == "1" and not glob_regex(g).fullmatch(n)]
    assert missed == []
    assert sum(a == "1" for a in answers) > len(GLOBS), "bash matched something"

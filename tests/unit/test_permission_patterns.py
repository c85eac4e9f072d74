"""The permission engine's pure parts: what a rule's pattern may cost, what is refused as
a control character, and what of a command the audit log keeps."""

from __future__ import annotations

import time

import pytest

from agents_gateway.permissions import (
    MAX_PROGRAM_SIZE,
    PatternError,
    counted_repetitions,
    redact_command,
    text_problem,
    validate_pattern,
)


def test_counted_repetitions_are_found_where_re2_reads_them() -> None:
    pattern = r"a{1,5}[{9999}]\{99999}\x{1000}\p{Greek}{2,}\Q{1000}\Ex{3}(?:b){0,1000}[]{5}]{7}[[:alpha:]{8}]"
    assert counted_repetitions(pattern) == [("{1,5}", 5), ("{2,}", 2), ("{3}", 3), ("{0,1000}", 1000), ("{7}", 7)]
    assert counted_repetitions("{,5} {a} x{") == []


@pytest.mark.parametrize(
    ("pattern", "why"),
    [
        (r"[\s\S]{0,1000}[\s\S]{0,1000}[\s\S]{0,1000}x", "counted repetition {0,1000} is too large"),
        (r"a{101}", "counted repetition {101} is too large"),
        (r"a{500,}", "counted repetition {500,} is too large"),
        (r"(?:a[\s\S]{0,100}){7}x", f"at most {MAX_PROGRAM_SIZE} are accepted"),
        (r"(?:[\pL\pN]{0,20}a){3}", "RE2 instructions"),
        ("(?=x)", "not a valid RE2 pattern"),
        ("x" * 513, "1-512 characters"),
    ],
)
def test_costly_or_invalid_patterns_are_refused_with_the_reason(pattern: str, why: str) -> None:
    with pytest.raises(PatternError) as refused:
        validate_pattern(pattern)
    assert why in str(refused.value)


@pytest.mark.parametrize(
    "pattern",
    [r"^pytest\b.*--timeout=30\b", r"\brm\s+-[a-z]*r[a-z]*f?\s+/", r"[a-f0-9]{64}", r"\{99999\}", r"(?i)[\pL\pN_]+@x"],
)
def test_ordinary_patterns_are_accepted(pattern: str) -> None:
    assert validate_pattern(pattern) is not None


def test_text_problems() -> None:
    assert text_problem("command", "ls\t-la\r\n") is not None
    assert text_problem("command", "ls\t-la\r\n", multiline=True) is None
    assert "U+0000" in str(text_problem("tool", "a\x00b", multiline=True))
    assert "U+001B" in str(text_problem("command", "\x1b[0m", multiline=True))
    assert "surrogate" in str(text_problem("command", "\ud800", multiline=True))
    assert text_problem("tool", None) is None


@pytest.mark.parametrize(
    ("command", "audited"),
    [
        ("mysql -pSuperSecretDBpw", "mysql -p[REDACTED:cli_password]"),
        ("mysql -u root -pS3cr3t -h db shop", "mysql -u root -p[REDACTED:cli_password] -h db shop"),
        ("/usr/bin/mysqldump -p'a b' shop > x.sql", "/usr/bin/mysqldump -p[REDACTED:cli_password] shop > x.sql"),
        ("mysql --password=S3cr3t shop", "mysql --password=[REDACTED:cli_secret] shop"),
        ("psql --password S3cr3t", "psql --password [REDACTED:cli_secret]"),
        ("PGPASSWORD=S3cr3t psql -h db", "PGPASSWORD=[REDACTED:secret_variable] psql -h db"),
        ("env MYSQL_PWD='a b' mysql; ls", "env MYSQL_PWD=[REDACTED:secret_variable] mysql; ls"),
        (
            'curl -H "Authorization: Bearer abcdef0123456789abcdef" https://x',
            'curl -H "Authorization: [REDACTED:auth_header]" https://x',
        ),
        (
            "curl -H 'X-Api-Key: k1' -H 'Accept: json' u",
            "curl -H 'X-Api-Key: [REDACTED:auth_header]' -H 'Accept: json' u",
        ),
        ("curl -u alice:S3cr3t https://x", "curl -u alice:[REDACTED:cli_password] https://x"),
        ("wget --user alice:S3cr3t u", "wget --user alice:[REDACTED:cli_password] u"),
        ("gh auth login --token S3cr3t", "gh auth login --token [REDACTED:cli_secret]"),
        ("sshpass -p S3cr3t ssh -p 22 host", "sshpass -p [REDACTED:cli_password] ssh -p 22 host"),
        ("sshpass -v -pS3cr3t scp f host:", "sshpass -v -p[REDACTED:cli_password] scp f host:"),
        ("psql postgresql://app:S3cr3t@db/shop", "psql postgresql://app:[REDACTED:connection_secret]@db/shop"),
        # Not secrets: left as they are.
        ("mkdir -p /tmp/x && mysql -p", "mkdir -p /tmp/x && mysql -p"),
        ("ssh -p 22 host", "ssh -p 22 host"),
        ("git push -u origin main", "git push -u origin main"),
        ("docker login --password-stdin -u bob", "docker login --password-stdin -u bob"),
        ("tool --password-file /run/pw", "tool --password-file /run/pw"),
        ("pytest --timeout=30 -q", "pytest --timeout=30 -q"),
    ],
)
def test_command_line_secrets_are_redacted(command: str, audited: str) -> None:
    assert redact_command(command)[0] == audited
    assert redact_command(audited)[0] == audited, "redacting is idempotent"


@pytest.mark.parametrize(
    "command",
    ["-p" * 4096, "mysql " * 1365, "mysql -p" * 1024, "A" * 8191 + "=", "--" + "a" * 8190, "'" * 8192, "x=" * 4096,
     "Authorization:" * 585, "mysql " + "-pa " * 2000, "sshpass" + " -v" * 2730 + " -px", "curl -u " + ":" * 8000],
)  # fmt: skip
def test_redaction_is_fast_on_hostile_commands(command: str) -> None:
    started = time.perf_counter()
    redact_command(command[:8192])
    assert time.perf_counter() - started < 0.5

"""The privacy filter takes time linear in the text, whatever the text (security finding:
32,000 characters of ``eyJ_a`` repeated took 0.3 s, 8,000 took 0.02 s, and a batch of 40 such
turns froze the gateway's event loop for 5 s).

A hang detector, not a benchmark: each adversarial family — what each detector looks for,
repeated or stretched so that a pattern can start everywhere and run far — must be redacted
within a bound far above what linear work costs (~50 ms for 256 KiB here; ``bench/privacy.py``
prints the real figures), but far below what quadratic work costs at that size (seconds).
CPU time of the calling thread, the garbage collector off (``tests/cpu_time.py``), so that
other processes on the machine and what earlier tests left in this one do not count.

- ``CURATED``: the families found to be (or that were designed against being) superlinear:
  256 KiB each, at most 2 s.
- every prefix of an example of every detector, repeated, and the same with its next
  character stretched over the rest of the text: 64 KiB each, at most 1 s.
"""

from __future__ import annotations

import base64
from functools import partial

import pytest

from agents_gateway.permissions import redact_command
from memstream.privacy import PrivacyPolicy, redact
from tests.cpu_time import best_cpu_seconds

#: About 14 s of CPU: `make test` (and CI) runs it, `make test-fast` leaves it out.
pytestmark = pytest.mark.slow

ALL = PrivacyPolicy(redact_email=True, redact_phone=True)

#: (name, unit): the text is ``unit`` repeated.
CURATED: tuple[tuple[str, str], ...] = (
    ("jwt prefix", "eyJ_a"),
    ("jwt header, no payload", "eyJhbGciOiJIUzI1NiJ9."),
    ("jwt in a word", "token_eyJaaaaaaaaa"),
    ("aws key prefix", "AKIA"),
    ("github token prefix", "ghp_"),
    ("github token, short", "ghp_abc"),
    ("slack token prefix", "xoxb-"),
    ("stripe prefix", "sk_live_"),
    ("pem header", "-----BEGIN "),
    ("pem header, whole", "-----BEGIN PRIVATE KEY-----"),
    ("pem dashes", "private key -----"),
    ("putty header", "Private-Lines: 1\n"),
    ("key=", "password="),
    ("key: ", "password: "),
    ('key="', 'password="a'),
    ("key=' and key=\"", "password='x password=\"y "),
    ("escaped json key", '\\"password\\": \\"'),
    ("glued key", "PGPASSWORD"),
    ("glued key, no value", "mypassword "),
    ("camel key", "aPassword"),
    ("backslashes", "\\"),
    ("escaped tab", "\\\\t"),
    ("url", "://a:"),
    ("url, user and at", "a://a:a@"),
    ("url, at", "x://@"),
    ("ats", "@"),
    ("local parts", "a@"),
    ("dotted locals", "a.a@"),
    ("domains", "@a.a"),
    ("quoted local", '"a"@'),
    ("digits and spaces", "1 "),
    ("digits and dashes", "1-"),
    ("digits and tabs", "12\t"),
    ("digit pairs", "12 "),
    ("digits", "1"),
    ("ssn prefix", "123-45-"),
    ("nino prefix", "AB 12 "),
    ("phone prefix", "+1 "),
    ("trunk prefix", "06 12 "),
    ("bearer", "bearer "),
    ("basic", "basic "),
    ("authorization", "authorization: "),
    ("cookie", "cookie: "),
    ("long options", "--token "),
    ("long options, glued", "--token--token"),
    ("dashes", "-"),
    ("programs", "mysql "),
    ("program and flag", "mysql -p"),
    ("sshpass options", "sshpass -v "),
    ("curl -u", "curl -u "),
    ("quotes", "'"),
    ("double quotes", '"'),
    ("config set", "config set password "),
    ("header option", "-H 'X-Api-Key: "),
    ("full-width digits", "\uff11"),
    ("non-breaking spaces", "\u00a01"),
    ("zero-width", "4\u200b"),
    # the third red team's forms: each new way a name, a separator and a value are written
    ("xml open tags", "<password>"),
    ("xml, no closing tag", "<password>a"),
    ("xml namespaces", "<a:password "),
    ("xml, long attributes", "<password " + "a" * 600),
    ("cdata", "<password><![CDATA["),
    ("name/value pairs", 'name="password" '),
    ("name/value, yaml", "- name: DB_PASSWORD\n"),
    ("name/value, values", 'key="secret" value='),
    ("spaced names", "password "),
    ("spaced names, values", "password Hunter2! "),
    ("dockerfile env", "ENV A_PASSWORD "),
    ("netrc", "login u password "),
    ("sql, set password for", "SET PASSWORD FOR "),
    ("sql, password calls", "password=PASSWORD('"),
    ("sql, identified by", "identified by "),
    ("yaml blocks", "password: |\n"),
    ("yaml block lines", "password: |\n  a\n"),
    ("backticks", "password: `"),
    ("markdown names", "**password:** "),
    ("key names", "A_KEY="),
    ("key names, spaced", "a_key "),
    ("signatures", "&sig="),
    ("pgpass ports", "a:5432:"),
    ("pgpass lines", "h:5432:d:u:"),
    ("pgpass, no blanks", "=h:5432:d:u:p"),
    ("webhooks", "hooks.slack.com/services/"),
    ("vault tokens", "hvs."),
    ("vault, legacy", "s.A"),
    ("url-encoded at", "a%40"),
    ("html at", "a&#64;"),
    ("ip literals", "a@[1.1.1."),
    ("ssn separators", "123/45/"),
    ("ssn, mixed separators", "123-45 "),
    ("card separators", "4_"),
    ("card, three blanks", "4   "),
    ("placeholders", "[REDACTED:x]"),
    ("placeholder values", "password=[REDACTED:x]a "),
    ("dollar quotes", "password $$"),
    ("dollar quotes, tagged", "password $a$x"),
    ("sql prefixed literals", "password E'"),
    ("yaml anchors", "password: &a "),
    ("table cells", "| password | "),
    ("arrows", "password -> "),
    ("double-encoded at", "a%2540"),
    ("escaped closing tags", "<password>a<\\/"),
    # issue 45: secrets found by their layout, a checksum, their encoding or their look
    ("aws key ids", "AKIAIOSFODNN7EXAMPLE "),
    ("aws ids and secrets", "AKIAIOSFODNN7EXAMPLE wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n"),
    ("aws id, base64 runs", "AKIAIOSFODNN7EXAMPLE" + "wJalrXUtnFEMI/K7" * 20 + " "),
    ("iban groups", "DE89 "),
    ("iban digits", "DE89 3704 "),
    ("iban, lower case", "gb82west"),
    ("iban dashes", "CH93-0076-"),
    ("base64 runs", "YWJjZGVmZ2hpamtsbW5v "),
    ("base64, wrapped lines", "QUJD" * 19 + "\n"),
    ("base64 in base64", base64.b64encode(base64.b64encode(b"token: zqabc123 ")).decode() + " "),
    ("base64, url-safe", "a-b_" * 5 + " "),
    ("random values", "a=Zk3q9XbT2mPa7LwR8vYc4NdE6hJs1GuK "),
    ("assignment names", "x" * 70 + "="),
    ("assignment separators", "a: "),
    ("csv headers", "user,password\n"),
    ("csv rows", "user,password\nbob,Hunter2x\n" + "a,b\n" * 3),
    ("table rules", "| user | password |\n|---|---|\n"),
    ("shell escapes", "sshpass -p \\"),
    ("quoted shell words", "sshpass -p 'a&"),
)

#: One example of what each detector finds: their prefixes make the generated families.
EXAMPLES: tuple[str, ...] = (
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    "AKIAIOSFODNN7EXAMPLE",
    "ghp_16C7e42F292c6912E7710c838347Ae178B4a",
    "xoxb-123456789012-abcdefghij",
    "sk-proj-abcdefghijklmnopqrstuvwxyz123",
    "SG.abcdefghijklmnopqrstuv.abcdefghijklmnopqrstuvwxyz",
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----",
    "PuTTY-User-Key-File-3: ssh-rsa\nPrivate-Lines: 1\nAAAAgQ\nPrivate-MAC: 00",
    "password: correct horse",
    '{"password": "hunter2"}',
    '\\"api_key\\": \\"x\\"',
    "PGPASSWORD=x psql",
    "mysql -u root -pX db",
    "sshpass -p X ssh",
    "curl -u admin:X https://x",
    "docker login -u a -p X",
    "htpasswd -b f u X",
    "aws configure set aws_secret_access_key X",
    "curl -H 'Authorization: Bearer abc'",
    "Authorization: Basic dXNlcjpwYXNzd29yZA==",
    "Cookie: session=abc",
    "postgres://app:pw@db:5432/x",
    "4111 1111 1111 1111",
    "536-22-1234",
    "AB 12 34 56 C",
    "1-1017-00230-70-8",
    '"john doe"@example.com',
    "alice@example.com",
    "+1 415-555-0100",
    "06 12 34 56 78",
    "CREATE USER app IDENTIFIED BY 'Hunter2Secret!'",
    "ALTER ROLE app PASSWORD 'Hunter2Secret!'",
    "SET PASSWORD FOR 'bob'@'localhost' = PASSWORD('Hunter2Secret!')",
    '<db:password a="1">Hunter2Secret!</db:password>',
    '<add key="ApiSecret" value="Hunter2Secret"/>',
    "- name: DB_PASSWORD\n  value: Hunter2Secret",
    "password: |\n    Hunter2Secret!\n",
    "ENV MYSQL_ROOT_PASSWORD Hunter2Secret!",
    "machine h login bob password Hunter2Secret!",
    "AccountKey=Zm9vYmFyYmF6cXV4Zm9vYmFyYmF6==;",
    "RAILS_MASTER_KEY=a3f1c9d2e4b5a6c7d8e9f0a1b2c3d4e5",
    "aws_secret_access_key wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "db:5432:prod:app:Hunter2Secret!",
    "https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXX",
    "hvs.CAESIJlWZ3V4ZXhhbXBsZXRva2VuZXhhbXBsZQ",
    "s.Ab3dEfGhIjKlMnOpQrStUvWx",
    "alice%2Bx%40example.com",
    "bob@[192.168.1.1]",
    "536.22.1234",
    "4111_1111_1111_1111",
    "password=[REDACTED:x]Hunter2Secret",
    "AKIAIOSFODNN7EXAMPLE\nwJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "User name,Access key ID,Secret access key\nalice,AKIAIOSFODNN7EXAMPLE,wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "DE89 3704 0044 0532 0130 00",
    "GB82WEST12345698765432",
    "YXdzX3NlY3JldF9hY2Nlc3Nfa2V5PXdKYWxyWFV0bkZFTUkvSzdNREVORy9iUHhSZmlDWUVYQU1QTEVLRVk=",
    "JWT_SIGNING=Zk3q9XbT2mPa7LwR8vYc4NdE6hJs1GuK",
    "sshpass -p 'Tr0ub4dor&3' ssh h",
    "username,password\nbob,Hunter2x",
)


def _families() -> list[tuple[str, str, bool]]:
    """(name, unit or prefix, stretched): every prefix of every example, repeated, and
    stretched (its next character repeated to the end)."""
    out: dict[tuple[str, bool], str] = {}
    for example in EXAMPLES:
        for k in sorted({1, 2, 3, 4, 5, 6, 8, 10, 12, 16, 20, 24, len(example) - 1, len(example)}):
            if 0 < k <= len(example):
                out.setdefault((example[:k], False), f"{example[:12]!r}[:{k}] repeated")
                if k < len(example):
                    out.setdefault((example[: k + 1], True), f"{example[:12]!r}[:{k}] then {example[k]!r} stretched")
    return [(name, unit, stretched) for (unit, stretched), name in out.items()]


def _text(unit: str, size: int, *, stretched: bool = False) -> str:
    if stretched:
        return unit[:-1] + unit[-1] * (size - len(unit) + 1)
    return (unit * (size // len(unit) + 1))[:size]


def _cpu_seconds(text: str, *, bound_s: float) -> float:
    return best_cpu_seconds(lambda: redact(text, ALL), bound_s=bound_s)


@pytest.mark.parametrize(("name", "unit"), CURATED, ids=[name for name, _ in CURATED])
def test_curated_families_take_linear_time(name: str, unit: str) -> None:
    assert _cpu_seconds(_text(unit, 256 * 1024), bound_s=2.0) < 2.0, f"{name}: 256 KiB of {unit!r} took too long"


def test_every_prefix_of_every_detectors_example_takes_linear_time() -> None:
    # 32 KiB in under 0.5 s: a linear pass takes milliseconds, a quadratic one (~5e8 steps) seconds.
    slow = []
    for name, unit, stretched in _families():
        took = _cpu_seconds(_text(unit, 32 * 1024, stretched=stretched), bound_s=0.5)
        if took >= 0.5:
            slow.append(f"{name}: {took:.2f} s")
    assert slow == []


def test_the_audit_logs_commands_take_linear_time_too() -> None:
    """``redact_command`` is the same filter: hostile 8 KiB commands (the limit) are cheap."""
    units = ("mysql -p", "sshpass -v", "--token ", "A=", "-H 'Cookie: ", "curl -u :", "'", "htpasswd -b ",
             "PASSWORD '", "a@", "a%40", "h:5432:d:u:", "identified by ", "1 ")  # fmt: skip
    for unit in units:
        command = _text(unit, 8192)
        assert best_cpu_seconds(partial(redact_command, command, ALL), bound_s=0.5) < 0.5, unit

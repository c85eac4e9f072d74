"""Secrets in the forms an attacker (or a careless agent) writes them, for the privacy filter.

Each strategy draws a ``Secret``: the text as written, and the parts of it that must not
survive redaction (``needles``; ``digits`` for card numbers, compared with the digits of
the output). ``cases()`` puts a secret into surrounding text (start, middle or end, glued
to a word, inside JSON, inside JSON inside JSON) and optionally disguises it with Unicode
(full-width forms, zero-width characters, other spaces and dashes, other scripts' digits).
``leaks(secret, text)`` names what survived. ``ATTACKER_EXAMPLES`` are the forms of the
security finding this filter was hardened against; ``pinned(strategy, n)`` draws a fixed
set (the same on every run, for a given Hypothesis version) for tests on the real stack.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TypeVar

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from memstream.privacy import luhn_ok, normalise

T = TypeVar("T")


@dataclass(frozen=True)
class Secret:
    kind: str
    text: str
    #: ASCII strings that must appear neither in the output nor in its normalised view.
    needles: tuple[str, ...] = ()
    #: For numbers (cards, national ids, phones): no 8 of these digits in a row (all of them,
    #: when there are fewer; not one digit repeated) may be left in the output's digits.
    digits: str = ""


@dataclass(frozen=True)
class Case:
    """A text holding one secret."""

    text: str
    secret: Secret


def leaks(secret: Secret, output: str) -> list[str]:
    """What of ``secret`` survives in ``output`` (empty when nothing does)."""
    views = (output, normalise(output)[0])
    found = [n for n in secret.needles if any(n in v for v in views)]
    if secret.digits:
        out_digits = "".join(ch for ch in views[1] if ch.isdigit())
        size = min(8, len(secret.digits))
        windows = {secret.digits[i : i + size] for i in range(len(secret.digits) - size + 1)}
        # A window of one digit repeated (``00000000``) is in every timestamp and id: it says nothing.
        windows = {w for w in windows if len(set(w)) > 1 or size < 8}
        found.extend(w for w in sorted(windows) if w in out_digits)
    return found


# --- building blocks ------------------------------------------------------------------------

#: Surrounding words: no digits, no keyword the filter reacts to.
FILLER_WORDS = (
    "deploy", "the", "service", "with", "rsync", "not", "scp", "please", "check", "logs", "and", "then",
    "retry", "cluster", "region", "ok", "notes", "for", "ticket", "done", "see", "above", "value", "is",
)  # fmt: skip

_ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
_UPPER_DIGITS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"


def _token(alphabet: str, size: int, max_size: int | None = None) -> st.SearchStrategy[str]:
    return st.text(alphabet=alphabet, min_size=size, max_size=max_size or size)


#: A distinctive word of a secret: ``zq`` never occurs in the filler.
secret_words = st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=3, max_size=8).map(lambda w: "zq" + w)
filler = st.lists(st.sampled_from(FILLER_WORDS), min_size=0, max_size=6).map(" ".join)


def _case(word: str, style: str) -> str:
    return {"lower": word.lower(), "upper": word.upper(), "title": word.title(), "as_is": word}[style]


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


# --- card numbers -----------------------------------------------------------------------------

_CARD_PREFIXES = (("4", 16), ("4", 13), ("51", 16), ("55", 16), ("2221", 16), ("34", 15), ("37", 15),
                  ("6011", 16), ("358", 16), ("62", 19), ("36", 14))  # fmt: skip
CARD_SEPARATORS = ("", " ", ".", "-", "\u2013", "\u2014", "\u00a0", "  ", "\u2009", "\u202f", "\u3000", ". ", "\t", "\n",
                   "\r\n", "_", "/", "+", ":", "|", "   ", " / ", ",")  # fmt: skip


def card_number(prefix: str, length: int, body: str) -> str:
    """A Luhn-valid number: ``prefix``, then ``body``'s digits, then the check digit."""
    digits = (prefix + body)[: length - 1].ljust(length - 1, "0")
    check = next(d for d in "0123456789" if luhn_ok(digits + d))
    return digits + check


def group_card(digits: str, grouping: str, sep: str) -> str:
    if grouping == "none":
        return digits
    if grouping == "each":
        return sep.join(digits)
    if grouping == "pairs":
        return sep.join(digits[i : i + 2] for i in range(0, len(digits), 2))
    if len(digits) == 15:  # Amex: 4-6-5
        return sep.join((digits[:4], digits[4:10], digits[10:]))
    return sep.join(digits[i : i + 4] for i in range(0, len(digits), 4))


@st.composite
def card_numbers(draw: st.DrawFn) -> Secret:
    prefix, length = draw(st.sampled_from(_CARD_PREFIXES))
    digits = card_number(prefix, length, draw(_token("0123456789", 18)))
    grouping = draw(st.sampled_from(("standard", "standard", "none", "each", "pairs")))
    sep = draw(st.sampled_from(CARD_SEPARATORS[1:])) if grouping != "none" else ""
    return Secret("card_number", group_card(digits, grouping, sep), digits=digits)


# --- key = value ------------------------------------------------------------------------------

PASSWORD_KEYS = ("password", "passwd", "passphrase", "pwd", "db_password", "DB_PASSWORD", "x-password")
CAMEL_PASSWORD_KEYS = ("dbPassword", "userPassword", "adminPwd")
LINE_SEPARATORS = (":", ": ", " : ", ":\t", "\uff1a", ": \u00a0", " = ", "=> ", ":= ")


@st.composite
def password_lines(draw: st.DrawFn) -> Secret:
    """``password: several words`` (the whole rest of the line is the secret)."""
    if draw(st.booleans()):
        key = _case(draw(st.sampled_from(PASSWORD_KEYS)), draw(st.sampled_from(("lower", "upper", "title"))))
    else:
        key = draw(st.sampled_from(CAMEL_PASSWORD_KEYS))
    words = draw(st.lists(secret_words, min_size=1, max_size=5))
    sep = draw(st.sampled_from(LINE_SEPARATORS))
    return Secret("password", f"{key}{sep}{' '.join(words)}", needles=tuple(words))


KEYS = ("password", "api_key", "apiKey", "api-key", "client_secret", "clientSecret", "secret", "token",
        "access_token", "auth_token", "secret_key", "private_key", "AWS_SECRET_ACCESS_KEY", "pwd")  # fmt: skip
VALUE_CHARS = _ALNUM + "!@#$%^*_+~.-/"


@st.composite
def key_values(draw: st.DrawFn) -> Secret:
    """``token=…``, ``password=…&next=1``: one token, up to the delimiter."""
    key = draw(st.sampled_from(KEYS))
    value = "zq" + draw(_token(VALUE_CHARS, 4, 24))
    sep = draw(st.sampled_from(("=", ": ", ":", "=")))
    tail = draw(st.sampled_from(("", "&next=1", ";", ",", " ")))
    return Secret("password", f"{key}{sep}{value}{tail}", needles=(value,))


@st.composite
def json_pairs(draw: st.DrawFn) -> Secret:
    """``"password": "…"``, ``'api_key': '…'``, ``"client_secret":"…"``."""
    key = draw(st.sampled_from(KEYS))
    quote = draw(st.sampled_from(('"', "'")))
    words = draw(st.lists(secret_words, min_size=1, max_size=3))
    sep = draw(st.sampled_from((":", ": ", " : ", ":\t")))
    style = draw(st.sampled_from(("pair", "object", "dumped")))
    value = " ".join(words)
    if style == "dumped":
        text = json.dumps({key: value, "kind": "config"})
    else:
        text = f"{quote}{key}{quote}{sep}{quote}{value}{quote}"
        if style == "object":
            text = "{" + text + "}"
    return Secret("password", text, needles=tuple(words))


# --- URLs, headers, keys, tokens --------------------------------------------------------------

SCHEMES = ("redis", "rediss", "postgres", "postgresql", "mysql", "mongodb+srv", "amqp", "https", "ftp")


@st.composite
def url_credentials(draw: st.DrawFn) -> Secret:
    scheme = _case(draw(st.sampled_from(SCHEMES)), draw(st.sampled_from(("lower", "upper", "title"))))
    user = draw(st.sampled_from(("", "app", "u", "admin")))
    password = "zq" + draw(_token(_ALNUM + "!$*_~-./+=", 2, 20))
    host = draw(st.sampled_from(("host", "db.internal:5432", "10.0.0.7", "cache")))
    path = draw(st.sampled_from(("", "/0", "/app?sslmode=require")))
    return Secret("connection_secret", f"{scheme}://{user}:{password}@{host}{path}", needles=(password,))


PRIVATE_KEY_LABELS = ("RSA PRIVATE KEY", "PRIVATE KEY", "OPENSSH PRIVATE KEY", "EC PRIVATE KEY",
                      "ENCRYPTED PRIVATE KEY", "PGP PRIVATE KEY BLOCK", "DSA PRIVATE KEY")  # fmt: skip


@st.composite
def private_keys(draw: st.DrawFn) -> Secret:
    label = draw(st.sampled_from(PRIVATE_KEY_LABELS))
    lines = draw(st.lists(_token(_ALNUM + "+/", 16, 64).map(lambda t: "zq" + t), min_size=1, max_size=4))
    dashes = draw(st.sampled_from(("-----", "\u2013\u2013\u2013\u2013\u2013", "----")))
    ending = draw(st.sampled_from(("end", "end", "none")))  # a truncated paste has no END line
    header = f"{dashes}BEGIN {label}{dashes}"
    if label.startswith("PGP"):
        header += "\nVersion: GnuPG v2\n"
    body = "\n".join(lines)
    text = f"{header}\n{body}" + (f"\n{dashes}END {label}{dashes}" if ending == "end" else "")
    return Secret("private_key", text, needles=tuple(lines))


@st.composite
def basic_auth(draw: st.DrawFn) -> Secret:
    user = draw(secret_words)
    password = draw(secret_words)
    encoded = base64.b64encode(f"{user}:{password}".encode()).decode()
    header = _case("Authorization", draw(st.sampled_from(("lower", "upper", "title"))))
    scheme = _case("Basic", draw(st.sampled_from(("lower", "upper", "title"))))
    form = draw(st.sampled_from(("header", "bare", "curl")))
    text = {
        "header": f"{header}: {scheme} {encoded}",
        "bare": f"{scheme} {encoded}",
        "curl": f"curl -H '{header}: {scheme} {encoded}' https://api",
    }[form]
    return Secret("basic_auth", text, needles=(encoded.rstrip("="),))


@st.composite
def bearer_tokens(draw: st.DrawFn) -> Secret:
    token = "zq" + draw(_token(_ALNUM + "._~+/-", 16, 40))
    header = _case("Authorization", draw(st.sampled_from(("lower", "upper", "title"))))
    scheme = _case("Bearer", draw(st.sampled_from(("lower", "upper", "title"))))
    return Secret("bearer_token", f"{header}: {scheme} {token}", needles=(token,))


def _api_key_forms() -> list[st.SearchStrategy[str]]:
    return [
        _token(_ALNUM, 36).map(lambda t: "ghp_" + t),
        _token(_ALNUM, 36).map(lambda t: "gho_" + t),
        _token(_ALNUM + "_", 40, 60).map(lambda t: "github_pat_" + t),
        _token(_UPPER_DIGITS, 16).map(lambda t: "AKIA" + t),
        _token(_ALNUM + "_-", 35).map(lambda t: "AIza" + t),
        _token(_ALNUM + "-", 20, 40).map(lambda t: "xoxb-" + t),
        _token(_ALNUM, 24).map(lambda t: "sk_live_" + t),
        _token(_ALNUM + "_-", 30, 48).map(lambda t: "sk-proj-" + t),
        _token(_ALNUM + "_-", 20).map(lambda t: "glpat-" + t),
        _token(_ALNUM, 34).map(lambda t: "hf_" + t),
    ]


#: How a token is glued to the word before it. ``sk-``, ``hf_`` and ``npm_`` keys need a
#: non-alphanumeric character before them (``task-…`` is not an OpenAI key).
GLUE = ("_", "-", ".", "/", ":", "=", "(", "'", "")


@st.composite
def api_keys(draw: st.DrawFn) -> Secret:
    token = draw(st.one_of(_api_key_forms()))
    glue = draw(st.sampled_from(GLUE))
    if glue == "" and token.startswith(("sk-", "sk_", "hf_")):
        glue = "_"
    word = draw(st.sampled_from(("", "deploy", "key", "prod", "x")))
    text = f"{word}{glue}{token}" if word else token
    return Secret("api_key", text, needles=(token[4:],))


@st.composite
def jwts(draw: st.DrawFn) -> Secret:
    alg = draw(st.sampled_from(("none", "HS256", "RS256")))
    header = _b64url(json.dumps({"alg": alg, "typ": "JWT"}).encode())
    subject = draw(secret_words)
    payload = _b64url(json.dumps({"sub": subject, "admin": True}).encode())
    signature = "" if alg == "none" else draw(_token(_ALNUM + "_-", 20, 43))
    glue = draw(st.sampled_from(("", "token_", "jwt=", "Bearer ")))
    return Secret("jwt", f"{glue}{header}.{payload}.{signature}", needles=(payload,))


# --- national ids --------------------------------------------------------------------------------

#: Separators inside written numbers: spaces, tabs, line breaks, dashes, and any other character
#: that is no letter or digit (``536.22.1234``, ``536/22/1234``).
NUMBER_SEPARATORS = (" ", "\t", "\n", "\r\n", "-", ".", "/", "_", "|", ":", "+")


def thai_id(body: str) -> str:
    """A valid Thai national id: a first digit 1-8, eleven of ``body``'s, then the checksum."""
    digits = ("1" + body + "0" * 11)[:12]
    return digits + str((11 - sum(int(d) * (13 - i) for i, d in enumerate(digits)) % 11) % 10)


@st.composite
def national_ids(draw: st.DrawFn) -> Secret:
    form = draw(st.sampled_from(("ssn", "ssn_mixed", "nino", "thai", "thai_grouped")))
    sep = draw(st.sampled_from(NUMBER_SEPARATORS))
    if form in ("ssn", "ssn_mixed"):
        area = draw(st.integers(1, 665).filter(lambda a: a != 666))
        digits = f"{area:03d}{draw(st.integers(1, 99)):02d}{draw(st.integers(1, 9999)):04d}"
        other = draw(st.sampled_from((*NUMBER_SEPARATORS, "  ", " - "))) if form == "ssn_mixed" else sep
        return Secret("national_id", f"{digits[:3]}{sep}{digits[3:5]}{other}{digits[5:]}", digits=digits)
    if form == "nino":
        letters = draw(st.sampled_from(("AB", "CE", "JK", "ZY", "WT")))
        digits = draw(_token("0123456789", 6))
        suffix = draw(st.sampled_from("ABCD"))
        sep = draw(st.sampled_from(("", " ", "-", "\t", ".", "/")))
        text = sep.join((letters, digits[:2], digits[2:4], digits[4:], suffix))
        return Secret("national_id", _case(text, draw(st.sampled_from(("upper", "lower")))), digits=digits)
    digits = thai_id(draw(_token("0123456789", 11)))
    if form == "thai":
        return Secret("national_id", digits, digits=digits)
    return Secret(
        "national_id", sep.join((digits[0], digits[1:5], digits[5:10], digits[10:12], digits[12])), digits=digits
    )


# --- key names that say a secret follows ------------------------------------------------------

#: Secret words a key name may contain, glued to anything before or after them.
NAME_WORDS = ("password", "passwd", "pwd", "secret", "token", "api_key", "apikey", "access_key", "auth",
              "credential", "private_key", "session_token", "Password", "PASSWORD", "Secret", "Token", "ApiKey")  # fmt: skip
NAME_PREFIXES = ("", "PG", "my", "DB_", "app.", "x-", "AWS_SESSION_", "db", "client_", "MYSQL_")
NAME_SUFFIXES = ("", "_value", "1", "Value", "-b64")


@st.composite
def glued_key_values(draw: st.DrawFn) -> Secret:
    """``PGPASSWORD=…``, ``mypassword: …``, ``"AWS_SESSION_TOKEN": "…"``: any name containing a secret word."""
    word = draw(st.sampled_from(NAME_WORDS))
    if word in ("auth",):  # "auth" glued to what follows could spell "author"
        suffix = draw(st.sampled_from(("", "_value", "1")))
    else:
        suffix = draw(st.sampled_from(NAME_SUFFIXES))
    name = draw(st.sampled_from(NAME_PREFIXES)) + word + suffix
    value = "zq" + draw(_token(_ALNUM + "+/=_-", 4, 40))
    form = draw(st.sampled_from(("=", ": ", "json", "single")))
    if form == "json":
        return Secret("password", json.dumps({name: value}), needles=(value,))
    if form == "single":
        return Secret("password", f"'{name}': '{value}'", needles=(value,))
    return Secret("password", f"{name}{form}{value}", needles=(value,))


@st.composite
def long_values(draw: st.DrawFn) -> Secret:
    """A secret longer than any cap the filter once had: its head and tail must both go."""
    size = draw(st.sampled_from((300, 513, 800, 2000, 3000)))
    body = "zq" + draw(_token(_ALNUM, 40)) * (size // 40 + 1)
    body = body[:size]
    form = draw(st.sampled_from(("key", "json", "url_password", "url_user", "env", "bearer")))
    text = {
        "key": f"password={body}",
        "json": json.dumps({"SessionToken": body}),
        "url_password": f"postgres://app:{body}@db/x",
        "url_user": f"postgres://{'u' * 300}:{body}@db/x",
        "env": f"AWS_SESSION_TOKEN={body}",
        "bearer": f"Authorization: Bearer {body}",
    }[form]
    return Secret("password", text, needles=(body[:24], body[-24:]))


# --- command lines ------------------------------------------------------------------------------


@st.composite
def command_lines(draw: st.DrawFn) -> Secret:
    """The credential forms command lines carry, in content, tool events and audited commands."""
    value = "zq" + draw(_token(_ALNUM + "_.!", 4, 24))
    dash = draw(st.sampled_from(("--", "\uff0d\uff0d", "\u2013\u2013")))
    form = draw(st.sampled_from((
        "mysql -u root -p{v} shop", "mysqldump -p{v} db", "sshpass -p {v} ssh deploy", "sshpass -p{v} scp f h:",
        "curl -u admin:{v} https://x", "wget --user bob:{v} u", "{d}token {v}", "{d}api-key {v}", "{d}password={v}",
        "mytool {d}password {v}", "PGPASSWORD={v} psql -h db", "export DB_TOKEN={v}", "Cookie: session={v}; theme=dark",
        "curl -H 'Cookie: sid={v}' u", "curl -H 'X-Auth-Token: {v}' u", "docker login -u a -p {v} registry",
        "podman login -p {v} r", "redis-cli -a {v} ping", "mongosh -u u -p {v} db", "sqlcmd -S s -U sa -P {v}",
        "htpasswd -b file user {v}", "htpasswd -nb user {v}", "aws configure set aws_secret_access_key {v}",
        "aws configure set aws_session_token {v}", "git config --global user.password {v}",
        "ldapsearch -x -w {v} -b dc", "openssl rsa -passin pass:{v} -in k", "keytool -storepass {v} -list",
        "smbclient -U bob%{v} //h/s", "ssh-keygen -N {v} -f k", "zip -P {v} a.zip f",
    )))  # fmt: skip
    return Secret("cli", form.format(v=value, d=dash), needles=(value,))


# --- personal data (only under a policy that redacts it) -------------------------------------


@st.composite
def emails(draw: st.DrawFn) -> Secret:
    form = draw(st.sampled_from(("plain", "plus", "quoted", "idn", "localhost", "subdomain", "url_encoded",
                                 "url_encoded_plus", "html", "ip_literal", "ipv6_literal")))  # fmt: skip
    local = "zq" + draw(_token("abcdefghijklmnopqrstuvwxyz", 2, 10))
    text = {
        "url_encoded": f"{local}%40example.com",
        "url_encoded_plus": f"{local}%2Btag%40mail.example.org",
        "html": f"{local}&#64;example.com",
        "ip_literal": f"{local}@[192.168.1.1]",
        "ipv6_literal": f"{local}@[IPv6:2001:db8::1]",
        "plain": f"{local}@example.com",
        "plus": f"{local}+tag@mail.example.co.uk",
        "quoted": f'"{local} doe"@example.com',
        "idn": f"{local}\u03b4\u03bf\u03ba@\u03c0\u03b1\u03c1\u03ac\u03b4\u03b5\u03b9\u03b3\u03bc\u03b1.\u03b4\u03bf\u03ba\u03b9\u03bc\u03ae",
        "localhost": f"{local}@localhost",
        "subdomain": f"{local}@eu.corp.example.org",
    }[form]
    return Secret("email", text, needles=(local,))


@st.composite
def phones(draw: st.DrawFn) -> Secret:
    sep = draw(st.sampled_from((" ", "-", ".", "\t", "\n", "", "/", "_")))
    form = draw(st.sampled_from(("nanp", "nanp_plain", "intl", "intl00", "fr", "uk", "th")))
    d = draw(_token("0123456789", 10))
    text = {
        "nanp": sep.join(("415", "555", "2" + d[:3])),
        "nanp_plain": "415555" + "2" + d[:3],
        "intl": sep.join(("+44", "20", "79" + d[:2], d[2:6])),
        "intl00": sep.join(("0044", "20", "79" + d[:2], d[2:6])),
        "fr": sep.join(("06", d[:2], d[2:4], d[4:6], d[6:8])),
        "uk": sep.join(("020", "79" + d[:2], d[2:6])) if sep else "020" + "79" + d[:2] + d[2:6],
        "th": sep.join(("081", d[:3], d[3:7])) if sep else "081" + d[:3] + d[3:7],
    }[form]
    return Secret("phone", text, digits="".join(c for c in text if c.isdigit()))


# --- the third red team: every way a name, a separator and a value are written ---------------

#: A value that looks like a secret wherever it stands: letters, a digit and a symbol.
_SECRET_VALUE = st.tuples(_token("abcdefghijklmnopqrstuvwxyzABCDEFGHIJ", 3, 10), _token("0123456789", 1, 3),
                          st.sampled_from("!#%*+._~-")).map(lambda t: f"zq{t[0]}{t[1]}{t[2]}")  # fmt: skip


@st.composite
def sql_passwords(draw: st.DrawFn) -> Secret:
    """``CREATE USER … PASSWORD '…'``, ``ALTER ROLE … PASSWORD``, ``SET PASSWORD FOR … = …``,
    ``IDENTIFIED BY``, in any case, alone or inside ``psql -c "…"``."""
    value = draw(_SECRET_VALUE)
    form = draw(st.sampled_from((
        "CREATE USER app WITH PASSWORD '{v}';", "ALTER ROLE app PASSWORD '{v}'", "CREATE ROLE app LOGIN PASSWORD '{v}'",
        "ALTER USER app WITH ENCRYPTED PASSWORD '{v}' VALID UNTIL 'infinity'", "SET PASSWORD FOR 'bob'@'localhost' = '{v}';",
        "SET PASSWORD FOR bob = PASSWORD('{v}');", "SET PASSWORD = '{v}'", "CREATE USER bob IDENTIFIED BY '{v}';",
        "ALTER USER bob IDENTIFIED BY {v};", "CREATE USER 'a'@'%' IDENTIFIED WITH mysql_native_password BY '{v}';",
        "CREATE LOGIN app WITH PASSWORD = '{v}'", 'psql -c "ALTER ROLE app PASSWORD \'{v}\'"',
        "CREATE USER app WITH PASSWORD \"{v}\"",
    )))  # fmt: skip
    text = form.format(v=value)
    if draw(st.booleans()):
        text = text.lower().replace(value.lower(), value)
    return Secret("password", text, needles=(value,))


#: Names of a secret as keys are written in files, XML, YAML and environments.
SECRET_NAMES = ("password", "Password", "PASSWORD", "db.password", "secret", "api_key", "apiKey", "ApiSecret",
                "DB_PASSWORD", "MYSQL_ROOT_PASSWORD", "client_secret", "auth_token", "privateKey")  # fmt: skip


@st.composite
def xml_secrets(draw: st.DrawFn) -> Secret:
    """``<password>…</password>`` (namespaces, attributes, CDATA), ``<add key="…" value="…"/>``,
    ``<entry key="…">…</entry>``, Hadoop's ``<name>…</name><value>…</value>``, attributes."""
    name = draw(st.sampled_from(SECRET_NAMES))
    tag = name.replace(".", "_")
    value = draw(_SECRET_VALUE)
    form = draw(
        st.sampled_from(("element", "namespaced", "attributes", "cdata", "add", "entry", "hadoop", "attribute"))
    )
    text = {
        "element": f"<{tag}>{value}</{tag}>",
        "namespaced": f"<db:{tag}>{value}</db:{tag}>",
        "attributes": f'<{tag} encrypted="false">\n  {value}\n</{tag}>',
        "cdata": f"<{tag}><![CDATA[{value}]]></{tag}>",
        "add": f'<add key="{name}" value="{value}" />',
        "entry": f'<entry key="{name}">{value}</entry>',
        "hadoop": f"<property>\n  <name>{name}</name>\n  <value>{value}</value>\n</property>",
        "attribute": f'<user name="bob" {tag}="{value}"/>',
    }[form]
    return Secret("password", text, needles=(value,))


@st.composite
def yaml_values(draw: st.DrawFn) -> Secret:
    """A YAML block scalar (``|``, ``>``, with chomping, indentation indicators or a tag) of one
    or more lines; a Kubernetes env entry (``- name: DB_PASSWORD⏎  value: …``); JSON name/value."""
    name = draw(st.sampled_from(SECRET_NAMES))
    words = draw(st.lists(_SECRET_VALUE, min_size=1, max_size=3))
    form = draw(st.sampled_from(("block", "listed_block", "k8s", "json_pair")))
    if form in ("block", "listed_block"):
        indicator = draw(st.sampled_from(("|", ">", "|-", ">-", "|+", ">2", "!vault |")))
        indent = draw(st.sampled_from(("  ", "    ", "\t")))
        lead = "- " if form == "listed_block" else ""
        body = "\n".join(f"{lead and '  '}{indent}{w}" for w in words)
        text = f"{lead}{name}: {indicator}\n{body}"
    elif form == "k8s":
        text = f"- name: {name}\n  value: {words[0]}"
    else:
        text = json.dumps({"name": name, "value": " ".join(words)})
    return Secret("password", text, needles=tuple(words))


@st.composite
def spaced_values(draw: st.DrawFn) -> Secret:
    """A name and its value separated by blanks only: a Dockerfile's ``ENV``, .netrc, .properties,
    ``aws_secret_access_key wJalr…``, an .env-style ``NAME value`` line."""
    value = draw(_SECRET_VALUE)
    blank = draw(st.sampled_from((" ", "  ", "\t")))
    form = draw(st.sampled_from((
        "ENV MYSQL_ROOT_PASSWORD{b}{v}", "ENV DB_TOKEN{b}{v} more words", "MYSQL_ROOT_PASSWORD{b}{v}",
        "aws_secret_access_key{b}{v}", "machine api.example.com login bob password{b}{v}",
        "machine h\n  login bob\n  password{b}{v}", "spring.datasource.password{b}{v}", "setenv API_TOKEN{b}{v}",
        "my password{b}{v} works", "the token{b}{v} expired", "PASSWORD{b}'{v}'", "secret{b}\"{v}\"",
    )))  # fmt: skip
    return Secret("password", form.format(b=blank, v=value), needles=(value,))


_HEX = "0123456789abcdef"
_B64 = _ALNUM + "+/"


@st.composite
def key_names(draw: st.DrawFn) -> Secret:
    """Names that end in a key word or name a signature, with a long random value:
    ``ENCRYPTION_KEY=…``, ``AccountKey=…`` in a connection string, ``?sig=…``, ``&key=…``."""
    value = "zq" + draw(st.one_of(_token(_HEX, 30, 64), _token(_B64, 30, 60).map(lambda t: t + "1==")))
    form = draw(st.sampled_from((
        "ENCRYPTION_KEY={v}", "SIGNING_KEY: {v}", "RAILS_MASTER_KEY={v}", "jwt-signing-key={v}", '"masterKey": "{v}"',
        "MASTERKEY={v}", "export ENCRYPTION_KEY={v}", "ENCRYPTION_KEY {v}",
        "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey={v};EndpointSuffix=core.windows.net",
        "Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=Root;SharedAccessKey={v}",
        "https://acct.blob.core.windows.net/c/b?sv=2020-08-04&sp=r&sig={v}", "https://maps.example.com/api?key={v}&q=1",
        "https://s3.example.com/b/o?X-Amz-Signature={v}", "https://x.example.com/cb?token={v}",
    )))  # fmt: skip
    return Secret("password", form.format(v=value), needles=(value[:20], value[-12:]))


@st.composite
def pgpass_lines(draw: st.DrawFn) -> Secret:
    """``host:port:database:user:password`` (.pgpass)."""
    value = draw(_SECRET_VALUE)
    host = draw(st.sampled_from(("db", "localhost", "*", "db.example.com", "10.0.0.5")))
    port = draw(st.sampled_from(("5432", "6432", "*")))
    database = draw(st.sampled_from(("prod", "*", "app_db")))
    user = draw(st.sampled_from(("app", "*", "postgres")))
    return Secret("password", f"{host}:{port}:{database}:{user}:{value}", needles=(value,))


@st.composite
def webhook_urls(draw: st.DrawFn) -> Secret:
    """Webhook and bot URLs whose path is the secret (Slack, Discord, Teams, Zapier, Telegram, Mattermost)."""
    token = "zq" + draw(_token(_ALNUM, 24, 40))
    form = draw(st.sampled_from((
        "https://hooks.slack.com/services/T0123ABCD/B0456EFGH/{t}", "https://hooks.slack.com/workflows/T01/A02/123/{t}",
        "https://discord.com/api/webhooks/123456789012345678/{t}", "https://discordapp.com/api/webhooks/1234/{t}",
        "https://acme.webhook.office.com/webhookb2/{t}@abc/IncomingWebhook/def/ghi",
        "https://hooks.zapier.com/hooks/catch/123456/{t}/", "https://api.telegram.org/bot123456789:{t}/sendMessage",
        "https://chat.example.com/hooks/{t}",
    )))  # fmt: skip
    return Secret("connection_secret", form.format(t=token), needles=(token,))


@st.composite
def vault_tokens(draw: st.DrawFn) -> Secret:
    """HashiCorp Vault tokens: ``hvs.``/``hvb.``/``hvr.`` and the legacy ``s.`` + 24 characters."""
    if draw(st.booleans()):
        token = draw(st.sampled_from(("hvs.", "hvb.", "hvr."))) + "zq" + draw(_token(_ALNUM + "_-", 22, 90))
    else:
        body = draw(_token(_ALNUM, 21))
        token = "s.Zq" + body + "7"  # 24 characters: upper and lower case and a digit
    glue = draw(st.sampled_from(("", "VAULT_TOKEN=", "X-Vault-Token: ", "token ", "'")))
    return Secret("api_key", f"{glue}{token}", needles=(token[2:],))


@st.composite
def placeholder_prefixed(draw: st.DrawFn) -> Secret:
    """A secret behind a fake placeholder: ``password=[REDACTED:foo]Hunter2``, ``mysql -p[REDACTED:x]…``."""
    value = draw(_SECRET_VALUE)
    more = draw(_SECRET_VALUE)
    fake = "[REDACTED:" + draw(st.sampled_from(("foo", "x", "password", "cli_password", "api_key"))) + "]"
    form = draw(st.sampled_from((
        "password={p}{v}", "mysql -u root -p{p}{v} shop", "PGPASSWORD={p}{v} psql", "password: {p} {v} {w}",
        "token: {p}{v}", "--token {p}{v}", "postgres://u:{p}{v}@db/x", "sshpass -p {p}{v} ssh h",
        '{{"api_key": "{p}{v}"}}', "curl -u admin:{p}{v} https://x", "password={p}{p}{v}", "<password>{p}{v}</password>",
    )))  # fmt: skip
    return Secret("password", form.format(p=fake, v=value, w=more), needles=(value,))


# --- issue 45: secrets that come in pairs or layouts ------------------------------------------

_AWS_SECRET_ALPHABET = _ALNUM + "+/"


@st.composite
def aws_secret_keys(draw: st.DrawFn) -> str:
    """40 characters of base64 with upper and lower case and a digit (as every real one has)."""
    body = draw(_token(_AWS_SECRET_ALPHABET, 37))
    return "".join(sorted((draw(st.sampled_from("ABCDEFGHIJKLMNOPQRSTUVWXYZ")), "z", "7"))) + body


@st.composite
def aws_pairs(draw: st.DrawFn) -> Secret:
    """An access key id and its secret access key, in each layout AWS prints or people paste:
    same line, next line, either order, credentials.csv (new and old, with the console password),
    ``aws configure``'s prompts, ``--output text``, INI, env, JSON, YAML, Terraform, a Markdown
    table, prose."""
    key_id = "AKIA" + draw(_token(_UPPER_DIGITS, 16))
    secret = draw(aws_secret_keys())
    password = draw(_SECRET_VALUE)
    sep = draw(st.sampled_from((" ", "\t", ":", ",", " / ", "\n", "\r\n", "\n\n", " = ")))
    form = draw(st.sampled_from((
        "{i}{sep}{s}", "{s}{sep}{i}", "Access key ID,Secret access key\n{i},{s}\n",
        "User name,Password,Access key ID,Secret access key,Console login link\nalice,{p},{i},{s},https://x.signin.aws.amazon.com/console\n",
        "AWS Access Key ID [None]: {i}\nAWS Secret Access Key [None]: {s}\nDefault region name [None]: eu-west-1",
        "ACCESSKEY\t{i}\t2024-03-09T18:39:23+00:00\t{s}\tActive\talice",
        "[default]\naws_access_key_id = {i}\naws_secret_access_key = {s}", "AWS_ACCESS_KEY_ID={i}\nAWS_SECRET_ACCESS_KEY={s}",
        "json", "credentials:\n  access_key_id: {i}\n  secret_access_key: {s}", 'access_key = "{i}"\nsecret_key = "{s}"',
        "| {i} | {s} | Active |", "the key is {i} and the secret {s}, rotate both",
    )))  # fmt: skip
    if form == "json":
        text = json.dumps({"AccessKey": {"UserName": "alice", "AccessKeyId": key_id, "Status": "Active",
                                         "SecretAccessKey": secret}}, indent=draw(st.sampled_from((None, 2, 4))))  # fmt: skip
    else:
        text = form.format(i=key_id, s=secret, p=password, sep=sep)
    if text.startswith("User name") or text.startswith("Access key ID"):
        text = "\n" + text  # a table starts on a line of its own
    needles = (secret[:20], secret[20:]) + ((password,) if "{p}" in form else ())
    return Secret("aws_secret_key", text, needles=needles)


#: IBAN formats by country (python-stdnum's registry): (country, BBAN of digits "n", letters "a", either "c").
_IBAN_FORMATS = (("DE", "n" * 18), ("GB", "aaaa" + "n" * 14), ("FR", "n" * 10 + "c" * 11 + "nn"), ("NL", "aaaa" + "n" * 10),
                 ("ES", "n" * 20), ("IT", "a" + "n" * 10 + "c" * 12), ("CH", "n" * 5 + "c" * 12), ("BE", "n" * 12),
                 ("PL", "n" * 24), ("NO", "n" * 11), ("AT", "n" * 16), ("IE", "aaaa" + "n" * 14))  # fmt: skip
_IBAN_CLASSES = {"n": "0123456789", "a": "ABCDEFGHIJKLMNOPQRSTUVWXYZ", "c": _UPPER_DIGITS}


def iban(country: str, bban: str) -> str:
    """A valid IBAN: the country, the check digits that make it pass mod 97, the BBAN."""
    numeric = "".join(str(int(c, 36)) for c in bban + country) + "00"
    return f"{country}{98 - int(numeric) % 97:02d}{bban}"


@st.composite
def ibans(draw: st.DrawFn) -> Secret:
    """A valid IBAN of a dozen countries: compact, in groups of four (blanks, tabs, dashes), in
    any case, alone or after ``IBAN:``, in JSON."""
    country, layout = draw(st.sampled_from(_IBAN_FORMATS))
    bban = "".join(draw(st.sampled_from(_IBAN_CLASSES[c])) for c in layout)
    compact = iban(country, bban)
    sep = draw(st.sampled_from(("", " ", " ", "-", "\t")))
    text = sep.join(compact[i : i + 4] for i in range(0, len(compact), 4)) if sep else compact
    text = _case(text, draw(st.sampled_from(("as_is", "as_is", "lower"))))
    form = draw(
        st.sampled_from(("{t}", "IBAN: {t}", "IBAN {t}, BIC COBADEFFXXX", '{{"iban": "{t}"}}', "pay to {t} by friday"))
    )
    return Secret(
        "iban",
        form.format(t=text),
        needles=(bban[-8:].lower(), bban[-8:]),
        digits="".join(c for c in bban if c.isdigit()),
    )


_INNER_SECRETS = st.one_of(key_values(), json_pairs(), url_credentials(), api_keys(), aws_pairs(),
                           command_lines())  # fmt: skip


@st.composite
def encoded_secrets(draw: st.DrawFn) -> Secret:
    """A secret in any of a few forms, base64-encoded (standard or URL-safe, padded or not,
    wrapped at 76 characters or not): ``echo … | base64 -d``, a data URL, a config value."""
    inner = draw(_INNER_SECRETS)
    raw = inner.text.encode()
    if draw(st.booleans()):
        blob = base64.b64encode(raw).decode()
    else:
        blob = base64.urlsafe_b64encode(raw).decode()
    if draw(st.booleans()):
        blob = blob.rstrip("=")
    if len(blob) > 76 and draw(st.booleans()):
        blob = "\n".join(blob[i : i + 76] for i in range(0, len(blob), 76))
    form = draw(
        st.sampled_from(("{b}", "echo {b} | base64 -d", "data:text/plain;base64,{b}", "config {b}", "blob: {b}"))
    )
    pieces = [p for p in blob.split("\n") if p]
    return Secret("encoded_secret", form.format(b=blob), needles=(pieces[0][:16], pieces[-1][-8:]))


#: Names without a secret word that hold one.
RANDOM_VALUE_NAMES = ("JWT_SIGNING", "SESSION_SEED", "app.jwt.signer", "cookieSeed", "hmac", "MASTER", "LICENSE",
                      "ROUTER_SEED", "webhookSigning", "signing", "X_SIG_V2", "seed")  # fmt: skip
_RANDOM_ALPHABETS = (_ALNUM, "0123456789abcdef", _ALNUM + "+/", _ALNUM + "-_")


@st.composite
def random_values(draw: st.DrawFn) -> Secret:
    """A machine-generated value (base62, hex, base64, URL-safe base64; 24-64 characters) assigned
    to a name without a secret word, written as env, YAML, JSON, Go, Ruby, a shell export or a flag.
    The values are drawn among those the filter calls random (``looks_random``: its rate on
    random tokens is measured in ``tests/unit/test_privacy_labelled.py``): what is tested here
    is every layout and field."""
    from memstream.unnamed_secrets import looks_random

    alphabet = draw(st.sampled_from(_RANDOM_ALPHABETS))
    value = draw(st.text(alphabet=alphabet, min_size=24, max_size=64).filter(looks_random))
    name = draw(st.sampled_from(RANDOM_VALUE_NAMES))
    form = draw(st.sampled_from(("{n}={v}", "{n}: {v}", '"{n}": "{v}"', "{n} := {v}", "{n} => '{v}'", "export {n}={v}",
                                 "--{n}={v}", "{n} = \"{v}\"", "{n}:\n  {v}")))  # fmt: skip
    return Secret("random_value", form.format(n=name, v=value), needles=(value[:12], value[-12:]))


SECRET_COLUMN_HEADERS = (
    "password",
    "Password",
    "Secret access key",
    "api_token",
    "DB Password",
    "client_secret",
    "PASSWORD",
)


@st.composite
def secret_columns(draw: st.DrawFn) -> Secret:
    """A table whose header names a secret column: CSV, TSV, ``;``, a Markdown table; one to
    three rows."""
    header = draw(st.sampled_from(SECRET_COLUMN_HEADERS))
    others = draw(
        st.lists(st.sampled_from(("user", "host", "port", "User name", "role")), min_size=1, max_size=3, unique=True)
    )
    column = draw(st.integers(0, len(others)))
    names = [*others[:column], header, *others[column:]]
    rows = draw(st.lists(_SECRET_VALUE, min_size=1, max_size=3, unique=True))
    style = draw(st.sampled_from((",", "\t", ";", "markdown", "quoted")))

    def line(cells: list[str]) -> str:
        if style == "markdown":
            return "| " + " | ".join(cells) + " |"
        if style == "quoted":
            return ",".join(f'"{c}"' for c in cells)
        return style.join(cells)

    lines = [line(names)] + (["|---" * len(names) + "|"] if style == "markdown" else [])
    for value in rows:
        lines.append(line([*(f"x{i}" for i in range(column)), value, *(f"y{i}" for i in range(len(others) - column))]))
    return Secret("password", "\n" + "\n".join(lines) + "\n", needles=tuple(rows))


@st.composite
def quoted_command_lines(draw: st.DrawFn) -> Secret:
    """A command-line password, quoted, holding what separates shell commands: redacted whole."""
    value = "zq" + draw(_token(_ALNUM, 2, 8)) + draw(st.sampled_from("&;|()<>")) + draw(_token(_ALNUM + "&;|", 1, 8))
    quote = draw(st.sampled_from(("'", '"')))
    form = draw(st.sampled_from((
        "sshpass -p {q}{v}{q} ssh deploy", "mysql -u root -p{q}{v}{q} shop", "curl -u {q}admin:{v}{q} https://x",
        "redis-cli -a {q}{v}{q} ping", "htpasswd -b f admin {q}{v}{q}", "git config user.password {q}{v}{q}",
        "docker login -u a -p {q}{v}{q} registry", "sqlcmd -S db -U sa -P {q}{v}{q}",
    )))  # fmt: skip
    operator = next(c for c in value[2:] if c in "&;|()<>")
    head, _, tail = value.partition(operator)
    return Secret("cli", form.format(q=quote, v=value), needles=(head, operator + tail))


ISSUE_45_STRATEGIES: dict[str, st.SearchStrategy[Secret]] = {
    "aws_pair": aws_pairs(),
    "iban": ibans(),
    "encoded_secret": encoded_secrets(),
    "random_value": random_values(),
    "secret_column": secret_columns(),
    "quoted_command_line": quoted_command_lines(),
}


PERSONAL_STRATEGIES: dict[str, st.SearchStrategy[Secret]] = {"email": emails(), "phone": phones()}


SECRET_STRATEGIES: dict[str, st.SearchStrategy[Secret]] = {
    "card_number": card_numbers(),
    "password_line": password_lines(),
    "key_value": key_values(),
    "json_pair": json_pairs(),
    "url_credentials": url_credentials(),
    "private_key": private_keys(),
    "basic_auth": basic_auth(),
    "bearer_token": bearer_tokens(),
    "api_key": api_keys(),
    "jwt": jwts(),
    "national_id": national_ids(),
    "glued_key_value": glued_key_values(),
    "long_value": long_values(),
    "command_line": command_lines(),
    "sql_password": sql_passwords(),
    "xml": xml_secrets(),
    "yaml": yaml_values(),
    "spaced": spaced_values(),
    "key_name": key_names(),
    "pgpass": pgpass_lines(),
    "webhook": webhook_urls(),
    "vault": vault_tokens(),
    "placeholder_prefixed": placeholder_prefixed(),
    **ISSUE_45_STRATEGIES,
}
secrets = st.one_of(*SECRET_STRATEGIES.values())


# --- Unicode disguises ------------------------------------------------------------------------


def _fullwidth(text: str) -> str:
    return "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in text)


def _other_digits(base: int) -> Callable[[str], str]:
    return lambda text: "".join(chr(base + ord(c) - 48) if c.isdigit() and c.isascii() else c for c in text)


def _spaces(text: str) -> str:
    return text.replace(" ", "\u00a0")


def _dashes(text: str) -> str:
    return text.replace("-", "\u2013")


DISGUISES: dict[str, Callable[[str], str]] = {
    "none": lambda text: text,
    "fullwidth": _fullwidth,
    "thai_digits": _other_digits(0x0E50),
    "arabic_indic_digits": _other_digits(0x0660),
    "math_digits": _other_digits(0x1D7CE),
    "nbsp": _spaces,
    "en_dash": _dashes,
}


@st.composite
def disguised(draw: st.DrawFn, strategy: st.SearchStrategy[Secret] = secrets) -> Secret:
    """A secret, possibly with Unicode look-alikes and zero-width characters inside."""
    secret = draw(strategy)
    text = DISGUISES[draw(st.sampled_from(tuple(DISGUISES)))](secret.text)
    if draw(st.booleans()):  # zero-width characters (also a soft hyphen) at random places
        chars = list(text)
        for _ in range(draw(st.integers(1, 3))):
            at = draw(st.integers(1, max(1, len(chars) - 1)))
            chars.insert(at, draw(st.sampled_from(("\u200b", "\u200d", "\u00ad", "\u2060", "\ufeff"))))
        text = "".join(chars)
    return replace(secret, text=text)


# --- in context -------------------------------------------------------------------------------

SEPARATORS = (" ", "\n", ", ", " (", "\t", ": ", " \u2014 ", "\n\n")


@st.composite
def cases(draw: st.DrawFn, strategy: st.SearchStrategy[Secret] | None = None) -> Case:
    """A secret somewhere in a text: alone, at the start, in the middle or at the end; as
    plain text, or inside a JSON document (or a JSON document inside one)."""
    secret = draw(strategy if strategy is not None else disguised())
    before, after = draw(filler), draw(filler)
    position = draw(st.sampled_from(("alone", "start", "middle", "end")))
    sep_before = draw(st.sampled_from(SEPARATORS))
    sep_after = draw(st.sampled_from(SEPARATORS))
    text = {
        "alone": secret.text,
        "start": f"{secret.text}{sep_after}{after or 'ok'}",
        "middle": f"{before or 'see'}{sep_before}{secret.text}{sep_after}{after or 'ok'}",
        "end": f"{before or 'see'}{sep_before}{secret.text}",
    }[position]
    wrap = draw(st.sampled_from(("plain", "plain", "json", "json_in_json")))
    if wrap == "json":
        text = json.dumps({"note": text, "ok": True}, ensure_ascii=False)
    elif wrap == "json_in_json":
        text = json.dumps({"body": json.dumps({"note": text}, ensure_ascii=False)}, ensure_ascii=False)
    return Case(text, secret)


# --- the security finding's examples ------------------------------------------------------------

_CARD = "4111111111111111"
_GHP = "ghp_16C7e42F292c6912E7710c838347Ae178B4a"
_JWT_NONE = "eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0.eyJzdWIiOiJ6cWFkbWluIiwiYWRtaW4iOnRydWV9."  # alg none, no signature


def _card_case(text: str) -> Case:
    return Case(text, Secret("card_number", text, digits=_CARD))


ATTACKER_EXAMPLES: tuple[Case, ...] = (
    _card_case("card 4111.1111.1111.1111 thanks"),
    _card_case("card 4111\u20131111\u20131111\u20131111 thanks"),
    _card_case("card 4111\u00a01111\u00a01111\u00a01111 thanks"),
    _card_case("card 4111  1111  1111  1111 thanks"),
    _card_case("card \uff14\uff11\uff11\uff11\uff11\uff11\uff11\uff11\uff11\uff11\uff11\uff11\uff11\uff11\uff11\uff11"),
    Case('{"password": "zqhunter two", "user": "bob"}', Secret("password", "", needles=("zqhunter", "two"))),
    Case('{"api_key": "zqAbC123xyz789", "region": "eu"}', Secret("password", "", needles=("zqAbC123xyz789",))),
    Case("use redis://:zqRedisPw@cache:6379/0", Secret("connection_secret", "", needles=("zqRedisPw",))),
    Case("POSTGRES://app:zqPgPass@db/app", Secret("connection_secret", "", needles=("zqPgPass",))),
    Case(
        "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlQOYBGZqzqPgpSecretBody\n=zqAb\n-----END PGP PRIVATE KEY BLOCK-----",
        Secret("private_key", "", needles=("lQOYBGZqzqPgpSecretBody", "=zqAb")),
    ),
    Case("Authorization: Basic emF1c2VyOnpxcGFzcw==", Secret("basic_auth", "", needles=("emF1c2VyOnpxcGFzcw",))),
    Case(f"token deploy_{_GHP} set", Secret("api_key", "", needles=(_GHP[4:],))),
    Case(f"session {_JWT_NONE} ok", Secret("jwt", "", needles=(_JWT_NONE.split(".")[1],))),
    Case(
        "PASSWORD: correct horse battery staple\nthanks",
        Secret("password", "", needles=("correct", "horse", "battery", "staple")),
    ),
)


def pinned(strategy: st.SearchStrategy[T], n: int) -> list[T]:
    """``n`` draws of ``strategy``, the same ones on every run (derandomized Hypothesis)."""
    drawn: list[T] = []

    @settings(
        derandomize=True, max_examples=n, database=None, phases=[Phase.generate], deadline=None,
        suppress_health_check=list(HealthCheck),
    )  # fmt: skip
    @given(strategy)
    def collect(value: T) -> None:
        drawn.append(value)

    collect()
    return drawn[:n]


# --- the second red team's examples (each class is also drawn by a strategy above) --------------

_B64_800 = ("Zm9vYmFyYmF6cXV4" * 50)[:800]


def _needles(kind: str, text: str, *needles: str) -> Case:
    return Case(text, Secret(kind, "", needles=needles))


def _digits_case(text: str, digits: str) -> Case:
    return Case(text, Secret("number", "", digits=digits))


RED_TEAM_EXAMPLES: tuple[Case, ...] = (
    # separators inside numbers: tabs and line breaks
    _digits_case("card 4111\t1111\t1111\t1111 ok", _CARD),
    _digits_case("card 4111\n1111\n1111\n1111 ok", _CARD),
    _digits_case("card 4111\\t1111\\t1111\\t1111 ok", _CARD),
    _digits_case("ssn 536\t22\t1234 ok", "536221234"),
    _digits_case("ssn 536 22 1234 ok", "536221234"),
    _digits_case("ssn 536\n22\n1234", "536221234"),
    _digits_case("nino AB\t12\t34\t56\tC", "123456"),
    _digits_case("nino AB-12-34-56-C ok", "123456"),
    _digits_case("nino ab123456c ok", "123456"),
    _digits_case("thai 1101700230708 ok", "1101700230708"),
    # key names glued to their secret word
    _needles("password", "PGPASSWORD=zqPgHunter2", "zqPgHunter2"),
    _needles("password", "mypassword=zqMyHunter2", "zqMyHunter2"),
    _needles("password", "export MYSECRET_TOKEN=zqToken1 && run", "zqToken1"),
    _needles("password", '{"clientSecretValue": "zqClient1"}', "zqClient1"),
    # command-line credentials
    _needles("cli", "mysql -u root -pzqMysql1 shop", "zqMysql1"),
    _needles("cli", "sshpass -p zqSshpass1 ssh deploy@host", "zqSshpass1"),
    _needles("cli", "curl -u admin:zqCurl1 https://api.example.com", "zqCurl1"),
    _needles("cli", "gh auth login --token zqGhToken1", "zqGhToken1"),
    _needles("cli", "tool --api-key zqApiKey1 run", "zqApiKey1"),
    _needles("cli", "PGPASSWORD=zqPsql1 psql -h db", "zqPsql1"),
    _needles("cli", "Cookie: session=zqCookie1; theme=dark", "zqCookie1"),
    _needles("cli", "docker login -u admin -p zqDocker1 registry.example.com", "zqDocker1"),
    _needles("cli", "redis-cli -a zqRedis1 ping", "zqRedis1"),
    _needles("cli", "mongosh -u admin -p zqMongo1 db", "zqMongo1"),
    _needles("cli", "sqlcmd -S db -U sa -P zqSqlcmd1", "zqSqlcmd1"),
    _needles("cli", "htpasswd -b /etc/nginx/.htpasswd admin zqHtpasswd1", "zqHtpasswd1"),
    _needles("cli", "aws configure set aws_secret_access_key zqAwsSecret1", "zqAwsSecret1"),
    _needles("cli", "mytool \uff0d\uff0dpassword zqFullwidth1", "zqFullwidth1"),
    # no length cap: every value redacted whole
    _needles("connection_secret", f"postgres://app:zq{'p' * 300}X@db/x", "pppppppppppppppppppppX"),
    _needles("connection_secret", f"postgres://{'u' * 300}:zqLongUser1@db/x", "zqLongUser1"),
    _needles("password", f"password=zq{'a' * 700}Tail1", "aaaaaaaaaaTail1"),
    _needles("password", f"token=zq{'b' * 700}Tail2", "bbbbbbbbbbTail2"),
    _needles("password", f"AWS_SESSION_TOKEN={_B64_800}", _B64_800[:24], _B64_800[-24:]),
    _needles("password", json.dumps({"SessionToken": _B64_800}), _B64_800[:24], _B64_800[-24:]),
    # URL passwords holding a slash
    _needles("connection_secret", "postgres://app:Zm9v+YmFy/YmF6==@db", "Zm9v+YmFy", "YmF6=="),
    _needles("connection_secret", "postgres://u:Hunt/er2Secret@host", "Hunt/er2Secret", "er2Secret"),
)

#: Personal data: redacted (and refused in identifiers) only under a policy that asks for it.
RED_TEAM_PERSONAL: tuple[Case, ...] = (
    _needles(
        "email",
        "write to \u03b4\u03bf\u03ba\u03b9\u03bc\u03ae@\u03c0\u03b1\u03c1\u03ac\u03b4\u03b5\u03b9\u03b3\u03bc\u03b1.\u03b4\u03bf\u03ba\u03b9\u03bc\u03ae today",
        "\u03b4\u03bf\u03ba\u03b9\u03bc\u03ae@",
        "@\u03c0\u03b1\u03c1",
    ),
    _needles("email", 'write to "john doe"@example.com today', "john doe", '"@example'),
    _needles("email", "write to bob@localhost today", "bob@", "@localhost"),
    _digits_case("call 4155552671 today", "4155552671"),
    _digits_case("call 0044 20 7946 0958 today", "00442079460958"),
    _digits_case("appelle le 06 12 34 56 78 demain", "0612345678"),
    _digits_case("call 415\t555\t2671 today", "4155552671"),
)


# --- the third red team's examples (each class is also drawn by a strategy above) ---------------

_HUNTER = "Hunter2Secret!"

#: Secrets that passed the filter (stored and served raw): SQL, XML, YAML blocks, blank-separated
#: names, .netrc, connection strings, ``*_KEY`` names, .pgpass, webhooks, Vault, numbers with other
#: separators, and secrets behind a fake placeholder.
THIRD_RED_TEAM_EXAMPLES: tuple[Case, ...] = (
    _needles("password", "CREATE USER app WITH PASSWORD 'Hunter2Secret!';", _HUNTER),
    _needles("password", "ALTER ROLE app PASSWORD 'Hunter2Secret!'", _HUNTER),
    _needles("password", "SET PASSWORD FOR 'bob'@'localhost' = 'Hunter2Secret!';", _HUNTER),
    _needles("password", "CREATE USER bob IDENTIFIED BY 'Hunter2Secret!';", _HUNTER),
    _needles(
        "password",
        "psql -c \"ALTER ROLE app PASSWORD 'Hunter2Secret!'\"; echo ok",
        _HUNTER,
    ),
    _needles("password", "<password>Hunter2Secret!</password>", _HUNTER),
    _needles("password", '<add key="ApiSecret" value="Hunter2Secret!"/>', _HUNTER),
    _needles("password", "password: |\n    Hunter2Secret!\nnext: 1", _HUNTER),
    _needles("password", "db:\n  password: >\n    correct horse\n    Hunter2Secret!\n  user: app", _HUNTER, "correct"),
    _needles("password", "ENV MYSQL_ROOT_PASSWORD Hunter2Secret!", _HUNTER),
    _needles("password", "MYSQL_ROOT_PASSWORD changeme", "changeme"),
    _needles("password", "machine api.example.com login bob password Hunter2Secret!", _HUNTER),
    _needles(
        "password",
        "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=Zm9vYmFyYmF6cXV4Zm9vYmFyYmF6cXV4Zm9v==;"
        "EndpointSuffix=core.windows.net",
        "Zm9vYmFyYmF6cXV4Zm9v",
    ),
    _needles("password", "SharedAccessKey=Zm9vYmFyYmF6cXV4Zm9vYmFy4=", "Zm9vYmFyYmF6cXV4Zm9v"),
    _needles("password", "ENCRYPTION_KEY=a3f1c9d2e4b5a6c7d8e9f0a1b2c3d4e5", "a3f1c9d2e4b5a6c7d8e9"),
    _needles("password", "SIGNING_KEY=a3f1c9d2e4b5a6c7d8e9f0a1b2c3d4e5", "a3f1c9d2e4b5a6c7d8e9"),
    _needles("password", "RAILS_MASTER_KEY=a3f1c9d2e4b5a6c7d8e9f0a1b2c3d4e5", "a3f1c9d2e4b5a6c7d8e9"),
    _needles("password", "aws_secret_access_key wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI"),
    _needles("password", "db:5432:prod:app:Hunter2Secret!", _HUNTER),
    _needles(
        "connection_secret",
        "https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX",
        "XXXXXXXXXXXXXXXXXXXXXXXX",
    ),
    _needles("connection_secret", "https://discord.com/api/webhooks/1234567890/zqDiscordWebhookToken1", "zqDiscord"),
    _needles("password", "https://x.blob.core.windows.net/c/b?sv=2020&sig=abcdEFGH1234%2Bxyz%3D", "abcdEFGH1234"),
    _needles("api_key", "vault hvs.CAESIJlWZ3V4ZXhhbXBsZXRva2VuZXhhbXBsZQ ok", "CAESIJlWZ3V4ZXhh"),
    _needles("api_key", "vault s.Ab3dEfGhIjKlMnOpQrStUvWx ok", "Ab3dEfGhIjKlMnOpQrStUvWx"),
    _digits_case("ssn 536.22.1234 ok", "536221234"),
    _digits_case("ssn 536/22/1234 ok", "536221234"),
    _digits_case("ssn 536-22 1234 ok", "536221234"),
    _digits_case("card 4111_1111_1111_1111 ok", _CARD),
    _digits_case("card 4111/1111/1111/1111 ok", _CARD),
    _digits_case("card 4111+1111+1111+1111 ok", _CARD),
    _digits_case("card 4111:1111:1111:1111 ok", _CARD),
    _digits_case("card 4111|1111|1111|1111 ok", _CARD),
    _digits_case("card 4111   1111   1111   1111 ok", _CARD),
    _needles("password", "password=[REDACTED:foo]Hunter2Secret", "Hunter2Secret"),
    _needles("cli", "mysql -p[REDACTED:cli_password]Hunter2", "Hunter2"),
    _needles("cli", "PGPASSWORD=[REDACTED:x]Hunter2 psql", "Hunter2"),
    _needles("password", "password: [REDACTED:password] correct horse battery staple", "correct", "staple"),
)

#: Personal data under the policy: URL-encoded and IP-literal e-mail addresses.
THIRD_RED_TEAM_PERSONAL: tuple[Case, ...] = (
    _needles("email", "write to alice%40example.com today", "alice"),
    _needles("email", "write to alice%2Bx%40example.com today", "alice"),
    _needles("email", "write to bob@[192.168.1.1] today", "bob@", "192.168"),
    _digits_case("call 415/555/2671 today", "4155552671"),
)


# --- issue 45's examples (each class is also drawn by a strategy above) --------------------------

_AWS_ID = "AKIAIOSFODNN7EXAMPLE"
_AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"

#: The findings as the red team wrote them: the secret on the line after its key id and in
#: credentials.csv (finding 5); IBANs spaced and compact, a base64-wrapped
#: ``aws_secret_access_key=…``, ``JWT_SIGNING=…`` and ``sshpass -p 'Tr0ub4dor&3'`` (finding 9).
ISSUE_45_EXAMPLES: tuple[Case, ...] = (
    _needles("aws_secret_key", f"{_AWS_ID}\n{_AWS_SECRET}", "wJalrXUtnFEMI", "bPxRfiCYEXAMPLEKEY"),
    _needles(
        "aws_secret_key",
        f"User name,Access key ID,Secret access key\nalice,{_AWS_ID},{_AWS_SECRET}",
        "wJalrXUtnFEMI",
        "bPxRfiCYEXAMPLEKEY",
    ),
    _digits_case("IBAN DE89 3704 0044 0532 0130 00 ok", "370400440532013000"),
    _digits_case("IBAN GB82WEST12345698765432 ok", "12345698765432"),
    _needles(
        "encoded_secret",
        "echo " + base64.b64encode(f"aws_secret_access_key={_AWS_SECRET}".encode()).decode() + " | base64 -d",
        "YXdzX3NlY3JldF9hY2Nlc3Nf",
        "RVhBTVBMRUtFWQ",
    ),
    _needles("random_value", "JWT_SIGNING=Zk3q9XbT2mPa7LwR8vYc4NdE6hJs1GuK", "Zk3q9XbT2mPa", "NdE6hJs1GuK"),
    _needles("cli", "sshpass -p 'Tr0ub4dor&3' ssh deploy", "Tr0ub4dor", "&3"),
)

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
    #: For card numbers: no 8 of these digits in a row may be left in the output's digits.
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
        windows = {secret.digits[i : i + 8] for i in range(len(secret.digits) - 7)}
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
CARD_SEPARATORS = ("", " ", ".", "-", "\u2013", "\u2014", "\u00a0", "  ", "\u2009", "\u202f", "\u3000", ". ")


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
    password = "zq" + draw(_token(_ALNUM + "!$*_~-.", 2, 20))
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

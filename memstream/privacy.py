"""The privacy filter: secrets and personal data are replaced by typed placeholders before
anything is published, stored or embedded.

Always redacted: payment card numbers (13-19 digits passing the Luhn check, however they
are grouped: spaces, tabs, line breaks, dots, dashes), national ids (US SSN, UK National
Insurance number, Thai national id with its checksum, grouped or not), API keys and tokens
of the common providers (also glued to a word, as in ``deploy_ghp_…``), bearer and
``Basic`` credentials, ``Authorization:``/``Cookie:``/``X-Api-Key:``-style header values,
JWTs (unsigned ones too), private-key blocks (PEM, OpenSSH, PGP, PuTTY), the value of every
key whose name says it holds a secret (``password=…``, ``PGPASSWORD=…``, ``"api_key": "…"``,
``dbPassword: …``; after ``password:`` the whole rest of the line: a passphrase has several
words) whatever separates name and value (blanks as in a Dockerfile's ``ENV``, .netrc or
SQL's ``PASSWORD '…'``, a YAML block, an XML element, a name/value pair, ``IDENTIFIED BY``),
names that end in a key word or name a signature when their value looks random
(``ENCRYPTION_KEY=…``, ``AccountKey=…``, ``&sig=…``), .pgpass lines, credentials in URLs and
the secret paths of webhook URLs, and the secrets command lines carry (``mysql -p…``,
``sshpass -p …``, ``curl -u user:…``, ``--token …``, ``redis-cli -a …``, ``htpasswd -b …``,
``aws configure set aws_secret_access_key …``, …; a quoted value whole, whatever it holds:
``sshpass -p 'Tr0ub4dor&3'``). Secrets no name announces (``memstream.unnamed_secrets``): an
AWS secret access key near its key id in any layout (same line, next line, ``credentials.csv``,
INI, env, JSON, YAML), a table's column under a header that names a secret, IBANs that pass
python-stdnum's check, base64 that decodes to a secret, and a random-looking value assigned to
any name (``JWT_SIGNING=…``). Every value is redacted whole, whatever its length. E-mail
addresses and phone numbers only when the tenant's policy asks for it.

Matching runs on a normalised view of the text (NFKC, Unicode spaces and dashes unified,
zero-width and other format characters dropped, every script's digits as ASCII digits,
typographic quotes as ASCII quotes), and each finding is mapped back to its span in the
original text, which is where it is replaced: ``4111 1111 1111 1111`` written with
full-width digits or non-breaking spaces is redacted in the text as written.

Every free-text field of a turn is filtered (``redact_turn``: content, tags, tool name,
metadata keys and values); identifiers are never rewritten (an id must stay stable), so a
turn whose identifier carries a secret — or, under a policy that redacts them, an e-mail
address or a phone number — is refused (``identifier_problems``). Nothing is ever cut to
fit: placeholders can make a field longer than it was, and a field that redaction pushes
past its limit is refused (``grown_past_limits``). The gateway applies all of it before
producing (raw secrets never reach Kafka) and the worker again (agents may produce to Kafka
directly); redacting redacted text changes nothing — a value that is exactly placeholders is
left alone, but one that merely starts with one (``password=[REDACTED:x]Hunter2``) is
redacted whole. The audit log's command lines go through the same filter with the tenant's
policy (``agents_gateway.permissions.redact_command``), so the two never disagree about what
a secret is.

**Linear time.** Text comes from anyone with an API key, so every detector's work is
linear in the text's length: no pattern has two quantifiers that can split the same run of
characters between them, runs are consumed possessively (``*+``) and scanned from their
first character only (a look-behind for the run's own class), and where a secret can start
anywhere inside a run (a JWT glued to a word, a URL's user) the run is found once and
skipped as a whole when it does not hold one. ``tests/unit/test_privacy_linear.py`` feeds
every detector repeated prefixes of what it looks for; ``bench/privacy.py`` prints the µs
per KB. Each detector has a cheap hint that must pass before it runs: most text holds no
secret, and skipping the regexes is what keeps the filter at a few µs per turn.
"""

from __future__ import annotations

import base64
import binascii
import bisect
import itertools
import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import Any

import orjson

from memstream.unnamed_secrets import (
    aws_secret_spans,
    encoded_secret_spans,
    iban_spans,
    random_value_spans,
    secret_column_spans,
)
from schemas.turns import MAX_METADATA_KEY_CHARS, MAX_METADATA_VALUE_CHARS, MAX_TAG_CHARS, MAX_TOOL_NAME_CHARS

PLACEHOLDER = "[REDACTED:{}]"
_DONE = "[REDACTED:"

#: The identifiers of a turn: refused, never rewritten, when they carry a secret.
IDENTIFIER_FIELDS = ("tenant_id", "agent_id", "user_id", "project_id", "session_id")
#: Identifiers that may name a person: refused also when they are or contain an e-mail address
#: or a phone number and the tenant's policy redacts those (``tool``: a permission request's
#: tool name, which is audited as it is).
PERSONAL_IDENTIFIER_FIELDS = ("agent_id", "user_id", "project_id", "session_id", "tool")


@dataclass(frozen=True)
class PrivacyPolicy:
    """What a tenant wants redacted beyond the secrets that always are."""

    redact_email: bool = False
    redact_phone: bool = False


DEFAULT_POLICY = PrivacyPolicy()


def luhn_ok(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = ord(ch) - 48
        if i % 2 == 1:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


def thai_id_ok(digits: str) -> bool:
    check = (11 - sum(int(d) * (13 - i) for i, d in enumerate(digits[:12])) % 11) % 10
    return check == int(digits[12])


_NOT_DIGIT = re.compile(r"[^0-9]+")


def _only_digits(text: str) -> str:
    return _NOT_DIGIT.sub("", text)


#: Issuer prefixes of the major card networks (Visa, Mastercard, Amex, Discover, JCB,
#: Diners, UnionPay, Maestro): a Luhn-valid number without one is more likely an id or
#: a millisecond timestamp than a card.
_CARD_PREFIX = re.compile(r"^(?:4|5[1-5]|2[2-7]|3[47]|3[0689]|35(?:2[89]|[3-8])|6(?:011|5|4[4-9]|2)|5[06-8]|6\d)")


def card_ok(match: str) -> bool:
    digits = _only_digits(match)
    return 13 <= len(digits) <= 19 and bool(_CARD_PREFIX.match(digits)) and luhn_ok(digits)


# --- the normalised view ---------------------------------------------------------------------

_DASHES = "\u2010\u2011\u2012\u2013\u2014\u2015\u2043\u2212\u2e3a\u2e3b\ufe58\ufe63\uff0d"
_SINGLE_QUOTES = "\u2018\u2019\u201a\u201b\u2032\u2035\uff07"
_DOUBLE_QUOTES = "\u201c\u201d\u201e\u201f\u2033\u2036\u00ab\u00bb\uff02"


def _fold_char(ch: str) -> str:
    """What one non-ASCII character stands for when matching (itself when nothing)."""
    category = unicodedata.category(ch)
    if category == "Zs" or ch in "\u0085\u2028\u2029":
        return " "
    if category == "Cf":  # zero-width spaces and joiners, soft hyphen, bidi marks, tags
        return ""
    if ch in _DASHES:
        return "-"
    if ch in _SINGLE_QUOTES:
        return "'"
    if ch in _DOUBLE_QUOTES:
        return '"'
    if category == "Nd":  # any script's digits (Thai, Arabic-Indic, full-width, maths)
        return str(unicodedata.digit(ch))
    folded = unicodedata.normalize("NFKC", ch)
    if folded != ch and any(c.isascii() for c in folded):  # full-width, ligatures, maths letters
        return "".join(_fold_char(c) if not c.isascii() else c for c in folded)
    return ch


@cache
def _folding() -> tuple[re.Pattern[str], dict[str, str]]:
    """The characters that fold to something else, and what each folds to (built on first
    use: ~40 ms, paid only by a process that sees non-ASCII text)."""
    table: dict[str, str] = {}
    for start, stop in ((0x80, 0x20000), (0xE0000, 0xE0080)):
        for cp in range(start, stop):
            ch = chr(cp)
            if unicodedata.category(ch) in ("Cn", "Cs", "Co"):
                continue
            folded = _fold_char(ch)
            if folded != ch:
                table[ch] = folded
    ranges: list[list[int]] = []
    for cp in sorted(map(ord, table)):
        if ranges and ranges[-1][1] == cp - 1:
            ranges[-1][1] = cp
        else:
            ranges.append([cp, cp])
    klass = "".join(re.escape(chr(a)) if a == b else f"{re.escape(chr(a))}-{re.escape(chr(b))}" for a, b in ranges)
    return re.compile(f"[{klass}]"), table


#: Whitespace escaped in JSON (or in JSON inside JSON): ``\\t``, ``\\n``, ``\\\\n``. A run of
#: backslashes is read from its first one only (from every one of them, a long run of
#: backslashes cost quadratic time).
_ESCAPED_SPACE = re.compile(r"(?<!\\)\\++[tnr]")
_ESCAPED_AS = {"t": "\t", "n": "\n", "r": "\r"}


def _unescape(view: str, origin: list[int] | None) -> tuple[str, list[int] | None]:
    """Escaped whitespace read as the one character it stands for (``\\t`` as a tab, ``\\r\\n``
    as a line break), each mapped back to its escape: in ``{"note": "x\\tpassword: …"}`` the key
    starts a word, the line ends at ``\\n``, and a card written ``4111\\t1111\\t…`` is one number."""
    if "\\" not in view:
        return view, origin
    pieces: list[str] = []
    mapped: list[int] = []
    last = 0
    for match in _ESCAPED_SPACE.finditer(view):
        start = match.start()
        pieces.append(view[last:start])
        mapped.extend(origin[last:start] if origin is not None else range(last, start))
        pieces.append(_ESCAPED_AS[view[match.end() - 1]])
        mapped.append(origin[start] if origin is not None else start)
        last = match.end()
    if not last:
        return view, origin
    pieces.append(view[last:])
    mapped.extend(origin[last:] if origin is not None else range(last, len(view)))
    return "".join(pieces), mapped


def normalise(text: str) -> tuple[str, list[int] | None]:
    """The text as the detectors see it, and for each of its characters the index of the
    original character it came from (None when the two line up one to one)."""
    if text.isascii():
        return _unescape(text, None)
    foldable, table = _folding()
    pieces: list[str] = []
    last = 0
    aligned = True
    for match in foldable.finditer(text):
        i = match.start()
        folded = table[text[i]]
        pieces.append(text[last:i])
        pieces.append(folded)
        last = i + 1
        aligned = aligned and len(folded) == 1
    if not pieces:
        return _unescape(text, None)
    pieces.append(text[last:])
    view = "".join(pieces)
    if aligned:
        return _unescape(view, None)
    origin: list[int] = []
    last = 0
    for match in foldable.finditer(text):
        i = match.start()
        origin.extend(range(last, i))
        origin.extend([i] * len(table[text[i]]))
        last = i + 1
    origin.extend(range(last, len(text)))
    return _unescape(view, origin)


#: ASCII letters lower-cased, nothing else: the lower-cased view keeps every offset (``str.lower``
#: turns some characters into two, e.g. U+0130).
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


class Facts:
    """The normalised view and what the hints look at, computed once per text."""

    __slots__ = ("_reversed", "_secret_words", "digits", "lower", "origin", "original", "text")

    def __init__(self, original: str) -> None:
        self.original = original
        self.text, self.origin = normalise(original)
        self.lower = self.text.lower() if self.text.isascii() else self.text.translate(_ASCII_LOWER)
        self.digits = len(_NOT_DIGIT.sub("", self.text))
        self._reversed: str | None = None
        self._secret_words: bool | None = None

    @property
    def reversed(self) -> str:
        """The normalised view backwards: what a regex reads to scan back from a position."""
        if self._reversed is None:
            self._reversed = self.text[::-1]
        return self._reversed

    def run_before(self, pos: int, pattern: re.Pattern[str]) -> int:
        """Where the run of ``pattern`` (a possessive character class) ending at ``pos`` starts."""
        n = len(self.text)
        match = pattern.match(self.reversed, n - pos)
        return pos - (match.end() - (n - pos)) if match else pos

    def span(self, start: int, end: int) -> tuple[int, int]:
        """A span of the normalised view as a span of the original text."""
        origin = self.origin
        if origin is None:
            return start, end
        if start >= len(origin):
            return len(self.original), len(self.original)
        return origin[start], (origin[end - 1] + 1 if end > start else origin[start])


def _line_end(text: str, pos: int) -> int:
    """The end of the line ``pos`` is on, trailing blanks left out."""
    stop = text.find("\n", pos)
    end = len(text) if stop < 0 else stop
    while end > pos and text[end - 1] in " \t\r":
        end -= 1
    return end


# --- detectors ----------------------------------------------------------------------------------

#: A finding: start and end in the normalised view, and its kind.
Found = tuple[int, int, str]
Finder = Callable[["Detector", Facts], Iterator[Found]]


def _regex_spans(detector: Detector, facts: Facts) -> Iterator[Found]:
    """Spans of the first participating group of ``detector.groups`` in each match."""
    assert detector.pattern is not None
    for match in detector.pattern.finditer(facts.text):
        group = next((g for g in detector.groups if match.start(g) >= 0), None)
        if group is None:
            continue
        target = match.group(group)
        if not target:  # (what is placeholders only is left alone later: ``_outside_placeholders``)
            continue
        if detector.accept is not None and not detector.accept(target):
            continue
        yield match.start(group), match.end(group), detector.kind


@dataclass(frozen=True)
class Detector:
    kind: str
    pattern: re.Pattern[str] | None
    #: Extra check on the match (Luhn, checksums); None accepts every match.
    accept: Callable[[str], bool] | None = None
    #: Regex groups to replace, the first that took part (0 = the whole match; key=value
    #: pairs keep their key, quoted values their quotes).
    groups: tuple[int, ...] = (0,)
    #: A cheap test that must pass for the pattern to have any chance (most text has no
    #: secrets, and skipping the regex is what keeps the filter at a few µs per turn).
    hint: Callable[[Facts], bool] = lambda _: True
    #: Finds the spans (of the normalised view) to replace; regex matches by default.
    find: Finder = _regex_spans


def _digits_at_least(n: int) -> Callable[[Facts], bool]:
    return lambda facts: facts.digits >= n


def _any_of(*needles: str, lower: bool = False) -> Callable[[Facts], bool]:
    if len(needles) == 1:
        needle = needles[0]
        return (lambda facts: needle in facts.lower) if lower else (lambda facts: needle in facts.text)
    if lower:
        return lambda facts: any(n in facts.lower for n in needles)
    return lambda facts: any(n in facts.text for n in needles)


# --- names that say a secret follows ------------------------------------------------------------

#: Words that make a key, option or variable name a secret's: ``password``, ``PGPASSWORD``,
#: ``dbPassword``, ``client_secret``, ``X-Auth-Token``, ``aws_secret_access_key``, … (matched
#: against the lower-cased name; ``pass`` only as a word of its own: ``bypass`` is not).
_SECRET_WORD = re.compile(
    r"pass(?:word|wd|phrase)?|pwd|secret|token|api[_.-]?key|access[_.-]?key|private[_.-]?key|credential|auth"
)
#: What a secret word may not be followed by in the name: ``tokens``/``tokenizer`` (LLM
#: budgets), ``author``/``authority``/``authentic…`` (but ``authorization`` counts), ``secretary``.
_NOT_AFTER = {
    "token": re.compile(r"s|i[sz]e|i[sz]er"),
    "auth": re.compile(r"or(?!i[sz]ation)|ent"),
    "secret": re.compile(r"ar"),
}
#: Names of something about a secret, not the secret itself: ``password_file``, ``token_type``,
#: ``--password-stdin``, ``auth_url``, ``max_token_length``; ``--no-password``, ``--ask-pass``.
_NOT_A_SECRET = re.compile(
    r"(?:[_.-]|(?<=[a-z])(?=[A-Z]))(?i:file|path|stdin|env|prompt|command|cmd|dir|length|len|type|name|id|url"
    r"|uri|count|limit|policy|method|mode|enabled|required|expiry|expires|expiration|ttl|hint|provider)(?i:s)?$"
    r"|^-*(?i:no|ask|prompt|require|without)[_-]"
)
_NAME_SEPARATORS = "_.-/:"
_PASSWORD_NAME = re.compile(r"pass(?:word|wd|phrase)|pwd")


def _word_boundary(name: str, i: int) -> bool:
    """Whether a word of ``name`` starts (or the previous one ends) at ``i``."""
    if i <= 0 or i >= len(name):
        return True
    before, at = name[i - 1], name[i]
    return before in _NAME_SEPARATORS or at in _NAME_SEPARATORS or (before.islower() and at.isupper())


def secret_name(name: str) -> bool:
    """Whether a key, option or variable named ``name`` holds a secret: its name (whatever
    its case, with or without separators) contains a secret word."""
    if not name or _NOT_A_SECRET.search(name):
        return False
    lower = name.translate(_ASCII_LOWER)
    for word in _SECRET_WORD.finditer(lower):
        found = word.group()
        if found == "pass" and not (_word_boundary(name, word.start()) and _word_boundary(name, word.end())):
            continue
        stem = "auth" if found == "auth" else "token" if found == "token" else "secret" if found == "secret" else ""
        if stem and _NOT_AFTER[stem].match(lower, word.end()):
            continue
        return True
    return False


@lru_cache(maxsize=4096)
def _password_name(name: str) -> bool:
    """A name whose value may be a passphrase of several words (the rest of the line is taken)."""
    return _PASSWORD_NAME.search(name.translate(_ASCII_LOWER)) is not None


#: Names that hold a secret only when their value looks like one: a name that ends in a key
#: word (``ENCRYPTION_KEY``, ``SIGNING_KEY``, ``RAILS_MASTER_KEY``, ``AccountKey``), a signature
#: (``X-Amz-Signature``), and ``key``/``sig`` as a parameter of a query or a connection string
#: (``?key=…``, ``&sig=…``, ``;key=…``): a key is as often an id (``sort_key``) as a secret.
_NAME_WORD = re.compile(_SECRET_WORD.pattern + r"|key|sig")
#: Key words that name an id or a public key, not a secret: ``primary_key``, ``sort_key``, ``public_key``.
_NOT_A_SECRET_KEY = re.compile(
    r"(?i)(?:^|[_.-]|(?<=[a-z])(?=[A-Z]))(?:primary|foreign|sort|partition|clustering|cluster|routing|cache|lookup"
    r"|index|unique|shard|row|composite|surrogate|natural|hot|group|map|dict|object|public|pub|host|idempotency"
    r"|dedup|dedupe|message|event|kms|gpg|redis|s3|ssh|foreign|short|shortcut|sort|range|hash|compound|join|parent"
    r"|child|i18n|translation|react|list|item|cursor|page|next|prev)[_.-]?key$"
)
_STRONG, _WEAK = 2, 1


@lru_cache(maxsize=4096)
def _name_strength(name: str, before: str) -> int:
    """``_STRONG``: the name says a secret follows (``secret_name``); ``_WEAK``: a secret follows
    when the value looks random (``_looks_random``); 0: no secret's name. ``before`` is the
    character before the name (``?``/``&``/``;`` make ``key`` and ``sig`` parameters)."""
    if secret_name(name):
        return _STRONG
    if len(name) < 3 or _NOT_A_SECRET.search(name):
        return 0
    lower = name.translate(_ASCII_LOWER)
    if lower in ("key", "sig"):
        return _WEAK if before in ("?", "&", ";") else 0
    if lower.endswith("signature") and _word_boundary(name, len(name) - 9):
        return _WEAK
    if (
        lower.endswith("key")
        and len(name) > 3
        and (_word_boundary(name, len(name) - 3) or name.isupper())
        and not _NOT_A_SECRET_KEY.search(name)
    ):
        return _WEAK
    return 0


def _looks_random(value: str) -> bool:
    """A value that a weak name (``…_KEY``, a signature) holds as a secret: one word of 16 or
    more characters mixing letters and digits (hex, base64, base62 keys), not a URL or a path."""
    v = value.strip("'\"` ")
    if len(v) < 16 or "://" in v or v.startswith(("~", "./", "../", "$")) or _HAS_BLANK.search(v):
        return False
    if _HAS_LETTER.search(v) and _HAS_DIGIT.search(v):
        return True
    return len(v) >= 20 and _HAS_UPPER.search(v) is not None and _HAS_LOWER.search(v) is not None


_HAS_BLANK = re.compile(r"\s")
_HAS_LETTER = re.compile(r"[^\W\d_]")
_HAS_DIGIT = re.compile(r"[0-9]")
_HAS_UPPER = re.compile(r"[A-Z]")
_HAS_LOWER = re.compile(r"[a-z]")
#: A character that is no letter, digit, ``_``, ``-`` or ``.``: a password's, not a word's.
_HAS_SYMBOL = re.compile(r"[^\w.-]")


#: Words after a secret's name and a blank that are no secret: SQL and other types, keywords.
_NOT_A_VALUE = frozenset(
    "varchar char character text string str int integer bigint smallint serial bytea bytes blob binary varbinary"
    " boolean bool uuid timestamp timestamptz date datetime json jsonb null none nil true false undefined optional"
    " required unique default references index primary foreign column field argument parameter".split()
)
_PUNCTUATION_AROUND = "()[]{}<>.,;:!?'\"`*_~"
_LETTERS_HEAD = re.compile(r"[A-Za-z]++")


def _looks_secret(word: str, *, capitals: bool = True) -> bool:
    """A word after a secret's name and a blank (``my password Hunter2Secret!``,
    ``aws_secret_access_key wJalr…``) that is a secret rather than prose (``password reset``,
    ``token 4096``, ``password VARCHAR(255)``): six or more characters with letters and a
    digit, a symbol or (``capitals``) a capital inside; not a URL, a path or a ``$VARIABLE``."""
    core = word.strip(_PUNCTUATION_AROUND)
    if len(core) < 6 or "://" in core or core[0] in "/~$%{" or core.startswith("./"):
        return False
    head = _LETTERS_HEAD.match(core)
    if head is not None and head.group().lower() in _NOT_A_VALUE:
        return False
    if _HAS_LETTER.search(core) is None:
        return False  # a number, a date, a version
    return (
        _HAS_DIGIT.search(core) is not None
        or _HAS_SYMBOL.search(core) is not None
        or (capitals and _HAS_UPPER.search(core, 1) is not None and _HAS_LOWER.search(core) is not None)
    )


#: What every name ``_name_strength`` accepts contains (one scan, its answer kept per text).
_SECRET_HINT = re.compile(r"pass|pwd|secret|token|key|credential|auth|sig")


def _secret_word_hint(facts: Facts) -> bool:
    if facts._secret_words is None:
        facts._secret_words = _SECRET_HINT.search(facts.lower) is not None
    return facts._secret_words


# --- command lines ----------------------------------------------------------------------------

#: A shell word: quoted parts, escaped characters (``\\&``; not ``\\"``, which in JSON-escaped
#: text opens a quote), or other characters up to whitespace or an operator. Quotes do not
#: cross lines.
_SHELL_WORD = re.compile(r"(?:\\[^\"'\n]?+|'[^'\n]*+'?+|\"[^\"\n]*+\"?+|[^\s'\"|;&<>()`\\])++")
#: What ends one simple command and starts the next.
_COMMAND_SEPARATOR = re.compile(r"[|;&\n\r(){}`]")
#: Programs whose short options carry secrets, by family (matched in the lower-cased view).
_PROGRAMS = re.compile(
    r"(?:"
    r"(?P<mysql>mysql\w*+|mariadb[\w-]*+)|(?P<sshpass>sshpass)|(?P<http>curl|wget)"
    r"|(?P<login>docker|podman|nerdctl|helm|buildah|skopeo|oras|az)"
    r"|(?P<redis>redis-cli|valkey-cli|keydb-cli)|(?P<mongo>mongo(?:sh|dump|restore|export|import|stat|top|files)?)"
    r"|(?P<sqlcmd>sqlcmd|bcp)|(?P<htpasswd>htpasswd)"
    r"|(?P<ldap>ldap(?:search|modify|add|delete|whoami|passwd|compare|exop|modrdn))"
    r"|(?P<zip>zip|unzip|7z|7za|7zr)|(?P<keygen>ssh-keygen)|(?P<smb>smbclient|rpcclient|smbmap|smbcacls)"
    r")(?![\w.-])"
)
_PROGRAM_ROOTS = (
    "mysql", "mariadb", "sshpass", "curl", "wget", "docker", "podman", "nerdctl", "helm", "buildah", "skopeo",
    "oras", "az", "redis-cli", "valkey-cli", "keydb-cli", "mongo", "sqlcmd", "bcp", "htpasswd", "ldap", "zip",
    "unzip", "7z", "ssh-keygen", "smb", "rpcclient",
)  # fmt: skip
#: Per family, the short options whose value is a secret: "attached" (``-pSECRET`` only; a
#: bare ``-p`` prompts), "both" (``-p SECRET`` too); and how the value holds it ("colon":
#: ``user:password``, "percent": ``user%password``).
_SHORT_OPTIONS: dict[str, dict[str, str]] = {
    "mysql": {"-p": "attached"},
    "sshpass": {"-p": "both"},
    "http": {"-u": "both:colon"},
    "login": {"-p": "both"},
    "redis": {"-a": "both"},
    "mongo": {"-p": "both"},
    "sqlcmd": {"-P": "both"},
    "ldap": {"-w": "both"},
    "zip": {"-P": "both", "-p": "attached"},
    "keygen": {"-N": "both", "-P": "both"},
    "smb": {"-U": "both:percent"},
}
#: Long options (``--password=…``, ``--token …``, ``-storepass …``, ``-passin pass:…``).
_LONG_OPTION = re.compile(r"-(?<![\w-]-)(?P<dashes>-?)(?P<name>[A-Za-z][A-Za-z0-9_.-]*+)(?:(?P<eq>=)|[ \t]++)")
#: Options written with one dash that take a secret (keytool, openssl, Java tools): the whole
#: name, so that ``-pSECRET`` (a short option with its value attached) is not one.
_SINGLE_DASH_SECRET = re.compile(
    r"(?i)(?:src|dest|new)?(?:store|key)?pass(?:word|wd|phrase)?|passin|passout|token|secret|api[_-]?key"
    r"|(?:auth|access)[_-]?token|client[_-]?secret"
)
#: ``curl -H 'Authorization: …'``, ``--header "Cookie: …"``: the whole header value.
_HEADER_OPTION = re.compile(
    r"(?<![\w-])(?:-H|--header)(?:=|[ \t]++)[\"']?+(?P<name>[A-Za-z0-9-]++)[ \t]*+:[ \t]*+(?P<value>[^'\"\r\n]++)"
)
#: ``aws configure set NAME VALUE``, ``git config user.password VALUE``, ``npm config set …``.
_CONFIG_WORD = re.compile(r"config(?<![\w.-]config)(?:ure)?(?:[:][a-z]+)?(?![\w.-])")


class _Commands:
    """The simple commands of a text: where each ends."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.separators = [m.start() for m in _COMMAND_SEPARATOR.finditer(text)]

    def end_after(self, pos: int) -> int:
        k = bisect.bisect_left(self.separators, pos)
        return self.separators[k] if k < len(self.separators) else len(self.text)


def _whole_word(text: str, word: re.Match[str]) -> tuple[int, int]:
    """A value's shell word read whole, past the end of its simple command: a quoted value may
    hold what separates commands (``sshpass -p 'Tr0ub4dor&3'``)."""
    whole = _SHELL_WORD.match(text, word.start())
    return whole.span() if whole is not None else word.span()


def _value_in(text: str, start: int, end: int, how: str) -> tuple[int, int] | None:
    """The secret part of an option's value ``text[start:end]`` (a quoted ``'user:password'``
    keeps its closing quote, as it keeps its opening one)."""
    if how == "colon" or how == "percent":
        opening = start
        while opening < end and text[opening] == "\\":  # \"user:password\" in JSON
            opening += 1
        if end - opening > 1 and text[opening] in "'\"" and text[end - 1] == text[opening]:
            end -= 1
            while end > opening and text[end - 1] == "\\":
                end -= 1
        at = text.find(":" if how == "colon" else "%", start, end)
        return (at + 1, end) if at >= 0 and at + 1 < end else None
    return (start, end) if end > start else None


def _program_spans(facts: Facts, found: Sequence[re.Match[str]], commands: _Commands) -> Iterator[Found]:
    text = facts.text
    for k, program in enumerate(found):
        family = program.lastgroup or ""
        # Up to the end of the simple command, or the next program (each range is read once).
        end = commands.end_after(program.end())
        if k + 1 < len(found):
            end = min(end, found[k + 1].start())
        words = list(_SHELL_WORD.finditer(text, program.end(), end))
        if family == "htpasswd":
            yield from _htpasswd_spans(text, words)
            continue
        options = _SHORT_OPTIONS[family]
        logged_in = family != "login"
        for i, word in enumerate(words):
            value = word.group()
            if family == "login" and value == "login":
                logged_in = True
            if family == "http" and value in ("--user", "--proxy-user") and i + 1 < len(words):
                if (span := _value_in(text, *_whole_word(text, words[i + 1]), "colon")) is not None:
                    yield (*span, "cli_password")
                continue
            if not value.startswith("-") or value.startswith("--"):
                if family == "sshpass" and not value.startswith("-"):
                    break  # only sshpass's own options: the wrapped command's -p is its own
                continue
            rule = options.get(value[:2])
            if rule is None or not logged_in:
                continue
            mode, _, how = rule.partition(":")
            if len(value) > 2:  # attached: -pSECRET
                span = _value_in(text, word.start() + 2, _whole_word(text, word)[1], how)
            elif mode == "both" and i + 1 < len(words) and not words[i + 1].group().startswith("-"):
                span = _value_in(text, *_whole_word(text, words[i + 1]), how)
            else:
                continue
            if span is not None:
                yield (*span, "cli_password")


def _is_word_char(ch: str) -> bool:
    return ch.isalnum() or ch in "_.-"


def _programs_in(lower: str) -> list[re.Match[str]]:
    """Each program of ``_PROGRAMS`` named as a word, in order: a ``find`` per name (what a
    scan with the whole alternation costs ten times), then the pattern where one is."""
    found: dict[int, re.Match[str]] = {}
    for root in _PROGRAM_ROOTS:
        pos = 0
        while (i := lower.find(root, pos)) >= 0:
            pos = i + 1
            if (i and _is_word_char(lower[i - 1])) or i in found:
                continue
            if (program := _PROGRAMS.match(lower, i)) is not None:
                found[i] = program
    return [found[i] for i in sorted(found)]


def _htpasswd_spans(text: str, words: Sequence[re.Match[str]]) -> Iterator[Found]:
    """``htpasswd -b[c] FILE USER PASSWORD`` and ``htpasswd -nb USER PASSWORD``."""
    flags = ""
    positional: list[re.Match[str]] = []
    for word in words:
        value = word.group()
        if value.startswith("-") and len(value) > 1 and not positional:
            flags += value[1:]
        else:
            positional.append(word)
    if "b" in flags:
        index = 1 if "n" in flags else 2
        if len(positional) > index:
            yield (*_whole_word(text, positional[index]), "cli_password")


def _long_option_spans(facts: Facts) -> Iterator[Found]:
    text = facts.text
    pos = 0
    while (option := _LONG_OPTION.search(text, pos)) is not None:
        pos = option.end()
        name, single = option.group("name"), not option.group("dashes")
        openssl = single and name in ("passin", "passout", "pass")
        if not (_SINGLE_DASH_SECRET.fullmatch(name) if single else secret_name(name)):
            continue
        if option.group("eq") is None and text.startswith("-", pos):
            continue  # a flag without a value (``--password`` prompts)
        word = _SHELL_WORD.match(text, pos)
        if word is None:
            continue
        start, end = word.span()
        if openssl:  # -passin pass:SECRET (env:, file:, fd: and stdin name where it is)
            if not text.startswith("pass:", start):
                continue
            start += 5
        if end > start:
            yield start, end, "cli_secret"
            pos = end


def _header_option_spans(facts: Facts) -> Iterator[Found]:
    for header in _HEADER_OPTION.finditer(facts.text):
        name = header.group("name")
        if name.lower() in ("cookie", "set-cookie") or secret_name(name):
            start, end = header.span("value")
            while end > start and facts.text[end - 1] in " \t":
                end -= 1
            yield start, end, "auth_header"


def _config_spans(facts: Facts, commands: _Commands) -> Iterator[Found]:
    """``aws configure set aws_secret_access_key VALUE``, ``git config user.password VALUE``."""
    text = facts.text
    done = 0
    for config in _CONFIG_WORD.finditer(facts.lower):
        if config.start() < done:
            continue
        done = end = commands.end_after(config.end())
        words = list(_SHELL_WORD.finditer(text, config.end(), end))
        for name, value in itertools.pairwise(words):
            key = name.group()
            if key.startswith(("-", "[")) or "=" in key or value.group().startswith("-") or not secret_name(key):
                continue
            yield (*_whole_word(text, value), "cli_secret")


def _command_line_spans(detector: Detector, facts: Facts) -> Iterator[Found]:
    """The secrets command lines carry: program-specific options, long options with a secret
    name, credential headers given to ``-H``, ``… config set NAME VALUE``."""
    found: list[Found] = []
    programs = _programs_in(facts.lower)
    config = "config" in facts.lower
    commands = _Commands(facts.text) if programs or config else None
    if commands is not None and programs:
        found.extend(_program_spans(facts, programs, commands))
    if "-" in facts.text and _secret_word_hint(facts):
        found.extend(_long_option_spans(facts))
    if "-H" in facts.text or "--header" in facts.text:
        found.extend(_header_option_spans(facts))
    if commands is not None and config:
        found.extend(_config_spans(facts, commands))
    found.sort()
    last = 0
    for start, end, kind in found:
        if start < last:
            continue
        last = end
        yield start, end, kind


def _command_line_hint(facts: Facts) -> bool:
    return "-" in facts.text or "config" in facts.lower


# --- key = value --------------------------------------------------------------------------------

_NAME_RUN = re.compile(r"[A-Za-z0-9_.-]*+")
_NAME_RUN_BACK = re.compile(r"[A-Za-z0-9_.-]*+")
#: After a name: its closing quote (escaped in JSON inside JSON) or Markdown (``**Password:**``,
#: ```password`:``), then the separator.
_ASSIGN = re.compile(r"(?:\\*+[\"'])?+[*`]{0,3}+[ \t]*+(?P<sep>:=|=>|:|=)\*{0,2}+")
_BEFORE_VALUE = re.compile(r"[ \t]*+(?:\r?\n[ \t]*+)?+")
_DQ_VALUE = re.compile(r"(?:[^\"\\\n]|\\.)*+")
_EQ_VALUE = re.compile(r"\\++\"([^\"\\\n]*+)")
_SQ_VALUE = re.compile(r"'([^'\n]*+)")
_BQ_VALUE = re.compile(r"`([^`\n]*+)")
_BARE_VALUE = re.compile(r"[^\s,;&\"'`\\]++")
#: An environment variable's name (upper case, by convention): ``PGPASSWORD=… psql``.
_ENV_NAME = re.compile(r"[A-Z_][A-Z0-9_]*")

#: A .pgpass line, ``host:port:database:user:password``: found by its port (``:5432:``, ``:*:``),
#: then read from its host. The host has a letter, ``*`` or a dot; the database and the user a
#: letter or ``*``; five fields (an IPv6 address has more: no ``:`` and a character follow).
_PGPASS_PORT = re.compile(r":(?:[1-9][0-9]{1,4}+|\*):")
_HOST_BACK = re.compile(r"[\w.*-]*+")
_PGPASS = re.compile(
    r"(?=[^:\sA-Za-z*.]*+[A-Za-z*.])[\w.*-]++:(?:[1-9][0-9]{1,4}+|\*):"
    r"(?=[^:\sA-Za-z*]*+[A-Za-z*])[^:\s]++:(?=[^:\sA-Za-z*]*+[A-Za-z*])[^:\s]++:((?:\\.|[^\s:\\])++)(?!\w|:\S)"
)


def _pgpass_spans(detector: Detector, facts: Facts) -> Iterator[Found]:
    text = facts.text
    pos = 0
    while (port := _PGPASS_PORT.search(text, pos)) is not None:
        pos = port.end() - 1
        start = facts.run_before(port.start(), _HOST_BACK)
        if start == port.start() or (start > 0 and text[start - 1] not in " \t\r\n\"'`=(>"):
            continue
        line = _PGPASS.match(text, start)
        if line is not None:
            yield line.start(1), line.end(1), "password"
            pos = line.end()


_SHELL_BARE = re.compile(r"[^\s'\"|;&<>()`]++")
_SHELL_PREFIX = re.compile(r"(?:^|[\s;&|(])(?:export|env|declare|local|readonly|set)[ \t]++$")


def _key_value_spans(detector: Detector, facts: Facts) -> Iterator[Found]:
    """The value of every pair whose name says it holds a secret, whatever separates them:
    ``name=value``, ``name: value``, ``"name": "value"``, ``name value`` (a Dockerfile's ``ENV``,
    .netrc, .properties, SQL's ``PASSWORD '…'``), a YAML block (``name: |`` and the lines indented
    under it), an XML element (``<password>…</password>``) and name/value pairs
    (``key="ApiSecret" value="…"``, ``- name: DB_PASSWORD⏎  value: …``). Each name is read
    once, and each value is skipped as a whole."""
    text, lower = facts.text, facts.lower
    cursor = 0
    for word in _NAME_WORD.finditer(lower):
        if word.start() < cursor:
            continue
        name_match = _NAME_RUN.match(text, word.end())
        end = name_match.end() if name_match else word.end()
        cursor = end
        if text[end : end + 1] not in _AFTER_NAME:
            continue  # no form of value can follow (``token.decode()``, ``keys,``)
        start = facts.run_before(word.start(), _NAME_RUN_BACK)
        name = text[start:end]
        strength = _name_strength(name, text[start - 1 : start])
        if not strength:
            continue
        if name.translate(_ASCII_LOWER).lstrip("-") in ("authorization", "authorisation", "proxy-authorization"):
            continue  # the auth_header detector's: it keeps the scheme ("Basic …") readable
        found = _value_of(facts, name, strength, start, end)
        if found is None:
            continue
        value_start, value_end, kind = found
        cursor = max(cursor, value_end)
        if value_end > value_start and (strength == _STRONG or _looks_random(text[value_start:value_end])):
            yield value_start, value_end, kind


#: What may follow a name that a value follows: a quote, Markdown, a separator, a blank, a tag's end.
_AFTER_NAME = frozenset(" \t\r\n\"'`*\\=:<>(")


def _value_of(facts: Facts, name: str, strength: int, start: int, end: int) -> Found | None:
    """The value of the name at ``text[start:end]``, in the first form that fits."""
    text = facts.text
    assign = _ASSIGN.match(text, end)
    if assign is not None:
        sep, after = assign.group("sep"), assign.end()
        if sep == "=" and text.startswith("=", after):
            return None  # a comparison: password == x
        if sep == ":" and text.startswith("//", after):
            return None  # a URL scheme
        return _value_after(text, name, sep, after, assign.start() == end and sep == "=", start)
    if text.startswith("(", end):  # SELECT PASSWORD('…')
        call = _SQL_CALL.match(text, start)
        return _call_argument(text, call.end()) if call is not None and call.end() > end else None
    before = text[start - 1 : start]
    if before in ("<", ":"):
        element = _element_value(facts, start, end)
        if element is not None or before == "<":
            return element  # a tag's name holds no other form of value
    near = facts.lower[max(0, start - 24) : start]
    if ("name" in near or "key" in near) and (paired := _paired_value(facts, name, start, end)) is not None:
        return paired
    return _spaced_value(text, name, strength, start, end)


def _value_after(text: str, name: str, sep: str, after: int, assignment: bool, name_start: int) -> Found | None:
    """The value that follows a separator at ``after`` (its span and kind), or None. Each
    form is read once, up to its end (a quote, a delimiter, the end of the line, the end of
    a YAML block)."""
    blank = _BEFORE_VALUE.match(text, after)
    v = blank.end() if blank else after
    same_line = "\n" not in text[after:v]
    first = text[v : v + 1]
    shell = assignment and v == after and _ENV_NAME.fullmatch(name) is not None  # NAME=value
    if first == '"':
        body = _DQ_VALUE.match(text, v + 1)
        end = body.end() if body else v + 1
        if not text.startswith('"', end):
            return v + 1, _line_end(text, v + 1), "password"  # unterminated: the rest of the line
        if shell and _shell_assignment(text, end + 1, name_start):
            return v, end + 1, "secret_variable"
        return v + 1, end, "password"
    if first == "\\":
        escaped = _EQ_VALUE.match(text, v)
        return (escaped.start(1), escaped.end(1), "password") if escaped else None
    if first == "'":
        quoted = _SQ_VALUE.match(text, v)
        if quoted is None:
            return None
        if shell and text.startswith("'", quoted.end()) and _shell_assignment(text, quoted.end() + 1, name_start):
            return v, quoted.end() + 1, "secret_variable"
        return quoted.start(1), quoted.end(1), "password"
    if first == "`":  # Markdown code: `Hunter2 horse`
        quoted = _BQ_VALUE.match(text, v)
        if quoted is not None and text.startswith("`", quoted.end()):
            return quoted.start(1), quoted.end(1), "password"
        return v + 1, _line_end(text, v + 1), "password"
    if shell and (word := _SHELL_BARE.match(text, v)) is not None and _shell_assignment(text, word.end(), name_start):
        return v, word.end(), "secret_variable"
    if same_line and first in ("&", "!") and sep == ":" and (props := _YAML_PROPERTIES.match(text, v)) is not None:
        if (block := _BLOCK_START.match(text, v)) is not None:
            return _yaml_block(text, name_start, block.end())
        return _value_after(text, name, sep, props.end(), False, name_start)  # password: &anchor value
    if same_line and first in ("|", ">") and sep == ":" and (block := _BLOCK_START.match(text, v)) is not None:
        return _yaml_block(text, name_start, block.end())
    if first in ("E", "e", "N", "n", "U", "u", "$") and (literal := _sql_literal(text, v)) is not None:
        return literal
    if (call := _SQL_CALL.match(text, v)) is not None:  # SET PASSWORD = PASSWORD('…')
        return _call_argument(text, call.end())
    bare = _BARE_VALUE.match(text, v)
    if bare is None:
        return None
    whole_line = _password_name(name) and same_line and (sep != "=" or text[after : after + 1] in (" ", "\t"))
    if whole_line:  # a passphrase: everything up to the end of the line
        return v, _line_end(text, v), "password"
    return v, bare.end(), "password"


#: A YAML block scalar's indicator (``|``, ``>-``, ``|2+``, after a tag such as ``!vault``) and
#: nothing else on its line.
_BLOCK_START = re.compile(r"(?:![^\s|>]*+[ \t]++)?+[|>][0-9+-]{0,2}+[ \t]*+(?:#[^\n]*+)?+(?=\r?\n)")
_INDENT = re.compile(r"[ \t]*+")
#: A YAML node's anchor and tag before its value: ``&pw``, ``!!str``, ``!vault``.
_YAML_PROPERTIES = re.compile(r"(?:[&!][^\s,\[\]{}]*+[ \t]++){1,2}+")


def _yaml_block(text: str, name_start: int, after: int) -> Found | None:
    """The lines of a YAML block scalar: from the line after its indicator, every line indented
    more than the key's line (blank lines among them), read once."""
    line_start = text.rfind("\n", 0, name_start) + 1
    indent = _INDENT.match(text, line_start)
    key_indent = (indent.end() if indent else line_start) - line_start
    first = last = -1
    pos = text.find("\n", after) + 1
    while 0 < pos <= len(text):
        nl = text.find("\n", pos)
        stop = len(text) if nl < 0 else nl
        lead = _INDENT.match(text, pos, stop)
        content = lead.end() if lead else pos
        if content < stop and text[content:stop].strip():
            if content - pos <= key_indent:
                break
            if first < 0:
                first = content
            last = _line_end(text, content)
        if nl < 0:
            break
        pos = nl + 1
    return (first, last, "password") if first >= 0 else None


def _call_argument(text: str, quote: int) -> Found | None:
    """The quoted argument at ``quote`` of a SQL function call."""
    quoted = _SQ_VALUE.match(text, quote) if text[quote] == "'" else None
    if quoted is not None:
        return quoted.start(1), quoted.end(1), "password"
    body = _DQ_VALUE.match(text, quote + 1)
    return (quote + 1, body.end(), "password") if body else None


#: SQL's password functions: ``PASSWORD('…')``, ``OLD_PASSWORD("…")``, ``ENCRYPT('…')``.
_SQL_CALL = re.compile(r"(?i)(?:old_)?password\([ \t]*+(?=['\"])|(?:encrypt|md5|sha1|sha2)\([ \t]*+(?=['\"])")

#: After an element's name: its attributes, then ``>`` (a self-closing ``/>`` holds nothing).
_TAG_REST = re.compile(r"(?:[ \t\r\n][^<>]{0,512}+)?+>")


def _element_value(facts: Facts, start: int, end: int) -> Found | None:
    """``<password>…</password>``, ``<db:secret a="1">…</db:secret>``, ``<![CDATA[…]]>``: the
    element's text, when a closing tag follows it."""
    text = facts.text
    lt = start - 1
    if lt >= 0 and text[lt] == ":":  # a namespace prefix
        lt = facts.run_before(lt, _NAME_RUN_BACK) - 1
    if lt < 0 or text[lt] != "<":
        return None
    rest = _TAG_REST.match(text, end)
    if rest is None or text[rest.end() - 2] == "/":
        return None
    return _element_text(text, rest.end())


def _element_text(text: str, pos: int) -> Found | None:
    """The text of an element from ``pos`` to its closing tag (trimmed), or a CDATA section."""
    if text.startswith("<![CDATA[", pos):
        close = text.find("]]>", pos + 9)
        return pos + 9, close if close >= 0 else len(text), "password"
    close = text.find("<", pos)
    if close < 0 or not (text.startswith("</", close) or text.startswith("<\\/", close)):  # <\/ in JSON
        return None
    while pos < close and text[pos].isspace():
        pos += 1
    while close > pos and text[close - 1].isspace():
        close -= 1
    return (pos, close, "password") if close > pos else None


#: Before a name that is the value of a ``key``/``name`` field: ``key="``, ``name: ``, ``"name": "``, ``<name>``.
_PAIR_BEFORE = re.compile(
    r"(?i)(?:(?<![\w-])\\*+[\"']?(?:key|name)\\*+[\"']?[ \t]*+[:=][ \t]*+\\*+[\"']?+|<(?:key|name)>[ \t]*+)\Z"
)
#: After it: its closing quote or tag, then ``>`` (``<entry key="password">…</entry>``) or the
#: ``value`` field that holds the secret, within ``_PAIR_REACH`` characters.
_PAIR_CLOSE = re.compile(r"(?:\\*+[\"'])?+(?:</(?:key|name)>)?+")
_PAIR_VALUE = re.compile(r"(?i)(?<![\w-])(?:<value>|[\"']?value\\*+[\"']?[ \t]*+(?P<sep>[:=]))")
_PAIR_REACH = 256


def _paired_value(facts: Facts, name: str, start: int, end: int) -> Found | None:
    """``key="ApiSecret" value="…"``, ``<name>db.password</name><value>…</value>``,
    ``{"name": "DB_PASSWORD", "value": "…"}``, ``- name: DB_PASSWORD⏎  value: …``, and
    ``<entry key="password">…</entry>``: the value that goes with a secret's name."""
    text = facts.text
    if _PAIR_BEFORE.search(text, max(0, start - 24), start) is None:
        return None
    closed = _PAIR_CLOSE.match(text, end)
    after = closed.end() if closed else end
    if text.startswith(">", after):
        return _element_text(text, after + 1)
    reach = min(len(text), after + _PAIR_REACH)
    following = facts.lower.find("name", after, reach)  # the next pair's name: its value is its own
    value = _PAIR_VALUE.search(text, after, reach if following < 0 else following)
    if value is None:
        return None
    if value.group("sep") is None:
        return _element_text(text, value.end())
    return _value_after(text, name, value.group("sep"), value.end(), False, start)


_BLANKS = re.compile(r"[ \t]++")
#: Between a name and its value, with blanks around it: an arrow, a dash, a table's ``|``.
_SPACED_SEPARATOR = re.compile(r"(?:->|\u2192|\u21d2|-|\|)[ \t]++")
#: SQL string literals that do not start with a quote: ``E'…'``, ``N'…'``, ``U&'…'``, ``$$…$$``, ``$tag$…$tag$``.
_SQL_PREFIXED = re.compile(r"(?i:e|n|u&)'([^'\n]*+)'")
_DOLLAR_TAG = re.compile(r"\$(?:[A-Za-z_][A-Za-z0-9_]{0,62}+)?\$")
_DOLLAR_REACH = 4096


def _sql_literal(text: str, v: int) -> Found | None:
    """The text of a SQL literal at ``v`` written with a prefix or dollar quotes; an unclosed
    dollar quote: the rest of the line (read once: the caller goes on after it)."""
    first = text[v : v + 1]
    if first in ("E", "e", "N", "n", "U", "u"):
        prefixed = _SQL_PREFIXED.match(text, v)
        return (prefixed.start(1), prefixed.end(1), "password") if prefixed else None
    if first != "$" or (tag := _DOLLAR_TAG.match(text, v)) is None:
        return None
    close = text.find(tag.group(), tag.end(), tag.end() + _DOLLAR_REACH)
    if close >= 0 and "\n" not in text[tag.end() : close]:
        return tag.end(), close, "password"
    return tag.end(), _line_end(text, tag.end()), "password"


@lru_cache(maxsize=4096)
def _written_as_code(name: str) -> bool:
    """A name with separators or in camelCase (``MYSQL_ROOT_PASSWORD``, ``db.password``,
    ``apiKey``), not a word of prose (``password``, ``Token``, ``PASSWORD``)."""
    return any(c in "_.-" for c in name) or (any(c.isupper() for c in name[1:]) and any(c.islower() for c in name))


#: Before a name in ``ENV NAME value`` (a Dockerfile), ``setenv NAME value`` (csh), ``set -gx NAME value`` (fish).
_ENV_BEFORE = re.compile(r"(?:^|[\s;])(?:ENV|setenv|set[ \t]++-[A-Za-z]++)[ \t]++\Z")
#: Before a name in .netrc: ``machine HOST login USER password …``.
_NETRC_BEFORE = re.compile(r"(?:^|\s)(?:machine|login)[ \t]++\S++[ \t\r\n]++\Z")


def _spaced_value(text: str, name: str, strength: int, start: int, end: int) -> Found | None:
    """``name value``: a quoted value (SQL's ``PASSWORD '…'``); the rest of the line after a
    Dockerfile's ``ENV NAME``; any word after .netrc's ``password``; the one word after a
    name written as code at the start of its line (``MYSQL_ROOT_PASSWORD changeme``, a
    .properties line); otherwise a word that looks like a secret rather than prose
    (``_looks_secret``). ``SET PASSWORD FOR user = '…'``: the value after the ``=``."""
    if name.startswith("-"):
        return None  # an option: the command-line detectors know which take a value
    blanks = _BLANKS.match(text, end)
    if blanks is None:
        return None
    v = blanks.end()
    if (arrow := _SPACED_SEPARATOR.match(text, v)) is not None:  # password -> …, | password | … |
        v = arrow.end()
    if (literal := _sql_literal(text, v)) is not None:
        return literal
    first = text[v : v + 1]
    if first == '"':
        body = _DQ_VALUE.match(text, v + 1)
        return (v + 1, body.end(), "password") if body and text.startswith('"', body.end()) else None
    if first == "'":
        quoted = _SQ_VALUE.match(text, v)
        return (*quoted.span(1), "password") if quoted and text.startswith("'", quoted.end()) else None
    if first == "`":
        quoted = _BQ_VALUE.match(text, v)
        return (*quoted.span(1), "password") if quoted and text.startswith("`", quoted.end()) else None
    if first == "\\":
        escaped = _EQ_VALUE.match(text, v)
        return (escaped.start(1), escaped.end(1), "password") if escaped else None
    bare = _BARE_VALUE.match(text, v)
    if bare is None:
        return None
    if strength != _STRONG:
        return v, bare.end(), "password"  # the caller checks that it looks random
    word = bare.group()
    if word.lower() == "for" and _password_name(name):  # SET PASSWORD FOR account = '…'
        equals = text.find("=", bare.end(), bare.end() + 256)
        if equals < 0 or "\n" in text[bare.end() : equals]:
            return None
        return _value_after(text, name, "=", equals + 1, False, start)
    near = text[max(0, start - 24) : start]
    if ("ENV" in near or "set" in near) and _ENV_BEFORE.search(text, max(0, start - 24), start) is not None:
        return v, _line_end(text, v), "password"
    coded = _written_as_code(name)
    # After a word of prose (``pass``, ``token``), capitals alone are a name: ``must pass (PatternError …``.
    if _looks_secret(word, capitals=coded) or (coded and _alone_on_its_line(text, start, bare.end())):
        return v, bare.end(), "password"
    if _password_name(name):
        reach = max(0, start - 160)
        before = text[reach:start]
        if ("login" in before or "machine" in before) and _NETRC_BEFORE.search(text, reach, start) is not None:
            return v, bare.end(), "password"
    return None


#: SQL: ``CREATE USER … IDENTIFIED BY '…'``, ``IDENTIFIED WITH plugin BY '…'``, Oracle's bare
#: ``IDENTIFIED BY tiger;`` (``PASSWORD '…'`` is a name and a value: ``_spaced_value``).
_IDENTIFIED_BY = re.compile(
    r"(?i)(?<![\w])identified[ \t]++(?:with[ \t]++[\"'`]?+[\w$]++[\"'`]?+[ \t]++)?+(?:by|as)[ \t]++"
    r"(?:password[ \t]++|values[ \t]++)?+(?:'([^'\n]*+)'|\"([^\"\n]*+)\"|([^\s;,'\"()]++))"
)
_STATEMENT_GOES_ON = re.compile(r"[ \t]*+(?:;|$|\r?\n|(?i:account|default|password|quota|profile|require|with)\b)")


def _identified_by_spans(detector: Detector, facts: Facts) -> Iterator[Found]:
    """A quoted value always; a bare one where the statement ends or goes on after it, or that
    looks like a secret (``identified by the team`` is prose)."""
    text = facts.text
    for match in _IDENTIFIED_BY.finditer(text):
        if match.start(3) < 0:
            group = 1 if match.start(1) >= 0 else 2
            yield match.start(group), match.end(group), "password"
        elif _STATEMENT_GOES_ON.match(text, match.end()) or _looks_secret(match.group(3), capitals=False):
            yield match.start(3), match.end(3), "password"


_BLANKS_BACK = re.compile(r"[ \t]*+")


def _alone_on_its_line(text: str, start: int, end: int) -> bool:
    """Whether only blanks stand before ``start`` and after ``end`` on their line (read over
    the blanks only: a long line is not read again for each name on it)."""
    back = _BLANKS_BACK.match(text[max(0, start - 64) : start][::-1])
    before = start - (back.end() if back else 0)
    if before > 0 and text[before - 1] != "\n":
        return False
    blanks = _INDENT.match(text, end)
    after = blanks.end() if blanks else end
    return after == len(text) or text[after] in "\r\n"


def _shell_assignment(text: str, end: int, name_start: int) -> bool:
    """Whether ``NAME=value`` ending at ``end`` sets a variable for a command (``PGPASSWORD=… psql``,
    ``env X=… cmd``, ``export X=…``)."""
    rest = text[end : end + 2]
    if rest[:1] in (" ", "\t") and rest[1:2] not in ("", " ", "\t", "\n", "\r", "#"):
        return True
    return _SHELL_PREFIX.search(text, max(0, name_start - 12), name_start) is not None


# --- tokens and keys ----------------------------------------------------------------------------


def _basic_ok(value: str) -> bool:
    """Basic credentials: base64 of printable ``user:password``."""
    try:
        decoded = base64.b64decode(value + "=" * (-len(value) % 4), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return False
    return ":" in decoded and decoded.isprintable()


#: What every key the api_key pattern knows begins with, first characters factored out so
#: that the scan for it costs what ten ``in`` tests do.
_API_KEY_HINT = re.compile(
    r"[AghxsrmnpS](?:KIA|SIA|Iza|h[pousr]_|ithub_pat_|ox[abeprs]-|app-|k[_-]|l(?:pat|ptt|dt)-|f_|pm_|ypi-AgE|G\.|GE-SECRET|sk_"
    r"|v[sbr]\.|\.[A-Za-z0-9]{24}(?![\w.]))"
)
#: Provider keys, each redacted whole however long it runs (possessive: tried from a hint's
#: position only, a failed try costs at most the key's minimum length).
_API_KEY = re.compile(
    r"(?:(?:AKIA|ASIA)[0-9A-Z]{16}"  # AWS access key id
    r"|AIza[0-9A-Za-z_-]{35}"  # Google API key
    r"|gh[pousr]_[A-Za-z0-9]{36,}+"  # GitHub tokens
    r"|github_pat_[A-Za-z0-9_]{22,}+"
    r"|xox[abeprs]-[A-Za-z0-9-]{10,}+|xapp-[A-Za-z0-9-]{10,}+"  # Slack
    r"|(?<![A-Za-z0-9])(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}+"  # Stripe
    r"|(?<![A-Za-z0-9])sk-[A-Za-z0-9_-]{20,}+"  # OpenAI / Anthropic style
    r"|gl(?:pat|ptt|dt)-[A-Za-z0-9_-]{20,}+"  # GitLab
    r"|(?<![A-Za-z0-9])hf_[A-Za-z0-9]{30,}+"  # Hugging Face
    r"|(?<![A-Za-z0-9])npm_[A-Za-z0-9]{36,}+"  # npm
    r"|pypi-AgE[A-Za-z0-9_-]{50,}+"  # PyPI
    r"|SG\.[A-Za-z0-9_-]{20,32}\.[A-Za-z0-9_-]{20,64}"  # SendGrid
    r"|AGE-SECRET-KEY-1[0-9A-Z]{58}"  # age
    r"|msk_[0-9a-f]{16}_[A-Za-z0-9_-]{20,}+"  # our own gateway keys
    r"|(?<![A-Za-z0-9])hv[sbr]\.[A-Za-z0-9_-]{20,}+"  # HashiCorp Vault tokens
    # Vault's legacy tokens: s. and 24 letters and digits, upper and lower case and a digit among them
    r"|(?<![\w.])s\.(?=[a-z0-9]{0,23}+[A-Z])(?=[A-Z0-9]{0,23}+[a-z])(?=[A-Za-z]{0,23}+[0-9])[A-Za-z0-9]{24}(?![\w.])"
    r")"
)


def _api_key_spans(detector: Detector, facts: Facts) -> Iterator[Found]:
    """The key pattern tried only where a known prefix starts (a scan of the whole text
    with the full pattern costs ten times as much)."""
    text = facts.text
    pos = 0
    while (hint := _API_KEY_HINT.search(text, pos)) is not None:
        match = _API_KEY.match(text, hint.start())
        if match is None:
            pos = hint.start() + 1
            continue
        yield match.start(), match.end(), "api_key"
        pos = match.end()


_B64URL_RUN = re.compile(r"[A-Za-z0-9_-]*+")
_JWT_REST = re.compile(r"\.[A-Za-z0-9_-]{8,}+(?:\.[A-Za-z0-9_-]*+){0,3}+")


def _jwt_spans(detector: Detector, facts: Facts) -> Iterator[Found]:
    """header.payload[.signature] (the signature possibly empty: alg "none"), the header
    starting with ``eyJ`` anywhere in a word (``token_eyJ…``). A word that does not start a
    JWT at its first ``eyJ`` does not at a later one either, so it is skipped whole."""
    text = facts.text
    pos = 0
    while (i := text.find("eyJ", pos)) >= 0:
        run = _B64URL_RUN.match(text, i + 3)
        end = run.end() if run else i + 3
        if end - i >= 11 and (rest := _JWT_REST.match(text, end)) is not None:
            yield i, rest.end(), "jwt"
            pos = rest.end()
        else:
            pos = end


# --- secrets no name announces (``memstream.unnamed_secrets``) ------------------------------------


def _aws_secret_key_spans(detector: Detector, facts: Facts) -> Iterator[Found]:
    for start, end in aws_secret_spans(facts.text):
        yield start, end, "aws_secret_key"


def _iban_spans(detector: Detector, facts: Facts) -> Iterator[Found]:
    for start, end in iban_spans(facts.text):
        yield start, end, "iban"


def _holds_secret(decoded: str) -> bool:
    """Whether the filter finds a secret in a text (a base64 blob's): the same detectors, so an
    encoded secret is one in every form the filter knows."""
    return bool(redact(decoded)[1])


def _encoded_secret_spans(detector: Detector, facts: Facts) -> Iterator[Found]:
    for start, end in encoded_secret_spans(facts.text, _holds_secret):
        yield start, end, "encoded_secret"


def _secret_column_spans(detector: Detector, facts: Facts) -> Iterator[Found]:
    for start, end in secret_column_spans(facts.text, facts.lower, secret_name):
        yield start, end, "password"


def _not_a_secret_name(name: str) -> bool:
    """A name of something about a secret or of an id (``token_type``, ``auth_url``, ``cache_key``)."""
    return _NOT_A_SECRET.search(name) is not None or _NOT_A_SECRET_KEY.search(name) is not None


def _random_value_spans(detector: Detector, facts: Facts) -> Iterator[Found]:
    for start, end in random_value_spans(facts.text, _not_a_secret_name):
        yield start, end, "random_value"


def _table_hint(facts: Facts) -> bool:
    text = facts.text
    return "\n" in text and _secret_word_hint(facts) and any(d in text for d in ",\t;|")


def _assignment_hint(facts: Facts) -> bool:
    text = facts.text
    return len(text) > 20 and ("=" in text or ":" in text)


# --- private keys -------------------------------------------------------------------------------

_PEM_BEGIN = re.compile(r"(?i)(?<!-)-{3,}+[ \t]*+BEGIN[ A-Z0-9]{0,64}?PRIVATE[ \t]++KEY(?:[ \t]++BLOCK)?+[ \t]*+-{3,}+")
_PEM_END = re.compile(r"(?i)(?<!-)-{3,}+[ \t]*+END[ A-Z0-9]{0,64}?PRIVATE[ \t]++KEY(?:[ \t]++BLOCK)?+[ \t]*+-{3,}+")


def _pem_spans(detector: Detector, facts: Facts) -> Iterator[Found]:
    """From a ``BEGIN … PRIVATE KEY`` line to its ``END`` line, or to the end of the text (a
    truncated paste). Each search continues where the previous one stopped."""
    text = facts.text
    pos = 0
    while (begin := _PEM_BEGIN.search(text, pos)) is not None:
        end = _PEM_END.search(text, begin.end())
        stop = end.end() if end else len(text)
        yield begin.start(), stop, "private_key"
        pos = stop


# --- URLs ---------------------------------------------------------------------------------------

_SCHEME_BACK = re.compile(r"[A-Za-z0-9+.-]{0,31}")
_AUTHORITY_END = re.compile(r"[\s\"'<>`]|://")
_HOST = re.compile(r"(?:\[[0-9A-Fa-f:.]++\]|[\w.~%-]++)(?::[0-9]*+)?+(?=[/?#,;)\]\\]|[:.!?]*+$)")
#: ``host:8080/path@…``: a port and a path, not a user and a password.
_PORT_AND_PATH = re.compile(r"[0-9]{1,5}[/?#].*", re.DOTALL)


def _url_spans(detector: Detector, facts: Facts) -> Iterator[Found]:
    """The password of ``scheme://user:password@host`` (a password may hold ``/``, ``@``, …:
    the host follows the last ``@`` that a host name follows), ``scheme://:password@host``,
    and a token used as the user (``https://TOKEN@host``). Each URL's authority is read once."""
    text = facts.text
    pos = 0
    while (i := text.find("://", pos)) >= 0:
        start = i + 3
        bound = _AUTHORITY_END.search(text, start)
        stop = bound.start() if bound else len(text)
        pos = stop if stop > i else i + 3
        scheme = _SCHEME_BACK.match(facts.reversed, len(text) - i)
        if scheme is None or not any(c.isalpha() for c in text[i - len(scheme.group()) : i]):
            continue
        at = _host_at(text, start, stop)
        if at < 0:
            continue
        userinfo = text[start:at]
        colon = userinfo.find(":")
        if colon < 0:
            if len(userinfo) >= 16 and not any(c in userinfo for c in "/?#"):
                yield start, at, "connection_secret"  # a token as the user
            continue
        user, password = userinfo[:colon], userinfo[colon + 1 :]
        if not password or any(c in user for c in "/?#") or _PORT_AND_PATH.fullmatch(password):
            continue  # no password; a path; host:port/path@…
        yield start + colon + 1, at, "connection_secret"


def _host_at(text: str, start: int, stop: int) -> int:
    """The ``@`` of ``text[start:stop]`` after which the host comes (-1: none)."""
    at = text.rfind("@", start, stop)
    while at >= 0:
        host = _HOST.match(text, at + 1, stop)
        if host is not None and host.end() > at + 1:
            return at
        at = text.rfind("@", start, at)
    return -1


# --- numbers ------------------------------------------------------------------------------------

# Cards: a run of digits in groups separated by up to three characters that are no letter or
# digit (spaces, tabs, line breaks, dots, dashes, ``_``, ``/``, ``+``, ``:``, ``|``, …), grouped
# alike (``_grouped_alike``). The whole run is a card if it passes; otherwise a card may sit
# inside a longer run ("ref 12 4111 1111 1111 1111"), grouped the way cards are printed
# (4-4-4-4[-1..4], 4-6-5, 4-6-4), or as one group of 13-19 digits between spaces.
_CARD_RUN = re.compile(r"[0-9](?<![0-9]{2})(?:[\W_]{0,3}+[0-9]){12,}")
_GROUP = re.compile(r"[0-9]+")


def _card_windows(sizes: Sequence[int], i: int) -> Iterator[int]:
    """Last groups of the windows starting at group ``i`` that are grouped like a card."""
    first = sizes[i]
    if 13 <= first <= 19:
        yield i
    if first != 4:
        return
    if i + 2 < len(sizes) and sizes[i + 1] == 6 and sizes[i + 2] in (4, 5):  # Amex, Diners
        yield i + 2
    total = 4
    for j in range(i + 1, len(sizes)):  # 4-4-4-4, then a last group of 1-4
        total += sizes[j]
        if total > 19 or not 1 <= sizes[j] <= 4:
            return
        if total >= 13:
            yield j
        if sizes[j] != 4:
            return


_USUAL_GAP = re.compile(r"[ \t\r\n.-]{1,2}")


def _grouped_alike(text: str, groups: Sequence[tuple[int, int]], i: int, j: int) -> bool:
    """Whether groups ``i`` to ``j`` of a run are separated the way one number is written: by
    blanks, dots and dashes (one or two, mixed), or with one other separator throughout
    (``4111_1111_…``, ``4111 / 1111 / …``) — not a table row (``62 / 81 | 693 (22.9``)."""
    gaps = [text[groups[k][1] : groups[k + 1][0]] for k in range(i, j)]
    if all(_USUAL_GAP.fullmatch(gap) for gap in gaps):
        return True
    if not all(sum(not c.isspace() for c in gap) <= 1 for gap in gaps):
        return False
    sizes = [e - s for s, e in groups[i : j + 1]]
    if sizes[:4] == [4, 4, 4, 4] or sizes in ([4, 6, 5], [4, 6, 4]):
        return True  # laid out as cards are printed: ``4111-1111_1111-1111``
    return len({c for gap in gaps for c in gap if not c.isspace()}) <= 1


def _card_spans(detector: Detector, facts: Facts) -> Iterator[Found]:
    for run in _CARD_RUN.finditer(facts.text):
        text = run.group()
        groups = [g.span() for g in _GROUP.finditer(text)]
        if (
            card_ok(text)
            and not (len(groups) == 2 and "." in text)
            and _grouped_alike(text, groups, 0, len(groups) - 1)
        ):
            yield run.start(), run.end(), "card_number"
            continue
        sizes = [e - s for s, e in groups]
        i = 0
        while i < len(groups):
            found = None
            for j in _card_windows(sizes, i):
                if j == i and (
                    (i > 0 and text[groups[i][0] - 1] == ".") or text[groups[j][1] : groups[j][1] + 1] == "."
                ):
                    continue  # the digits of a decimal number
                if card_ok(text[groups[i][0] : groups[j][1]]) and _grouped_alike(text, groups, i, j):
                    found = j
            if found is None:
                i += 1
                continue
            yield run.start() + groups[i][0], run.start() + groups[found][1], "card_number"
            i = found + 1


#: A separator inside a written number: any one character that is no letter or digit (a blank,
#: ``-``, ``.``, ``/``, ``_``, ``:``, ``|``, ``+``, …) or a line break.
_SEP = r"(?:\r?\n|[^\w\r\n]|_)"
#: The same for a US SSN, but not ``,`` or ``;`` (a list of numbers).
_SSN_SEP = r"(?:\r?\n|[^\w\r\n,;]|_)"
#: A US SSN: 3-2-4 digits, each gap one to three separators of any kind (``536-22-1234``,
#: ``536.22.1234``, ``536/22/1234``, ``536-22 1234``); checked further by ``_ssn_spans``.
_SSN = re.compile(
    rf"[0-8](?<![0-9][0-8])[0-9]{{2}}(?P<a>{_SSN_SEP}{{1,3}}+)[0-9]{{2}}(?P<b>{_SSN_SEP}{{1,3}}+)[0-9]{{4}}(?![0-9])"
)


def _ssn_spans(detector: Detector, facts: Facts) -> Iterator[Found]:
    """US SSNs (not area 000 or 666, group 00, serial 0000), not in a row of numbers: a gap's
    separator then a digit before or after one is a longer number (a phone, a table)."""
    text = facts.text
    for match in _SSN.finditer(text):
        digits = _only_digits(match.group())
        if digits[:3] in ("000", "666") or digits[3:5] == "00" or digits[5:] == "0000":
            continue
        start, end = match.span()
        row = False
        for gap in {match.group("a"), match.group("b")}:
            before, after = start - len(gap), end + len(gap)
            if (before > 0 and text[before:start] == gap and text[before - 1].isdigit()) or (
                text[end:after] == gap and text[after : after + 1].isdigit()
            ):
                row = True
        if not row:
            yield start, end, "national_id"


#: Words near a 13-digit number that make it a time in milliseconds, not a Thai id.
_TIME_WORDS = re.compile(r"time|epoch|ms\b|ts\b|date|_at\b|created|updated|expire|iat|nbf|exp\b|millis|clock")
_EPOCH_MS = (946_684_800_000, 2_524_608_000_000)  # 2000 to 2050


def _thai_spans(detector: Detector, facts: Facts) -> Iterator[Found]:
    for match in _THAI_ID.finditer(facts.text):
        digits = _only_digits(match.group())
        if digits[0] not in "12345678" or not thai_id_ok(digits):
            continue
        if len(match.group()) == 13 and _EPOCH_MS[0] <= int(digits) <= _EPOCH_MS[1]:
            if _TIME_WORDS.search(facts.lower, max(0, match.start() - 24), match.start()):
                continue  # "created_at": 1764489600000 is a time
        yield match.start(), match.end(), "national_id"


#: UK National Insurance number (AB 12 34 56 C, ab123456c, AB-12-34-56-C): found by its digits
#: and letter (a scan that skips to digits), then the two letters before them are checked.
_NINO_TAIL = re.compile(rf"[0-9]{{2}}{_SEP}?[0-9]{{2}}{_SEP}?[0-9]{{2}}{_SEP}?[A-Da-d](?![A-Za-z0-9])")
_NINO_HEAD = re.compile(rf"(?<![A-Za-z0-9])[A-CEGHJ-PR-TW-Za-ceghj-pr-tw-z][A-CEGHJ-NPR-TW-Za-ceghj-npr-tw-z]{_SEP}?\Z")


def _nino_spans(detector: Detector, facts: Facts) -> Iterator[Found]:
    text = facts.text
    for tail in _NINO_TAIL.finditer(text):
        if (head := _NINO_HEAD.search(text, max(0, tail.start() - 5), tail.start())) is not None:
            yield head.start(), tail.end(), "national_id"


_THAI_ID = re.compile(
    rf"[0-9](?<![0-9]{{2}})(?:[0-9]{{12}}|{_SEP}[0-9]{{4}}{_SEP}[0-9]{{5}}{_SEP}[0-9]{{2}}{_SEP}[0-9])(?![0-9])"
)


# --- personal data (by policy) --------------------------------------------------------------------

_DOMAIN = re.compile(r"[\w-]{1,63}+(?:\.[\w-]{1,63}+){0,10}+")
#: An e-mail address's ``@`` as written: also URL-encoded (``alice%40example.com``) or as an
#: HTML character reference (``&#64;``, ``&#x40;``).
_AT_SIGN = re.compile(r"@|%(?:25)?+40|&#0*+64;|&#[xX]0*+40;")
_IP_LITERAL = re.compile(r"\[(?:[0-9]{1,3}(?:\.[0-9]{1,3}){3}|IPv6:[0-9A-Fa-f:.]{2,45}+)\]")


def _email_spans(detector: Detector, facts: Facts) -> Iterator[Found]:
    """``local@domain``: Unicode letters in both, a quoted local part (``"john doe"@…``), a
    domain without a dot when it is a name (``bob@localhost``), an IP literal
    (``bob@[192.168.1.1]``), the ``@`` URL-encoded (``alice%2Bx%40example.com``) or written
    ``&#64;``. Not the user of a URL
    (``ssh://deploy@host``). Each ``@`` costs at most a local part's and a domain's length."""
    text = facts.text
    pos = 0
    while (sign := _AT_SIGN.search(text, pos)) is not None:
        at, pos = sign.start(), sign.end()
        start = _local_start(facts, at)
        if start < 0:
            continue
        literal = _IP_LITERAL.match(text, pos)
        if literal is not None:  # bob@[192.168.1.1], bob@[IPv6:2001:db8::1]
            yield start, literal.end(), "email"
            pos = literal.end()
            continue
        domain = _DOMAIN.match(text, pos)
        if domain is None:
            continue
        name = domain.group()
        labels = name.split(".")
        if any(label.startswith("-") or label.endswith("-") for label in labels):
            continue
        if domain.end() < len(text) and (text[domain.end()].isalnum() or text[domain.end()] == "_"):
            continue  # a label longer than a domain's: not a domain
        tld = labels[-1]
        if not (tld.isalpha() and len(tld) >= 2) or (len(labels) == 1 and tld.lower() in _NOT_A_HOST):
            continue
        yield start, domain.end(), "email"
        pos = domain.end()


def _local_start(facts: Facts, at: int) -> int:
    """Where the local part before the ``@`` at ``at`` starts (-1: no local part)."""
    text = facts.text
    if at > 1 and text[at - 1] == '"':
        quote = text.rfind('"', max(0, at - 66), at - 1)
        if quote >= 0 and "\n" not in text[quote:at]:
            return quote
        return -1
    start = facts.run_before(at, _LOCAL_BACK_REV)
    if start == at or text[start] == "." or text[at - 1] == ".":
        return -1
    if start > 0 and text[start - 1] == "/":
        return -1  # the user of a URL (ssh://deploy@host), a path (/docs@v2)
    return start


_LOCAL_BACK_REV = re.compile(r"[\w.!#$%*+^{}~-]{1,64}")
#: Words after an ``@`` that name a version, not a host (``react@next``, ``pkg@latest``): a
#: domain without a dot (``bob@localhost``) is one only when it is not one of these.
_NOT_A_HOST = frozenset(
    "latest next beta alpha canary stable rc dev nightly edge main master lts experimental legacy current"
    " release preview insiders head tip".split()
)

_PHONE_SEP = r"(?:[ .\t/_-]|\r?\n)"
_PHONE = re.compile(
    r"(?<![\w+])(?:"
    rf"(?:\+|00)[1-9][0-9]{{0,2}}{_PHONE_SEP}?(?:\([0-9]{{1,4}}\){_PHONE_SEP}?)?[0-9]{{1,4}}(?:{_PHONE_SEP}?[0-9]{{2,4}}){{1,5}}"
    rf"|\([0-9]{{3}}\){_PHONE_SEP}?[0-9]{{3}}{_PHONE_SEP}[0-9]{{4}}"  # North American, (415) 555-2671
    rf"|[0-9]{{3}}{_PHONE_SEP}[0-9]{{3}}{_PHONE_SEP}[0-9]{{4}}"  # 415-555-2671
    r"|[2-9][0-9]{2}[2-9][0-9]{6}"  # 4155552671
    rf"|0[0-9]{{1,4}}(?:{_PHONE_SEP}?[0-9]{{2,4}}){{2,5}}"  # trunk prefix 0: UK, FR, TH, DE, …
    r")(?![\w-])"
)


_SECRETS: tuple[Detector, ...] = (
    Detector("cli_password", None, find=_command_line_spans, hint=_command_line_hint),
    Detector(
        "private_key", None, find=_pem_spans, hint=lambda facts: "private" in facts.lower and "key" in facts.lower
    ),
    Detector(
        "private_key",  # PuTTY's .ppk: the private part follows "Private-Lines: N"
        re.compile(r"(?i)Private-Lines:[ \t]*+[0-9]++[ \t]*+\r?\n([\s\S]*?)(?=\r?\nPrivate-(?:MAC|Hash):|$)"),
        groups=(1,),
        hint=_any_of("private-lines", lower=True),
    ),
    Detector("jwt", None, find=_jwt_spans, hint=_any_of("eyJ")),
    # Before the key ids are replaced: the secret is found by its id.
    Detector("aws_secret_key", None, find=_aws_secret_key_spans, hint=_any_of("AKIA", "ASIA")),
    Detector("api_key", None, find=_api_key_spans),
    Detector(
        "bearer_token",
        re.compile(r"(?i)(?<![A-Za-z0-9])bearer(?:[ \t]*+[:=])?+[ \t]*+([A-Za-z0-9._~+/-]{16,}+=*+)"),
        groups=(1,),
        hint=_any_of("bearer", lower=True),
    ),
    Detector(
        "basic_auth",
        re.compile(r"(?i)(?<![A-Za-z0-9])basic[ \t]++([A-Za-z0-9+/]{6,}+={0,2}+)(?![A-Za-z0-9+/=])"),
        accept=_basic_ok,
        groups=(1,),
        hint=_any_of("basic", lower=True),
    ),
    Detector(
        "auth_header",  # what no detector above recognised: "Authorization: Digest …", "Token …"
        re.compile(
            r"(?i)(?<![A-Za-z0-9])(?:proxy-)?authori[sz]ation\\*+[\"']?+[ \t]*+[:=][ \t]*+\\*+[\"']?+"
            r"(?:(?:basic|bearer|digest|token|negotiate|ntlm|hmac|apikey|aws4-hmac-sha256)[ \t]++)?+"
            r"([^\s,;\"'\\]{6,}+)"
        ),
        groups=(1,),
        hint=_any_of("authori", lower=True),
    ),
    Detector(
        "auth_header",  # other credential headers: their whole value (every cookie of a Cookie header)
        re.compile(r"(?i)(?<![\w-])(?:set-)?cookie\\*+[\"']?+[ \t]*+:[ \t]*+\\*+[\"']?+([^\r\n\"'\\]*[^\s\"'\\])"),
        groups=(1,),
        hint=_any_of("cookie", lower=True),
    ),
    # After the headers' own kinds (``Basic …`` is base64 too), before what could cut into a blob.
    Detector("encoded_secret", None, find=_encoded_secret_spans, hint=lambda facts: len(facts.text) >= 12),
    Detector("connection_secret", None, find=_url_spans, hint=lambda facts: "://" in facts.text and "@" in facts.text),
    # Before the numbers: a card, an SSN or a phone number could be read inside an IBAN's digits.
    Detector("iban", None, find=_iban_spans, hint=_digits_at_least(8)),
    Detector(
        "password",
        None,
        find=_key_value_spans,
        hint=_secret_word_hint,
    ),
    Detector("password", None, find=_identified_by_spans, hint=_any_of("identified", lower=True)),
    Detector("password", None, find=_pgpass_spans, hint=lambda facts: ":" in facts.text),
    Detector(
        "connection_secret",  # the secret part of well-known webhook and bot URLs
        re.compile(
            r"(?i)(?:hooks\.slack\.com/(?:services|workflows|triggers)/|discord(?:app)?+\.com/api/webhooks/"
            r"|\.webhook\.office\.com/webhookb2/|hooks\.zapier\.com/hooks/catch/|api\.telegram\.org/(?:file/)?+bot"
            r"|/hooks/(?=[A-Za-z0-9]{20,}+(?![A-Za-z0-9])))([A-Za-z0-9_:@.+/=%-]++)"
        ),
        groups=(1,),
        hint=lambda facts: "hook" in facts.lower or "telegram" in facts.lower,
    ),
    Detector("password", None, find=_secret_column_spans, hint=_table_hint),
    # Last of the secrets: what a secret's name, a key's shape or a layout has not already taken.
    Detector("random_value", None, find=_random_value_spans, hint=_assignment_hint),
    Detector("card_number", None, find=_card_spans, hint=_digits_at_least(13)),
    Detector("national_id", None, find=_ssn_spans, hint=_digits_at_least(9)),
    Detector("national_id", None, find=_nino_spans, hint=_digits_at_least(6)),
    Detector("national_id", None, find=_thai_spans, hint=_digits_at_least(13)),
)


def _at_hint(facts: Facts) -> bool:
    text = facts.text
    return "@" in text or (("%" in text or "&#" in text) and _AT_SIGN.search(text) is not None)


_EMAIL = Detector("email", None, find=_email_spans, hint=_at_hint)
_PHONE_DETECTOR = Detector("phone", _PHONE, accept=lambda m: 9 <= len(_only_digits(m)) <= 15, hint=_digits_at_least(9))


def _detectors(policy: PrivacyPolicy) -> tuple[Detector, ...]:
    extra = ((_EMAIL,) if policy.redact_email else ()) + ((_PHONE_DETECTOR,) if policy.redact_phone else ())
    return _SECRETS + extra


_PLACED = re.compile(r"\[REDACTED:[a-z_]+\]")
#: What may stand between and around placeholders in a value that is left alone as already
#: redacted: blanks, quotes, delimiters and the brackets that close what holds it (a JSON list).
_PLACEHOLDER_SEPARATORS = " \t\r\n\"'`,;:=-[](){}<>\\."


def _outside_placeholders(text: str, spans: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    """What makes redacting redacted text change nothing, without letting a placeholder
    shield a secret. A finding that cuts into a placeholder is widened to take it whole
    (``https://[REDACTED:api_key]@`` is not a user ``[REDACTED`` and a password); a finding
    that is then placeholders and separators only is left alone; one that holds anything
    more is redacted whole — a value that merely starts with a placeholder
    (``password=[REDACTED:x]Hunter2``, ``mysql -p[REDACTED:x]Hunter2``) is a value like any
    other. Spans and placeholders are both in order: one sweep."""
    placed = [m.span() for m in _PLACED.finditer(text)]
    if not placed:
        return spans
    starts = [s for s, _ in placed]
    kept: list[tuple[int, int, str]] = []
    for start, end, kind in spans:
        k = max(0, bisect.bisect_right(starts, start) - 1)
        while k < len(placed) and placed[k][0] < end:
            ps, pe = placed[k]
            if ps < end and start < pe:  # overlaps: take the placeholder whole
                start, end = min(start, ps), max(end, pe)
            k += 1
        rest = _PLACED.sub("", text[start:end])
        if rest.strip(_PLACEHOLDER_SEPARATORS):
            if kept and start < kept[-1][1]:  # widened into the previous one: merge them
                start = kept.pop()[0]
            kept.append((start, end, kind))
    return kept


def redact(text: str, policy: PrivacyPolicy = DEFAULT_POLICY) -> tuple[str, Counter[str]]:
    """The text with every finding replaced by ``[REDACTED:<kind>]``, and what was found."""
    found: Counter[str] = Counter()
    if not text:
        return text, found
    facts = Facts(text)
    for detector in _detectors(policy):
        if not detector.hint(facts):
            continue
        spans = [(*facts.span(s, e), kind) for s, e, kind in detector.find(detector, facts) if e > s]
        if spans and _DONE in text:
            spans = _outside_placeholders(text, spans)
        if not spans:
            continue
        pieces: list[str] = []
        last = 0
        for start, end, kind in spans:
            if start < last:  # overlaps the previous one (a character that folded into two)
                continue
            pieces.append(text[last:start])
            pieces.append(PLACEHOLDER.format(kind))
            last = end
            found[kind] += 1
        pieces.append(text[last:])
        text = "".join(pieces)
        facts = Facts(text)
    return text, found


def _redact_json_list(value: str, policy: PrivacyPolicy) -> tuple[str, Counter[str]] | None:
    """A JSON list of strings (tool-event steps) redacted item by item, so that it stays
    JSON; None for anything else."""
    try:
        items = orjson.loads(value)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
        return None
    found: Counter[str] = Counter()
    out = []
    for item in items:
        redacted, counts = redact(item, policy)
        out.append(redacted)
        found.update(counts)
    return (orjson.dumps(out).decode() if found else value), found


def redact_value(value: str, policy: PrivacyPolicy = DEFAULT_POLICY) -> tuple[str, Counter[str]]:
    """A metadata value: as text, except that a JSON list of strings stays a JSON list."""
    if value.startswith("[") and value.endswith("]"):
        as_list = _redact_json_list(value, policy)
        if as_list is not None:
            value, found = as_list
            again, more = redact(value, policy)  # e.g. a key=value pair split across two items
            return again, found + more
    return redact(value, policy)


def redact_mapping(
    values: Mapping[str, str], policy: PrivacyPolicy = DEFAULT_POLICY
) -> tuple[dict[str, str], Counter[str]]:
    """Redact every key and value of a string map (turn metadata). A key that holds a secret
    becomes its redacted form; two keys that become the same are kept apart (``…#2``), so
    no value is lost. Nothing is cut: the caller checks the limits (``grown_past_limits``)."""
    out: dict[str, str] = {}
    found: Counter[str] = Counter()
    for key, value in values.items():
        new_key, in_key = redact(key, policy)
        new_value, in_value = redact_value(value, policy)
        if new_key in out:
            n = 2
            while f"{new_key}#{n}" in out or f"{new_key}#{n}" in values:
                n += 1
            new_key = f"{new_key}#{n}"
        out[new_key] = new_value
        found.update(in_key)
        found.update(in_value)
    return out, found


@dataclass(frozen=True, slots=True)
class TurnText:
    """The free-text fields of a turn, redacted."""

    content: str
    tool_name: str | None
    tags: tuple[str, ...]
    metadata: dict[str, str]


def redact_turn(
    content: str,
    *,
    tool_name: str | None,
    tags: Sequence[str],
    metadata: Mapping[str, str],
    policy: PrivacyPolicy = DEFAULT_POLICY,
) -> tuple[TurnText, Counter[str]]:
    """Every free-text field of a turn through the filter: content, tool name, tags,
    metadata keys and values. Placeholders can make a text longer than the secret was;
    nothing is cut to fit — whoever stores the result checks it against the turn contract's
    limits (``grown_past_limits``) and refuses it (422, dead letter) when it no longer fits."""
    found: Counter[str] = Counter()
    new_content, counts = redact(content, policy)
    found.update(counts)
    new_tool = None
    if tool_name is not None:
        new_tool, counts = redact(tool_name, policy)
        found.update(counts)
    new_tags = []
    for tag in tags:
        new_tag, counts = redact(tag, policy)
        new_tags.append(new_tag)
        found.update(counts)
    new_metadata, counts = redact_mapping(metadata, policy)
    found.update(counts)
    return TurnText(new_content, new_tool, tuple(new_tags), new_metadata), found


def grown_past_limits(
    before: TurnText, after: TurnText, *, max_content_chars: int
) -> list[tuple[tuple[str, ...], str]]:
    """(where, why) for each field of a turn that redaction made longer than the turn
    contract allows (``schemas/turns.py``): ``("content",)``, ``("tags", "3")``,
    ``("metadata", "2", "value")``, … A turn is refused for it, never truncated."""
    out: list[tuple[tuple[str, ...], str]] = []

    def check(where: tuple[str, ...], what: str, old: str, new: str, limit: int) -> None:
        if len(new) > limit:
            out.append(
                (
                    where,
                    f"{what} is {len(new)} characters once redacted ({len(old)} as sent), over its limit of {limit}:"
                    " redaction made it longer (each secret's placeholder is longer than the secret), and a turn is"
                    " refused rather than truncated",
                )
            )

    check(("content",), "content", before.content, after.content, max_content_chars)
    if before.tool_name is not None and after.tool_name is not None:
        check(("tool_name",), "tool_name", before.tool_name, after.tool_name, MAX_TOOL_NAME_CHARS)
    for i, (old, new) in enumerate(zip(before.tags, after.tags, strict=True)):
        check(("tags", str(i)), f"tag {i}", old, new, MAX_TAG_CHARS)
    pairs = zip(before.metadata.items(), after.metadata.items(), strict=True)
    for i, ((old_key, old_value), (new_key, new_value)) in enumerate(pairs):
        check(("metadata", str(i), "key"), f"metadata key {i}", old_key, new_key, MAX_METADATA_KEY_CHARS)
        check(("metadata", str(i), "value"), f"metadata value {i}", old_value, new_value, MAX_METADATA_VALUE_CHARS)
    return out


def secret_in(value: str) -> list[str]:
    """The kinds of secret a string holds (secrets only: never e-mail or phone)."""
    return sorted(redact(value)[1]) if value else []


#: An identifier read as words: its separators and letter-digit boundaries as spaces, so that a
#: phone number glued to a word (``u4155552671``, ``tel:+1-415…``) stands apart.
_ID_WORD_BREAK = re.compile(r"[_:/]|-(?=[^\W\d_])|(?<=[^\W\d_])-|(?<=[^\W\d_])(?=\d)|(?<=\d)(?=[^\W\d_])")


#: UUIDs and other hexadecimal ids inside an identifier: their digits are no phone number.
_HEX_ID = re.compile(
    r"(?i)[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|(?=[0-9a-f]*[a-f])[0-9a-f]{16,}"
)


def personal_data_in(value: str, policy: PrivacyPolicy) -> list[str]:
    """``email``/``phone`` when an identifier is or contains one and the policy redacts it."""
    if not value or not (policy.redact_email or policy.redact_phone):
        return []
    kinds = []
    if policy.redact_email and _at_hint(Facts(value)) and redact(value, PrivacyPolicy(redact_email=True))[1]["email"]:
        kinds.append("email")
    if policy.redact_phone:
        spaced = _ID_WORD_BREAK.sub(" ", _HEX_ID.sub(" ", value))
        if redact(spaced, PrivacyPolicy(redact_phone=True))[1]["phone"]:
            kinds.append("phone")
    return kinds


def secret_in_identifiers(record: Mapping[str, Any], fields: Sequence[str] = IDENTIFIER_FIELDS) -> list[str]:
    """The identifier fields of a record that carry a secret, e.g. ``["user_id"]``.
    Identifiers are refused rather than rewritten: an id must stay stable."""
    values = [(name, v) for name in fields if isinstance(v := record.get(name), str) and v]
    if not values:
        return []
    facts = Facts(" ".join(v for _, v in values))
    if not any(d.hint(facts) for d in _SECRETS):
        return []  # the common case, in one look: no detector could find anything
    return [name for name, value in values if secret_in(value)]


def identifier_problems(
    record: Mapping[str, Any],
    policy: PrivacyPolicy = DEFAULT_POLICY,
    *,
    fields: Sequence[str] = IDENTIFIER_FIELDS,
) -> list[tuple[str, str]]:
    """(field, message) for each identifier of ``record`` (among ``fields``) that carries a
    secret, or — under a policy that redacts them — is or contains an e-mail address or a
    phone number. The message names the field and the kind, never the value. The one rule
    for every identifier of every endpoint (turns, tool events, permissions)."""
    out = []
    secret = set(secret_in_identifiers(record, fields))
    for name in fields:
        value = record.get(name)
        if not isinstance(value, str) or not value:
            continue
        if name in secret:
            kinds = ", ".join(secret_in(value))
            out.append((name, f"{name} carries a secret ({kinds}); identifiers are never rewritten, so it is refused"))
        elif name in PERSONAL_IDENTIFIER_FIELDS and (personal := personal_data_in(value, policy)):
            out.append(
                (
                    name,
                    f"{name} is or contains personal data ({', '.join(personal)}) that this tenant's privacy policy"
                    " redacts; identifiers are never rewritten, so it is refused",
                )
            )
    return out

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
words), credentials in URLs, and the secrets command lines carry (``mysql -p…``,
``sshpass -p …``, ``curl -u user:…``, ``--token …``, ``redis-cli -a …``, ``htpasswd -b …``,
``aws configure set aws_secret_access_key …``, …). Every value is redacted whole, whatever
its length. E-mail addresses and phone numbers only when the tenant's policy asks for it.

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
directly); redacting redacted text changes nothing. The audit log's command lines go
through the same filter (``agents_gateway.permissions.redact_command``), so the two never
disagree about what a command-line secret is.

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
from functools import cache
from typing import Any

import orjson

from schemas.turns import MAX_METADATA_KEY_CHARS, MAX_METADATA_VALUE_CHARS, MAX_TAG_CHARS, MAX_TOOL_NAME_CHARS

PLACEHOLDER = "[REDACTED:{}]"
_DONE = "[REDACTED:"

#: The identifiers of a turn: refused, never rewritten, when they carry a secret.
IDENTIFIER_FIELDS = ("tenant_id", "agent_id", "user_id", "project_id", "session_id")
#: Identifiers that may name a person: refused also when they are or contain an e-mail address
#: or a phone number and the tenant's policy redacts those.
PERSONAL_IDENTIFIER_FIELDS = ("agent_id", "user_id", "project_id", "session_id")


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

    __slots__ = ("_reversed", "digits", "lower", "origin", "original", "text")

    def __init__(self, original: str) -> None:
        self.original = original
        self.text, self.origin = normalise(original)
        self.lower = self.text.lower() if self.text.isascii() else self.text.translate(_ASCII_LOWER)
        self.digits = len(_NOT_DIGIT.sub("", self.text))
        self._reversed: str | None = None

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
        if not target or target.startswith(_DONE):  # already done: redacting is idempotent
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


def _password_name(name: str) -> bool:
    """A name whose value may be a passphrase of several words (the rest of the line is taken)."""
    return _PASSWORD_NAME.search(name.translate(_ASCII_LOWER)) is not None


_SECRET_HINTS = ("pass", "pwd", "secret", "token", "key", "credential", "auth")


def _secret_word_hint(facts: Facts) -> bool:
    return any(k in facts.lower for k in _SECRET_HINTS)


# --- command lines ----------------------------------------------------------------------------

#: A shell word: quoted parts, or other characters up to whitespace or an operator. Quotes do
#: not cross lines.
_SHELL_WORD = re.compile(r"(?:'[^'\n]*+'?|\"[^\"\n]*+\"?|[^\s'\"|;&<>()`])++")
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


def _value_in(text: str, start: int, end: int, how: str) -> tuple[int, int] | None:
    """The secret part of an option's value ``text[start:end]``."""
    if how == "colon" or how == "percent":
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
            yield from _htpasswd_spans(words)
            continue
        options = _SHORT_OPTIONS[family]
        logged_in = family != "login"
        for i, word in enumerate(words):
            value = word.group()
            if family == "login" and value == "login":
                logged_in = True
            if family == "http" and value in ("--user", "--proxy-user") and i + 1 < len(words):
                nxt = words[i + 1]
                if (span := _value_in(text, nxt.start(), nxt.end(), "colon")) is not None:
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
                span = _value_in(text, word.start() + 2, word.end(), how)
            elif mode == "both" and i + 1 < len(words) and not words[i + 1].group().startswith("-"):
                span = _value_in(text, words[i + 1].start(), words[i + 1].end(), how)
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


def _htpasswd_spans(words: Sequence[re.Match[str]]) -> Iterator[Found]:
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
            yield (*positional[index].span(), "cli_password")


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
            yield (*value.span(), "cli_secret")


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
        if start < last or facts.text.startswith(_DONE, start):
            continue
        last = end
        yield start, end, kind


def _command_line_hint(facts: Facts) -> bool:
    return "-" in facts.text or "config" in facts.lower


# --- key = value --------------------------------------------------------------------------------

_NAME_RUN = re.compile(r"[A-Za-z0-9_.-]*+")
_NAME_RUN_BACK = re.compile(r"[A-Za-z0-9_.-]*+")
#: After a name: its closing quote (escaped in JSON inside JSON), then the separator.
_ASSIGN = re.compile(r"(?:\\*+[\"'])?+[ \t]*+(?P<sep>:=|=>|:|=)")
_BEFORE_VALUE = re.compile(r"[ \t]*+(?:\r?\n[ \t]*+)?+")
_DQ_VALUE = re.compile(r"(?:[^\"\\\n]|\\.)*+")
_EQ_VALUE = re.compile(r"\\++\"([^\"\\\n]*+)")
_SQ_VALUE = re.compile(r"'([^'\n]*+)")
_BARE_VALUE = re.compile(r"[^\s,;&\"'\\]++")
#: An environment variable's name (upper case, by convention): ``PGPASSWORD=… psql``.
_ENV_NAME = re.compile(r"[A-Z_][A-Z0-9_]*")
_SHELL_BARE = re.compile(r"[^\s'\"|;&<>()`]++")
_SHELL_PREFIX = re.compile(r"(?:^|[\s;&|(])(?:export|env|declare|local|readonly|set)[ \t]++$")


def _key_value_spans(detector: Detector, facts: Facts) -> Iterator[Found]:
    """The value of every ``name=value`` / ``name: value`` / ``"name": "value"`` pair whose name
    says it holds a secret. Each name is read once, and each value is skipped as a whole."""
    text, lower = facts.text, facts.lower
    cursor = 0
    for word in _SECRET_WORD.finditer(lower):
        if word.start() < cursor:
            continue
        name_match = _NAME_RUN.match(text, word.end())
        end = name_match.end() if name_match else word.end()
        cursor = end
        assign = _ASSIGN.match(text, end)
        if assign is None:
            continue
        start = facts.run_before(word.start(), _NAME_RUN_BACK)
        name = text[start:end]
        if name.translate(_ASCII_LOWER).lstrip("-") in ("authorization", "authorisation", "proxy-authorization"):
            continue  # the auth_header detector's: it keeps the scheme ("Basic …") readable
        if not secret_name(name):
            continue
        sep, after = assign.group("sep"), assign.end()
        if sep == "=" and text.startswith("=", after):
            continue  # a comparison: password == x
        if sep == ":" and text.startswith("//", after):
            continue  # a URL scheme
        found = _value_after(text, name, sep, after, assign.start() == end and sep == "=", start)
        if found is None:
            continue
        value_start, value_end, kind = found
        cursor = max(cursor, value_end)
        if value_end > value_start and not text.startswith(_DONE, value_start):
            yield value_start, value_end, kind


def _value_after(text: str, name: str, sep: str, after: int, assignment: bool, name_start: int) -> Found | None:
    """The value that follows a separator at ``after`` (its span and kind), or None. Each
    form is read once, up to its end (a quote, a delimiter, the end of the line)."""
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
    if shell and (word := _SHELL_BARE.match(text, v)) is not None and _shell_assignment(text, word.end(), name_start):
        return v, word.end(), "secret_variable"
    bare = _BARE_VALUE.match(text, v)
    if bare is None:
        return None
    whole_line = _password_name(name) and same_line and (sep != "=" or text[after : after + 1] in (" ", "\t"))
    if whole_line:  # a passphrase: everything up to the end of the line
        return v, _line_end(text, v), "password"
    return v, bare.end(), "password"


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
    r"[AghxsrmnpS](?:KIA|SIA|Iza|h[pousr]_|ithub_pat_|ox[abeprs]-|app-|k[_-]|l(?:pat|ptt|dt)-|f_|pm_|ypi-AgE|G\.|GE-SECRET|sk_)"
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
_HOST = re.compile(r"(?:\[[0-9A-Fa-f:.]++\]|[\w.~%-]++)(?::[0-9]*+)?+(?=[/?#,;)\]\\]|$)")
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

# Cards: a run of digits in groups separated by spaces, tabs, line breaks, dots or dashes (one
# or two of them). The whole run is a card if it passes; otherwise a card may sit inside a
# longer run ("ref 12 4111 1111 1111 1111"), grouped the way cards are printed (4-4-4-4[-1..4],
# 4-6-5, 4-6-4), or as one group of 13-19 digits between spaces.
_CARD_RUN = re.compile(r"[0-9](?<![0-9]{2})(?:[ \t\r\n.-]{0,2}[0-9]){12,}")
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


def _card_spans(detector: Detector, facts: Facts) -> Iterator[Found]:
    for run in _CARD_RUN.finditer(facts.text):
        text = run.group()
        groups = [g.span() for g in _GROUP.finditer(text)]
        if card_ok(text) and not (len(groups) == 2 and "." in text):  # 2 groups and a dot: a decimal
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
                if card_ok(text[groups[i][0] : groups[j][1]]):
                    found = j
            if found is None:
                i += 1
                continue
            yield run.start() + groups[i][0], run.start() + groups[found][1], "card_number"
            i = found + 1


#: A separator inside a written number: one blank, dash or line break.
_SEP = r"(?:[ \t-]|\r?\n)"
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


def _email_spans(detector: Detector, facts: Facts) -> Iterator[Found]:
    """``local@domain``: Unicode letters in both, a quoted local part (``"john doe"@…``), a
    domain without a dot when it is a name (``bob@localhost``). Not the user of a URL
    (``ssh://deploy@host``). Each ``@`` costs at most a local part's and a domain's length."""
    text = facts.text
    pos = 0
    while (at := text.find("@", pos)) >= 0:
        pos = at + 1
        start = _local_start(facts, at)
        if start < 0:
            continue
        domain = _DOMAIN.match(text, at + 1)
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

_PHONE_SEP = r"(?:[ .\t-]|\r?\n)"
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
    Detector("connection_secret", None, find=_url_spans, hint=lambda facts: "://" in facts.text and "@" in facts.text),
    Detector(
        "password",
        None,
        find=_key_value_spans,
        hint=lambda facts: ("=" in facts.text or ":" in facts.text) and _secret_word_hint(facts),
    ),
    Detector("card_number", None, find=_card_spans, hint=_digits_at_least(13)),
    Detector(
        "national_id",  # US SSN: 3-2-4 digits, one separator written the same way twice, not in a row of numbers
        re.compile(
            rf"[0-8](?<![0-9][0-8])(?<![0-9][ \t-][0-8])(?<![0-9]\n[0-8])[0-9]{{2}}(?<!000)(?<!666)(?P<s>{_SEP})"
            r"(?!00)[0-9]{2}(?P=s)(?!0000)[0-9]{4}(?![0-9])(?!(?P=s)[0-9])"
        ),
        hint=_digits_at_least(9),
    ),
    Detector("national_id", None, find=_nino_spans, hint=_digits_at_least(6)),
    Detector("national_id", None, find=_thai_spans, hint=_digits_at_least(13)),
)

_EMAIL = Detector("email", None, find=_email_spans, hint=_any_of("@"))
_PHONE_DETECTOR = Detector("phone", _PHONE, accept=lambda m: 9 <= len(_only_digits(m)) <= 15, hint=_digits_at_least(9))


def _detectors(policy: PrivacyPolicy) -> tuple[Detector, ...]:
    extra = ((_EMAIL,) if policy.redact_email else ()) + ((_PHONE_DETECTOR,) if policy.redact_phone else ())
    return _SECRETS + extra


_PLACED = re.compile(r"\[REDACTED:[a-z_]+\]")


def _outside_placeholders(text: str, spans: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    """The findings that neither cut into an earlier placeholder (``https://[REDACTED:api_key]@``
    is not a user and a password) nor consist of placeholders only: what makes redacting
    redacted text change nothing. Spans and placeholders are both in order: one sweep."""
    placed = [m.span() for m in _PLACED.finditer(text)]
    starts = [s for s, _ in placed]
    kept = []
    for start, end, kind in spans:
        k = max(0, bisect.bisect_right(starts, start) - 1)
        cut = False
        while k < len(placed) and placed[k][0] < end:
            ps, pe = placed[k]
            if ps < end and start < pe and not (start <= ps and pe <= end):
                cut = True
                break
            k += 1
        if cut:
            continue
        rest = _PLACED.sub("", text[start:end])
        if rest.strip(" \t\r\n\"',;:=-"):
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
    if policy.redact_email and "@" in value and redact(value, PrivacyPolicy(redact_email=True))[1]["email"]:
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

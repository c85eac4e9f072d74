"""The privacy filter: secrets and personal data are replaced by typed placeholders before
anything is published, stored or embedded.

Always redacted: payment card numbers (13-19 digits passing the Luhn check, however they
are grouped), national ids (US SSN, UK National Insurance number, Thai national id with
its checksum), API keys and tokens of the common providers (also glued to a word, as in
``deploy_ghp_…``), bearer and ``Basic`` credentials and ``Authorization:`` header values,
JWTs (unsigned ones too), private-key blocks (PEM, OpenSSH, PGP, PuTTY), the value of
``password=…``/``"api_key": "…"``-style pairs (after ``password:`` the whole rest of the
line: a passphrase has several words) and credentials in URLs. E-mail addresses and phone
numbers only when the tenant's policy asks for it.

Matching runs on a normalised view of the text (NFKC, Unicode spaces and dashes unified,
zero-width and other format characters dropped, every script's digits as ASCII digits,
typographic quotes as ASCII quotes), and each finding is mapped back to its span in the
original text, which is where it is replaced: ``4111 1111 1111 1111`` written with
full-width digits or non-breaking spaces is redacted in the text as written.

Every free-text field of a turn is filtered (``redact_turn``: content, tags, tool name,
metadata keys and values); identifiers are never rewritten (an id must stay stable), so a
turn whose identifier carries a secret is refused (``secret_in_identifiers``). The gateway
applies both before producing (raw secrets never reach Kafka) and the worker again (agents
may produce to Kafka directly); redacting redacted text changes nothing.

The patterns are ours and written without ambiguous nested quantifiers, so ``re`` is safe
here; user-supplied patterns (permission rules) go through RE2 instead. Each detector has
a cheap hint that must pass before its pattern runs: most text holds no secret, and
skipping the regexes is what keeps the filter at a few µs per turn (``bench/privacy.py``).
"""

from __future__ import annotations

import base64
import binascii
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


#: Whitespace escaped in JSON (or in JSON inside JSON): ``\\t``, ``\\n``, ``\\\\n``.
_ESCAPED_SPACE = re.compile(r"\\+[tnr]")


def _blank(match: re.Match[str]) -> str:
    escape = match.group()
    return " " * (len(escape) - 1) + ("\n" if escape[-1] in "nr" else " ")


def _unescape(view: str) -> str:
    """Escaped whitespace read as whitespace, character for character (the offsets stay):
    in ``{"note": "x\\tpassword: …"}`` the key starts a word, and the line ends at ``\\n``."""
    return _ESCAPED_SPACE.sub(_blank, view) if "\\" in view else view


def normalise(text: str) -> tuple[str, list[int] | None]:
    """The text as the detectors see it, and for each of its characters the index of the
    original character it came from (None when the two line up one to one)."""
    if text.isascii():
        return _unescape(text), None
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
        return _unescape(text), None
    pieces.append(text[last:])
    view = _unescape("".join(pieces))
    if aligned:
        return view, None
    origin: list[int] = []
    last = 0
    for match in foldable.finditer(text):
        i = match.start()
        origin.extend(range(last, i))
        origin.extend([i] * len(table[text[i]]))
        last = i + 1
    origin.extend(range(last, len(text)))
    return view, origin


class Facts:
    """The normalised view and what the hints look at, computed once per text."""

    __slots__ = ("digits", "lower", "origin", "original", "text")

    def __init__(self, original: str) -> None:
        self.original = original
        self.text, self.origin = normalise(original)
        self.lower = self.text.lower()
        self.digits = len(_NOT_DIGIT.sub("", self.text))

    def span(self, start: int, end: int) -> tuple[int, int]:
        """A span of the normalised view as a span of the original text."""
        origin = self.origin
        if origin is None:
            return start, end
        if start >= len(origin):
            return len(self.original), len(self.original)
        return origin[start], (origin[end - 1] + 1 if end > start else origin[start])


# --- detectors ----------------------------------------------------------------------------------

Finder = Callable[["Detector", Facts], Iterator[tuple[int, int]]]


def _regex_spans(detector: Detector, facts: Facts) -> Iterator[tuple[int, int]]:
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
        yield match.start(group), match.end(group)


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
    if lower:
        return lambda facts: any(n in facts.lower for n in needles)
    return lambda facts: any(n in facts.text for n in needles)


# Cards: a run of digits in groups separated by spaces, dots or dashes (one or two of them).
# The whole run is a card if it passes; otherwise a card may sit inside a longer run
# ("ref 12 4111 1111 1111 1111"), grouped the way cards are printed (4-4-4-4[-1..4],
# 4-6-5, 4-6-4), or as one group of 13-19 digits between spaces.
_CARD_RUN = re.compile(r"(?<![0-9])(?:[0-9][ .-]{0,2}){12,}[0-9]")
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


def _card_spans(detector: Detector, facts: Facts) -> Iterator[tuple[int, int]]:
    for run in _CARD_RUN.finditer(facts.text):
        text = run.group()
        groups = [g.span() for g in _GROUP.finditer(text)]
        if card_ok(text) and not (len(groups) == 2 and "." in text):  # 2 groups and a dot: a decimal
            yield run.span()
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
            yield run.start() + groups[i][0], run.start() + groups[found][1]
            i = found + 1


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

#: Keywords whose value is a secret. After ``password:`` (and ``password = `` with spaces,
#: as in INI files) the value is the whole rest of the line.
_PASSWORD_WORDS = r"pass(?:word|wd|phrase)|pwd"
_KEYWORDS = (
    rf"{_PASSWORD_WORDS}|pass|"
    r"(?:client|app|consumer|webhook|signing|shared)[_-]?secret|secret[_-]?(?:access[_-]?)?key|"
    r"private[_-]?key|api[_-]?key|apikey|access[_-]?key|"
    r"(?:auth|access|refresh|session|id|api|bearer)[_-]?token|token|secret"
)
_CAMEL_KEYWORDS = r"Password|Passwd|Passphrase|Pwd|Secret|ApiKey|Token|AccessKey|SecretKey|PrivateKey"
_VALUE = (
    r"\\*[\"']?[ \t]*(?P<sep>:=|=>|:|=)[ \t]*(?:\r?\n[ \t]*)?"
    r"(?:\"(?P<dq>(?:[^\"\\\n]|\\[^\n]){1,512})\""
    r"|\\+\"(?P<eq>[^\"\\\n]{1,512})\\+\""
    r"|'(?P<sq>[^'\n]{1,512})'"
    r"|(?P<bare>[^\s,;&\"'\\]{1,512}))"
)
#: Matched against the lower-cased text (case-insensitive matching costs twice as much).
_KEY_VALUE = re.compile(rf"(?<![a-z0-9])(?P<key>{_KEYWORDS})(?![a-z0-9_]){_VALUE}")
_KEY_VALUE_ANY_CASE = re.compile(rf"(?i)(?<![a-z0-9])(?P<key>{_KEYWORDS})(?![a-z0-9_]){_VALUE}")
#: camelCase keys (``dbPassword``, ``userToken``), against the text as it is.
_CAMEL_KEY_VALUE = re.compile(rf"(?<=[a-z0-9])(?P<key>{_CAMEL_KEYWORDS})(?![A-Za-z0-9_]){_VALUE}")
_PASSWORD_KEY = re.compile(rf"(?i:{_PASSWORD_WORDS})")


def _key_value_spans(detector: Detector, facts: Facts) -> Iterator[tuple[int, int]]:
    text = facts.text
    if len(facts.lower) == len(text):
        matches = list(_KEY_VALUE.finditer(facts.lower))
    else:  # lower-casing changed a length (e.g. U+0130): offsets would not line up
        matches = list(_KEY_VALUE_ANY_CASE.finditer(text))
    if any(w in text for w in ("Pass", "Pwd", "Secret", "Key", "Token")):
        matches.extend(_CAMEL_KEY_VALUE.finditer(text))
        matches.sort(key=lambda m: m.start())
    last = 0
    for match in matches:
        if match.start() < last:
            continue
        for group in ("dq", "eq", "sq", "bare"):
            start = match.start(group)
            if start >= 0:
                break
        end = match.end(group)
        after = match.end("sep")
        whole_line = (
            group == "bare"
            and _PASSWORD_KEY.search(match.group("key")) is not None
            and "\n" not in text[after:start]  # on the next line: one word, as with other keys
            and (match.group("sep") != "=" or text[after : after + 1] in (" ", "\t"))
        )
        if whole_line:  # a passphrase: everything up to the end of the line
            stop = text.find("\n", start)
            end = len(text) if stop < 0 else stop
            end = min(end, start + 512)
            while end > start and text[end - 1] in " \t\r":
                end -= 1
        last = end
        if text.startswith(_DONE, start):
            continue
        yield start, end


def _api_key_spans(detector: Detector, facts: Facts) -> Iterator[tuple[int, int]]:
    """The key pattern tried only where a known prefix starts (a scan of the whole text
    with the full pattern costs ten times as much)."""
    assert detector.pattern is not None
    text = facts.text
    pos = 0
    while (hint := _API_KEY_HINT.search(text, pos)) is not None:
        match = detector.pattern.match(text, hint.start())
        if match is None:
            pos = hint.start() + 1
            continue
        yield match.span()
        pos = match.end()


_SECRETS: tuple[Detector, ...] = (
    Detector(
        "private_key",
        re.compile(
            r"(?i)-{3,}[ \t]*BEGIN[ A-Z0-9]*?PRIVATE[ \t]+KEY(?:[ \t]+BLOCK)?[ \t]*-{3,}[\s\S]*?"
            r"(?:-{3,}[ \t]*END[ A-Z0-9]*?PRIVATE[ \t]+KEY(?:[ \t]+BLOCK)?[ \t]*-{3,}|$)"
        ),
        hint=lambda facts: "private" in facts.lower and "key" in facts.lower,
    ),
    Detector(
        "private_key",  # PuTTY's .ppk: the private part follows "Private-Lines: N"
        re.compile(r"(?i)Private-Lines:[ \t]*[0-9]+[ \t]*\r?\n([\s\S]*?)(?=\r?\nPrivate-(?:MAC|Hash):|$)"),
        groups=(1,),
        hint=_any_of("private-lines", lower=True),
    ),
    Detector(
        "jwt",  # header.payload[.signature], the signature possibly empty (alg "none")
        re.compile(r"eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}(?:\.[A-Za-z0-9_-]*){0,3}"),
        hint=_any_of("eyJ"),
    ),
    Detector(
        "api_key",
        re.compile(
            r"(?:(?:AKIA|ASIA)[0-9A-Z]{16}"  # AWS access key id
            r"|AIza[0-9A-Za-z_-]{35}"  # Google API key
            r"|gh[pousr]_[A-Za-z0-9]{36,255}"  # GitHub tokens
            r"|github_pat_[A-Za-z0-9_]{22,255}"
            r"|xox[abeprs]-[A-Za-z0-9-]{10,255}|xapp-[A-Za-z0-9-]{10,255}"  # Slack
            r"|(?<![A-Za-z0-9])(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,255}"  # Stripe
            r"|(?<![A-Za-z0-9])sk-(?:proj-|ant-)?[A-Za-z0-9_-]{20,255}"  # OpenAI / Anthropic style
            r"|gl(?:pat|ptt|dt)-[A-Za-z0-9_-]{20,255}"  # GitLab
            r"|(?<![A-Za-z0-9])hf_[A-Za-z0-9]{30,255}"  # Hugging Face
            r"|(?<![A-Za-z0-9])npm_[A-Za-z0-9]{36,255}"  # npm
            r"|pypi-AgE[A-Za-z0-9_-]{50,255}"  # PyPI
            r"|SG\.[A-Za-z0-9_-]{20,32}\.[A-Za-z0-9_-]{20,64}"  # SendGrid
            r"|AGE-SECRET-KEY-1[0-9A-Z]{58}"  # age
            r"|msk_[0-9a-f]{16}_[A-Za-z0-9_-]{20,255}"  # our own gateway keys
            r")"
        ),
        find=_api_key_spans,
    ),
    Detector(
        "bearer_token",
        re.compile(r"(?i)(?<![A-Za-z0-9])bearer[ \t]*[:=]?[ \t]*([A-Za-z0-9._~+/-]{16,}=*)"),
        groups=(1,),
        hint=_any_of("bearer", lower=True),
    ),
    Detector(
        "basic_auth",
        re.compile(r"(?i)(?<![A-Za-z0-9])basic[ \t]+([A-Za-z0-9+/]{6,}={0,2})(?![A-Za-z0-9+/=])"),
        accept=_basic_ok,
        groups=(1,),
        hint=_any_of("basic", lower=True),
    ),
    Detector(
        "auth_header",  # what no detector above recognised: "Authorization: Digest …", "Token …"
        re.compile(
            r"(?i)(?<![A-Za-z0-9])(?:proxy-)?authori[sz]ation\\?[\"']?[ \t]*[:=][ \t]*\\?[\"']?"
            r"(?:(?:basic|bearer|digest|token|negotiate|ntlm|hmac|apikey|aws4-hmac-sha256)[ \t]+)?"
            r"([^\s,;\"'\\]{6,})"
        ),
        groups=(1,),
        hint=_any_of("authori", lower=True),
    ),
    Detector(
        "connection_secret",  # scheme://user:password@host, scheme://:password@host, scheme://token@host
        re.compile(r"(?i)[a-z][a-z0-9+.-]{0,30}://(?:[^\s:/@]{0,128}:([^\s/]{1,256})@|([^\s:/@]{16,256})@)"),
        groups=(1, 2),
        hint=lambda facts: "://" in facts.text and "@" in facts.text,
    ),
    Detector(
        "password",
        None,
        find=_key_value_spans,
        hint=lambda facts: (
            ("=" in facts.text or ":" in facts.text)
            and any(k in facts.lower for k in ("pass", "pwd", "secret", "key", "token"))
        ),
    ),
    Detector("card_number", None, find=_card_spans, hint=_digits_at_least(13)),
    Detector(
        "national_id",
        re.compile(r"\b(?!000|666|9\d\d)[0-9]{3}-(?!00)[0-9]{2}-(?!0000)[0-9]{4}\b"),  # US SSN
        hint=_digits_at_least(9),
    ),
    Detector(
        "national_id",
        re.compile(r"\b[A-CEGHJ-PR-TW-Z][A-CEGHJ-NPR-TW-Z] ?[0-9]{2} ?[0-9]{2} ?[0-9]{2} ?[A-D]\b"),  # UK NINO
        hint=_digits_at_least(6),
    ),
    Detector(
        "national_id",
        re.compile(r"(?<![0-9-])[0-9][ -][0-9]{4}[ -][0-9]{5}[ -][0-9]{2}[ -][0-9](?![0-9-])"),  # Thai id, as written
        accept=lambda m: thai_id_ok(_only_digits(m)),
        hint=_digits_at_least(13),
    ),
)

_EMAIL = Detector(
    "email",
    re.compile(r"\b[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9.-]{1,253}\.[A-Za-z]{2,24}\b"),
    hint=_any_of("@"),
)
_PHONE = Detector(
    "phone",
    re.compile(
        r"(?<![\w+])(?:"
        r"\+\d{1,3}[ .-]?(?:\(\d{1,4}\)[ .-]?)?\d{1,4}(?:[ .-]?\d{2,4}){2,4}"  # +country ...
        r"|\(\d{3}\)[ .-]?\d{3}[ .-]\d{4}|\d{3}[ .-]\d{3}[ .-]\d{4}"  # North American
        r"|0\d{1,3}[ .-]\d{3,4}[ .-]\d{3,4}"  # national trunk prefix 0 (UK, TH, DE, ...)
        r")(?![\w-])"
    ),
    accept=lambda m: 9 <= len(_only_digits(m)) <= 15,
    hint=_digits_at_least(9),
)


#: Lower-cased, what any detector but those of digits needs at least one of (each
#: detector's hint implies one of these): a text with none can hold a secret only in its
#: digits. Cheaper than every hint when the text is one of five identifiers.
_TEXT_NEEDLES = (
    "private", "eyj", "bearer", "basic", "authori", "pass", "pwd", "secret", "key", "token", "://", "@",
    "akia", "asia", "aiza", "gh", "xox", "xapp-", "k_", "k-", "gl", "hf_", "npm_", "pypi-", "sg.", "age-",
)  # fmt: skip


def _detectors(policy: PrivacyPolicy) -> tuple[Detector, ...]:
    extra = ((_EMAIL,) if policy.redact_email else ()) + ((_PHONE,) if policy.redact_phone else ())
    return _SECRETS + extra


_PLACED = re.compile(r"\[REDACTED:[a-z_]+\]")


def _outside_placeholders(text: str, spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The findings that neither cut into an earlier placeholder (``https://[REDACTED:api_key]@``
    is not a user and a password) nor consist of placeholders only: what makes redacting
    redacted text change nothing."""
    placed = [m.span() for m in _PLACED.finditer(text)]
    kept = []
    for start, end in spans:
        if any(ps < end and start < pe and not (start <= ps and pe <= end) for ps, pe in placed):
            continue
        rest = _PLACED.sub("", text[start:end])
        if rest.strip(" \t\r\n\"',;:=-"):
            kept.append((start, end))
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
        spans = [facts.span(s, e) for s, e in detector.find(detector, facts) if e > s]
        if spans and _DONE in text:
            spans = _outside_placeholders(text, spans)
        if not spans:
            continue
        placeholder = PLACEHOLDER.format(detector.kind)
        pieces: list[str] = []
        last = 0
        for start, end in spans:
            if start < last:  # overlaps the previous one (a character that folded into two)
                continue
            pieces.append(text[last:start])
            pieces.append(placeholder)
            last = end
            found[detector.kind] += 1
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
    becomes its redacted form (two such keys may then merge: the later value wins)."""
    out: dict[str, str] = {}
    found: Counter[str] = Counter()
    for key, value in values.items():
        new_key, in_key = _one_line(key, policy, MAX_METADATA_KEY_CHARS)
        new_value, in_value = redact_value(value, policy)
        out[new_key] = new_value[:MAX_METADATA_VALUE_CHARS]
        found.update(in_key)
        found.update(in_value)
    return out, found


def _one_line(value: str, policy: PrivacyPolicy, limit: int) -> tuple[str, Counter[str]]:
    """A short field (tag, tool name, metadata key): redacted, and when the placeholders
    make it longer than its limit, only the placeholder of what it held."""
    redacted, found = redact(value, policy)
    if found and len(redacted) > limit:
        redacted = PLACEHOLDER.format(next(iter(found)))
    return redacted, found


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
    max_content_chars: int | None = None,
) -> tuple[TurnText, Counter[str]]:
    """Every free-text field of a turn through the filter: content, tool name, tags,
    metadata keys and values. Placeholders can make a text longer than a short secret was;
    the result still keeps the turn contract's limits (``schemas/turns.py``), so a turn the
    gateway accepted is never dead-lettered by the worker for what the filter did."""
    found: Counter[str] = Counter()
    new_content, counts = redact(content, policy)
    found.update(counts)
    if max_content_chars is not None:
        new_content = new_content[:max_content_chars]
    new_tool = None
    if tool_name is not None:
        new_tool, counts = _one_line(tool_name, policy, MAX_TOOL_NAME_CHARS)
        found.update(counts)
    new_tags = []
    for tag in tags:
        new_tag, counts = _one_line(tag, policy, MAX_TAG_CHARS)
        new_tags.append(new_tag)
        found.update(counts)
    new_metadata, counts = redact_mapping(metadata, policy)
    found.update(counts)
    return TurnText(new_content, new_tool, tuple(new_tags), new_metadata), found


def secret_in(value: str) -> list[str]:
    """The kinds of secret a string holds (secrets only: never e-mail or phone)."""
    return sorted(redact(value)[1]) if value else []


#: What the digit detectors need in an identifier (ASCII, no spaces): nine digits or more in
#: a run (cards, SSNs, Thai ids), or the shape of a UK NI number.
_ID_DIGITS = re.compile(r"[0-9](?:[.-]{0,2}[0-9]){8,}|[A-Za-z]{2}[0-9]{6}[A-Da-d]")


def secret_in_identifiers(record: Mapping[str, Any]) -> list[str]:
    """The identifier fields of a turn record that carry a secret, e.g. ``["user_id"]``.
    Identifiers are refused rather than rewritten: an id must stay stable."""
    values = [(name, v) for name in IDENTIFIER_FIELDS if isinstance(v := record.get(name), str) and v]
    joined = " ".join(v for _, v in values)
    lower = joined.lower()
    if joined.isascii() and not any(n in lower for n in _TEXT_NEEDLES) and not _ID_DIGITS.search(joined):
        return []  # the common case, in one scan: nothing any detector needs
    return [name for name, value in values if secret_in(value)]


def identifier_problems(record: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(field, message) for each identifier carrying a secret; the message names the field
    and the kind of secret, never the value."""
    out = []
    for name in secret_in_identifiers(record):
        kinds = ", ".join(secret_in(record[name]))
        out.append((name, f"{name} carries a secret ({kinds}); identifiers are never rewritten, so it is refused"))
    return out

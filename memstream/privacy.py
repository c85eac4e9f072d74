"""The privacy filter: secrets and personal data are replaced by typed placeholders before
anything is published, stored or embedded.

Always redacted: payment card numbers (13-19 digits passing the Luhn check), national
ids (US SSN, UK National Insurance number, Thai national id with its checksum), API keys
and tokens of the common providers, bearer tokens and JWTs, private-key blocks, and the
value of ``password=...``-style pairs. E-mail addresses and phone numbers only when the
tenant's policy asks for it. The gateway applies it before producing (raw secrets never
reach Kafka) and the worker applies it again (agents may produce to Kafka directly);
redacting redacted text changes nothing.

The patterns are ours and written without nested quantifiers, so ``re`` is safe here;
user-supplied patterns (permission rules) go through RE2 instead.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass

PLACEHOLDER = "[REDACTED:{}]"


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


def _only_digits(text: str) -> str:
    return "".join(ch for ch in text if ch.isdigit())


#: Issuer prefixes of the major card networks (Visa, Mastercard, Amex, Discover, JCB,
#: Diners, UnionPay, Maestro): a Luhn-valid number without one is more likely an id or
#: a millisecond timestamp than a card.
_CARD_PREFIX = re.compile(r"^(?:4|5[1-5]|2[2-7]|3[47]|3[0689]|6(?:011|5|4[4-9]|2)|5[06-8]|6\d)")


def card_ok(match: str) -> bool:
    digits = _only_digits(match)
    return 13 <= len(digits) <= 19 and bool(_CARD_PREFIX.match(digits)) and luhn_ok(digits)


@dataclass(frozen=True)
class Detector:
    kind: str
    pattern: re.Pattern[str]
    #: Extra check on the match (Luhn, checksums); None accepts every match.
    accept: Callable[[str], bool] | None = None
    #: Regex group to replace (0 = the whole match; key=value pairs keep their key).
    group: int = 0
    #: A cheap test that must pass for the pattern to have any chance (most text has no
    #: secrets, and skipping the regex is what keeps the filter at a few µs per turn).
    hint: Callable[[Facts], bool] = lambda _: True


_NOT_DIGIT = re.compile(r"\D+")


class Facts:
    """What the hints look at, computed once per text."""

    __slots__ = ("digits", "lower", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self.lower = text.lower()
        self.digits = len(_NOT_DIGIT.sub("", text))


def _digits_at_least(n: int) -> Callable[[Facts], bool]:
    return lambda facts: facts.digits >= n


def _any_of(*needles: str, lower: bool = False) -> Callable[[Facts], bool]:
    if lower:
        return lambda facts: any(n in facts.lower for n in needles)
    return lambda facts: any(n in facts.text for n in needles)


_API_KEY_PREFIXES = ("AKIA", "AIza", "gh", "github_pat_", "xox", "sk_", "rk_", "sk-", "glpat-", "msk_")

_SECRETS: tuple[Detector, ...] = (
    Detector(
        "private_key",
        re.compile(r"-----BEGIN (?:[A-Z]+ )?PRIVATE KEY-----[\s\S]*?(?:-----END (?:[A-Z]+ )?PRIVATE KEY-----|$)"),
        hint=_any_of("PRIVATE KEY"),
    ),
    Detector(
        "jwt",
        re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),
        hint=_any_of("eyJ"),
    ),
    Detector(
        "api_key",
        re.compile(
            r"\b(?:AKIA[0-9A-Z]{16}"  # AWS access key id
            r"|AIza[0-9A-Za-z_-]{35}"  # Google API key
            r"|gh[pousr]_[A-Za-z0-9]{36,255}"  # GitHub tokens
            r"|github_pat_[A-Za-z0-9_]{22,255}"
            r"|xox[abprs]-[A-Za-z0-9-]{10,255}"  # Slack
            r"|(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,255}"  # Stripe
            r"|sk-(?:proj-|ant-)?[A-Za-z0-9_-]{20,255}"  # OpenAI / Anthropic style
            r"|glpat-[A-Za-z0-9_-]{20,255}"  # GitLab
            r"|msk_[0-9a-f]{16}_[A-Za-z0-9_-]{20,255}"  # our own gateway keys
            r")"
        ),
        hint=_any_of(*_API_KEY_PREFIXES),
    ),
    Detector(
        "bearer_token",
        re.compile(r"(?i)\bbearer\s+([A-Za-z0-9._~+/-]{16,}=*)"),
        group=1,
        hint=_any_of("bearer", lower=True),
    ),
    Detector(
        "password",
        re.compile(
            r"(?i)(?:\b|(?<=[_-]))(?:password|passwd|pwd|pass|secret|api[_-]?key|access[_-]?key|auth[_-]?token|token|"
            r"client[_-]?secret)\b\s*[:=]\s*(\"[^\"\n]{1,256}\"|'[^'\n]{1,256}'|[^\s,;&\"']{1,256})"
        ),
        group=1,
        hint=lambda facts: (
            ("=" in facts.text or ":" in facts.text)
            and any(k in facts.lower for k in ("pass", "pwd", "secret", "key", "token"))
        ),
    ),
    Detector(
        "connection_secret",
        re.compile(r"\b[a-z][a-z0-9+.-]{1,20}://[^\s:/@]{1,128}:([^\s@/]{1,256})@"),
        group=1,
        hint=lambda facts: "://" in facts.text and "@" in facts.text,
    ),
    Detector(
        "card_number",
        re.compile(r"(?<![\d-])(?:\d[ -]?){12,18}\d(?![\d-])"),
        accept=card_ok,
        hint=_digits_at_least(13),
    ),
    Detector(
        "national_id",
        re.compile(r"\b(?!000|666|9\d\d)\d{3}-(?!00)\d{2}-(?!0000)\d{4}\b"),  # US SSN
        hint=_digits_at_least(9),
    ),
    Detector(
        "national_id",
        re.compile(r"\b[A-CEGHJ-PR-TW-Z][A-CEGHJ-NPR-TW-Z] ?\d{2} ?\d{2} ?\d{2} ?[A-D]\b"),  # UK NINO
        hint=_digits_at_least(6),
    ),
    Detector(
        "national_id",
        re.compile(r"(?<![\d-])\d[ -]\d{4}[ -]\d{5}[ -]\d{2}[ -]\d(?![\d-])"),  # Thai id, as written
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


def _detectors(policy: PrivacyPolicy) -> tuple[Detector, ...]:
    extra = ((_EMAIL,) if policy.redact_email else ()) + ((_PHONE,) if policy.redact_phone else ())
    return _SECRETS + extra


def redact(text: str, policy: PrivacyPolicy = DEFAULT_POLICY) -> tuple[str, Counter[str]]:
    """The text with every finding replaced by ``[REDACTED:<kind>]``, and what was found."""
    found: Counter[str] = Counter()
    if not text:
        return text, found
    facts = Facts(text)
    for detector in _detectors(policy):
        if not detector.hint(facts):
            continue

        def replace(match: re.Match[str], detector: Detector = detector) -> str:
            target = match.group(detector.group)
            if (
                target is None
                or target.startswith("[REDACTED:")  # already done: redacting is idempotent
                or (detector.accept is not None and not detector.accept(target))
            ):
                return match.group(0)
            found[detector.kind] += 1
            whole = match.group(0)
            start = match.start(detector.group) - match.start(0)
            return whole[:start] + PLACEHOLDER.format(detector.kind) + whole[start + len(target) :]

        replaced = detector.pattern.sub(replace, text)
        if replaced != text:
            text, facts = replaced, Facts(replaced)
    return text, found


def redact_mapping(
    values: Mapping[str, str], policy: PrivacyPolicy = DEFAULT_POLICY
) -> tuple[dict[str, str], Counter[str]]:
    """Redact every value of a string map (turn metadata)."""
    out: dict[str, str] = {}
    found: Counter[str] = Counter()
    for key, value in values.items():
        out[key], counts = redact(value, policy)
        found.update(counts)
    return out, found

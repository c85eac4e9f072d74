import pytest

from memstream.privacy import PrivacyPolicy, luhn_ok, redact, redact_mapping, thai_id_ok

ALL = PrivacyPolicy(redact_email=True, redact_phone=True)


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("card 4111 1111 1111 1111 please", "card_number"),
        ("amex 3782-822463-10005", "card_number"),
        ("ssn 123-45-6789", "national_id"),
        ("NI number AB 12 34 56 C", "national_id"),
        ("Thai id 1-1017-00230-70-8", "national_id"),
        ("aws AKIAIOSFODNN7EXAMPLE", "api_key"),
        ("google AIzaSyA1234567890abcdefghijklmnopqrstuv", "api_key"),
        ("gh ghp_16C7e42F292c6912E7710c838347Ae178B4a", "api_key"),
        ("stripe sk_live_4eC39HqLyjWDarjtT1zdp7dc", "api_key"),
        ("openai sk-proj-abcdefghijklmnopqrstuvwxyz123", "api_key"),
        ("Authorization: Bearer abcdef1234567890abcdef", "bearer_token"),
        (
            "jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
            "jwt",
        ),
        ("password=hunter2", "password"),
        ('client_secret: "a b c d"', "password"),
        (
            "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\n-----END OPENSSH PRIVATE KEY-----",
            "private_key",
        ),
        ("postgres://app:s3cr3t@db:5432/x", "connection_secret"),
        ("mail alice@example.com", "email"),
        ("call +1 415-555-0100", "phone"),
        ("call 081-234-5678", "phone"),
    ],
)
def test_each_kind_is_replaced_by_its_placeholder(text: str, kind: str) -> None:
    redacted, found = redact(text, ALL)
    assert f"[REDACTED:{kind}]" in redacted
    assert found[kind] >= 1


@pytest.mark.parametrize(
    "text",
    [
        "Python 3.11 and PostgreSQL 18, 30 second timeouts",
        "4111111111111112 fails the Luhn check",
        "epoch ms 1764489600000 and µs 1764489600123456",
        "version 2026-11-30, build 20261130, port 8080, ip 192.168.1.100",
        "the word password on its own is fine",
        "pytest --timeout=30 -k 'not slow'",
    ],
)
def test_ordinary_text_is_left_alone(text: str) -> None:
    assert redact(text, ALL) == (text, {})


def test_email_and_phone_only_when_the_policy_asks() -> None:
    text = "alice@example.com +66 81 234 5678"
    assert redact(text)[0] == text
    assert redact(text, PrivacyPolicy(redact_email=True))[0] == "[REDACTED:email] +66 81 234 5678"


def test_redacting_twice_changes_nothing() -> None:
    once, _ = redact("key AKIAIOSFODNN7EXAMPLE password=x card 4111111111111111", ALL)
    assert redact(once, ALL) == (once, {})


def test_key_value_pairs_keep_their_key() -> None:
    assert redact("db_password = 'p@ss w0rd' ok")[0] == "db_password = [REDACTED:password] ok"


def test_metadata_values_are_redacted() -> None:
    out, found = redact_mapping({"env": "TOKEN=abc123", "note": "fine"})
    assert out == {"env": "TOKEN=[REDACTED:password]", "note": "fine"}
    assert found == {"password": 1}


def test_checksums() -> None:
    assert luhn_ok("4111111111111111") and not luhn_ok("4111111111111112")
    assert thai_id_ok("1101700230708") and not thai_id_ok("1101700230709")

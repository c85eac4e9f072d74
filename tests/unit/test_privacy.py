import uuid
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

import pytest

from memstream.privacy import (
    PrivacyPolicy,
    TurnText,
    grown_past_limits,
    identifier_problems,
    luhn_ok,
    normalise,
    redact,
    redact_mapping,
    redact_turn,
    secret_in_identifiers,
    thai_id_ok,
)
from schemas.codec import turn_event_codec
from schemas.turns import MAX_METADATA_VALUE_CHARS, problems
from streams.decoding import decode_events
from streams.metrics import WorkerMetrics
from streams.retry import Backoff
from streams.stages.base import StageContext, redact_batch

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


def test_key_value_pairs_keep_their_key_and_quotes() -> None:
    # Quotes stay, so a JSON or YAML document stays one.
    assert redact("db_password = 'p@ss w0rd' ok")[0] == "db_password = '[REDACTED:password]' ok"


def test_metadata_values_are_redacted() -> None:
    out, found = redact_mapping({"env": "TOKEN=abc123", "note": "fine"})
    assert out == {"env": "TOKEN=[REDACTED:password]", "note": "fine"}
    assert found == {"password": 1}


def test_checksums() -> None:
    assert luhn_ok("4111111111111111") and not luhn_ok("4111111111111112")
    assert thai_id_ok("1101700230708") and not thai_id_ok("1101700230709")


# --- the security finding: each of these came back raw through search, context or buffer ---

GHP = "ghp_16C7e42F292c6912E7710c838347Ae178B4a"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # card numbers separated by dots, en dashes, NBSP, double spaces; full-width digits
        ("card 4111.1111.1111.1111 ok", "card [REDACTED:card_number] ok"),
        ("card 4111\u20131111\u20131111\u20131111 ok", "card [REDACTED:card_number] ok"),
        ("card 4111\u00a01111\u00a01111\u00a01111 ok", "card [REDACTED:card_number] ok"),
        ("card 4111  1111  1111  1111.", "card [REDACTED:card_number]."),
        (
            "card \uff14\uff11\uff11\uff11\uff11\uff11\uff11\uff11\uff11\uff11\uff11\uff11\uff11\uff11\uff11\uff11!",
            "card [REDACTED:card_number]!",
        ),
        # JSON-style keys
        ('{"password": "hunter2 two", "user": "bob"}', '{"password": "[REDACTED:password]", "user": "bob"}'),
        ('{"api_key": "abc123def456"}', '{"api_key": "[REDACTED:password]"}'),
        ("{'api_key': 'abc123def456'}", "{'api_key': '[REDACTED:password]'}"),
        ('{"client_secret":"s3cr3t"}', '{"client_secret":"[REDACTED:password]"}'),
        # URL credentials without a user name, or with an upper-case scheme
        ("redis://:pw@cache:6379/0", "redis://:[REDACTED:connection_secret]@cache:6379/0"),
        ("POSTGRES://u:pw@h/db", "POSTGRES://u:[REDACTED:connection_secret]@h/db"),
        # PGP private-key blocks
        (
            "key:\n-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlQOYBGZ\n=abcd\n-----END PGP PRIVATE KEY BLOCK-----\nend",
            "key:\n[REDACTED:private_key]\nend",
        ),
        # Authorization: Basic
        ("Authorization: Basic dXNlcjpwYXNzd29yZA==", "Authorization: Basic [REDACTED:basic_auth]"),
        # a token glued to a word
        (f"deploy_{GHP} now", "deploy_[REDACTED:api_key] now"),
        # an unsigned JWT (empty signature)
        ("t eyJhbGciOiJub25lIn0.eyJzdWIiOiIxMjM0NTY3ODkwIn0. ok", "t [REDACTED:jwt] ok"),
        # a passphrase after PASSWORD: loses every word, up to the end of the line
        ("PASSWORD: correct horse battery staple\nnext", "PASSWORD: [REDACTED:password]\nnext"),
    ],
)
def test_the_attackers_examples_are_redacted(text: str, expected: str) -> None:
    out, found = redact(text)
    assert out == expected
    assert found
    assert redact(out) == (out, {})


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("password=abc&x=1", "password=[REDACTED:password]&x=1"),  # still stops at the delimiter
        ("token=abc123;next", "token=[REDACTED:password];next"),
        ("password = my pass phrase\nok", "password = [REDACTED:password]\nok"),  # INI
        ("dbPassword: 'a b'", "dbPassword: '[REDACTED:password]'"),  # camelCase key
        ('\\"password\\": \\"hunter2\\"', '\\"password\\": \\"[REDACTED:password]\\"'),  # JSON inside JSON
        ('{"note": "x\\tpassword: a b\\nnext"}', '{"note": "x\\tpassword: [REDACTED:password]\\nnext"}'),
        ("pass: x y", "pass: [REDACTED:password] y"),  # only password-like keys take the whole line
    ],
)
def test_key_value_forms(text: str, expected: str) -> None:
    assert redact(text)[0] == expected


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("https://ghp_16C7e42F292c6912E7710c838347Ae178B4a@github.com/o/r", "api_key"),
        ("https://x-access-token:zqsecretvalue@github.com/o/r", "connection_secret"),
        ("-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n(truncated)", "private_key"),  # no END line
        ("PuTTY-User-Key-File-3: ssh-rsa\nPrivate-Lines: 1\nAAAAgQ\nPrivate-MAC: 00", "private_key"),
        ("Authorization: Digest username=x, response=y", "auth_header"),
        ("curl -H 'authorization: token zqabcdef123456'", "auth_header"),
        ("slack xoxb-123456789012-abcdefghij", "api_key"),
        ("hf hf_abcdefghijklmnopqrstuvwxyzABCDEFGH", "api_key"),
        ("cards 4111111111111111 5555555555554444", "card_number"),
        ("ref 12 4111 1111 1111 1111 ok", "card_number"),  # inside a longer run of digits
        ("jcb 3530 1113 3330 0000", "card_number"),
        ("card 4\u200b111 1111 1111 1111", "card_number"),  # a zero-width space inside
        ("card \u0e54\u0e51\u0e51\u0e51 1111 1111 1111", "card_number"),  # Thai digits
        ("key \uff21\uff2b\uff29\uff21IOSFODNN7EXAMPLE", "api_key"),  # full-width letters
        ("\u201cpassword\u201d: \u201chunter2\u201d", "password"),  # typographic quotes
        ("ssn 123\u201345\u20136789", "national_id"),
    ],
)
def test_more_forms(text: str, kind: str) -> None:
    out, found = redact(text)
    assert found[kind] >= 1, out
    assert redact(out) == (out, {})


@pytest.mark.parametrize(
    "text",
    [
        "this is a basic understanding of things",
        "pi is 0.4111111111111111, the float",
        "task-abcdefghijklmnopqrstuvwxyz is a branch name",
        "bypass: true; compass: north",
        "the password field must not be empty",
        "prices 4096 8192 1024 2048",
        "see https://example.com/docs@v2 and ssh://deploy@host/o/r",
        "\u0e17\u0e33\u0e07\u0e32\u0e19 \u0e2a\u0e33\u0e40\u0e23\u0e47\u0e08 \u2014 caf\u00e9 na\u00efve \ufb01le",
    ],
)
def test_more_ordinary_text_is_left_alone(text: str) -> None:
    assert redact(text, ALL) == (text, {})


def test_the_secret_is_replaced_where_it_is_written() -> None:
    """Matching runs on a normalised view; the replacement is made in the original text,
    whose other characters stay exactly as they were."""
    text = "\uff43\uff41\uff52\uff44\u00a0\uff14\uff11\uff11\uff11\u00a0\uff11\uff11\uff11\uff11\u00a0\uff11\uff11\uff11\uff11\u00a0\uff11\uff11\uff11\uff11 \ufb01n"
    assert redact(text)[0] == "\uff43\uff41\uff52\uff44\u00a0[REDACTED:card_number] \ufb01n"
    # a ligature (one character that normalises to two) before the secret keeps offsets right
    assert redact("\ufb01\ufb01 AKIAIOSFODNN7EXAMPLE \ufb01")[0] == "\ufb01\ufb01 [REDACTED:api_key] \ufb01"
    # zero-width characters inside a secret go with it
    assert redact("a 4111\u200b1111\u200b1111\u200b1111 b")[0] == "a [REDACTED:card_number] b"


def test_normalise_keeps_a_map_back_to_the_original() -> None:
    view, origin = normalise("\ufb01x\u200by")
    assert view == "fixy"
    assert origin == [0, 0, 1, 3]
    assert normalise("plain ascii") == ("plain ascii", None)
    assert normalise("\uff11\u00a0\u2013") == ("1 -", None)  # one for one: no map needed


def test_every_free_text_field_of_a_turn_is_filtered() -> None:
    text, found = redact_turn(
        "see POSTGRES://u:pw@h/db",
        tool_name=f"deploy_{GHP}",
        tags=["prod", "card 4111.1111.1111.1111"],
        metadata={"AKIAIOSFODNN7EXAMPLE": "x", "env": "TOKEN=abc", "steps": '["ok", "PASSWORD: a b c"]'},
    )
    assert text.content == "see POSTGRES://u:[REDACTED:connection_secret]@h/db"
    assert text.tool_name == "deploy_[REDACTED:api_key]"
    assert text.tags == ("prod", "card [REDACTED:card_number]")
    assert text.metadata == {
        "[REDACTED:api_key]": "x",
        "env": "TOKEN=[REDACTED:password]",
        "steps": '["ok","PASSWORD: [REDACTED:password]"]',  # still a JSON list
    }
    assert found == {"connection_secret": 1, "api_key": 2, "card_number": 1, "password": 2}


def test_nothing_is_cut_to_fit_and_what_grew_past_a_limit_is_named() -> None:
    """Placeholders are longer than short secrets: the filter never truncates (the tail of a
    turn was once lost), and ``grown_past_limits`` names each field that no longer fits."""
    tag = "x" * 55 + " pwd=a"  # 61 characters; with the placeholder 79
    content = "STARTMARKER\n" + "pwd=a\n" * 5000 + "ENDMARKER the deploy key rotation is on friday"
    assert len(content) == 30_058
    pairs = MAX_METADATA_VALUE_CHARS // 6  # a value at its limit as sent, four times as long redacted
    before = TurnText(content, "pwd=a", (tag, "ok"), {"k": "v", "note": "pwd=a " * pairs})
    after, found = redact_turn(before.content, tool_name=before.tool_name, tags=before.tags, metadata=before.metadata)
    assert sum(found.values()) == 5000 + 1 + 1 + pairs
    assert after.content.startswith("STARTMARKER") and after.content.endswith("rotation is on friday")
    assert after.tags[0] == "x" * 55 + " pwd=[REDACTED:password]" and after.tags[1] == "ok"
    assert after.metadata["note"].count("[REDACTED:") == pairs
    grown = grown_past_limits(before, after, max_content_chars=32_000)
    assert [where for where, _ in grown] == [("content",), ("tags", "0"), ("metadata", "1", "value")]
    for _, message in grown:
        assert "redaction made it longer" in message and "refused rather than truncated" in message
    assert "content is 120058 characters once redacted (30058 as sent)" in grown[0][1]
    # The limits of the turn contract, from the one place they are defined.
    assert problems(_record(content=after.content), max_content_chars=32_000) != []


def test_two_metadata_keys_redacted_alike_keep_both_values() -> None:
    out, found = redact_mapping({"AKIAIOSFODNN7EXAMPLE": "a", "AKIAIOSFODNN7EXAMPLF": "b", "[REDACTED:api_key]#2": "c"})
    assert list(out.values()) == ["a", "b", "c"] and len(out) == 3
    assert found == {"api_key": 2}


@pytest.mark.parametrize(
    ("record", "refused"),
    [
        ({"user_id": GHP}, ["user_id"]),
        ({"session_id": "s:password:hunter2"}, ["session_id"]),
        ({"project_id": "redis://:pw@host"}, ["project_id"]),
        ({"agent_id": "4111-1111-1111-1111"}, ["agent_id"]),
        ({"tenant_id": "AKIAIOSFODNN7EXAMPLE", "user_id": "alice"}, ["tenant_id"]),
        ({"user_id": "alice@example.com", "session_id": "3ea4f062-1234-4c5d-9e8f-0123456789ab"}, []),
        ({"user_id": "user-1", "project_id": None, "session_id": "2026-11-30T10:00"}, []),
    ],
)
def test_identifiers_carrying_a_secret_are_named(record: dict[str, Any], refused: list[str]) -> None:
    assert secret_in_identifiers(record) == refused
    problems = identifier_problems(record)
    assert [field for field, _ in problems] == refused
    for field, message in problems:
        assert field in message and record[field] not in message  # names the field, never the value


def _event(record: dict[str, Any]) -> Any:
    message = SimpleNamespace(
        value=turn_event_codec().encode(record), topic="memstream.turns.v1", partition=0, offset=7, timestamp=None
    )
    return SimpleNamespace(message=message)


def _record(**extra: Any) -> dict[str, Any]:
    record: dict[str, Any] = {
        "event_id": str(uuid.uuid4()), "tenant_id": "t1", "agent_id": "agent-1", "user_id": "user-1",
        "project_id": None, "session_id": "s1", "role": "user", "content": "hello",
        "event_time": datetime.now(UTC), "tool_name": None, "tool_status": None, "tags": [], "metadata": {},
    }  # fmt: skip
    record.update(extra)
    return record


def test_the_worker_dead_letters_a_record_whose_identifier_carries_a_secret() -> None:
    good, bad = decode_events(
        [_event(_record()), _event(_record(user_id=GHP))], codec=turn_event_codec(), max_content_chars=1000
    )
    assert len(good) == 1 and len(bad) == 1
    assert "user_id carries a secret (api_key)" in bad[0].reason and GHP not in bad[0].reason


class _Policies:
    async def get(self, tenant: str) -> PrivacyPolicy:
        return PrivacyPolicy()


async def test_the_worker_filters_every_free_text_field() -> None:
    ctx = StageContext(
        codec=turn_event_codec(), tokens=None,  # type: ignore[arg-type]  # redact_batch counts no tokens
        policies=_Policies(),  # type: ignore[arg-type]
        metrics=WorkerMetrics(), dead_letters=None,  # type: ignore[arg-type]
        backoff=Backoff(initial_s=0.001, max_s=0.001), max_events=10, within_s=0.01, max_content_chars=1000,
    )  # fmt: skip
    record = _record(
        content="card 4111\u00a01111\u00a01111\u00a01111",
        tool_name=f"deploy_{GHP}", tags=["redis://:pw@h"], metadata={"AKIAIOSFODNN7EXAMPLE": "password: a b"},
    )  # fmt: skip
    good, _ = decode_events([_event(record)], codec=turn_event_codec(), max_content_chars=1000)
    [item] = await redact_batch(good, ctx)
    turn = item.turn
    assert turn.content == "card [REDACTED:card_number]"
    assert turn.tool_name == "deploy_[REDACTED:api_key]"
    assert turn.tags == ("redis://:[REDACTED:connection_secret]@h",)
    assert dict(turn.metadata) == {"[REDACTED:api_key]": "password: [REDACTED:password]"}


def test_a_placeholder_is_never_cut_into() -> None:
    # The token is found first; the URL detector must not then read "[REDACTED" as a user.
    out = redact(f"https://{GHP}@github.com/o/r")[0]
    assert out == "https://[REDACTED:api_key]@github.com/o/r"


# --- the second red team: gaps, identifiers, truncation ---------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # tabs and line breaks inside numbers
        ("card 4111\t1111\t1111\t1111 ok", "card [REDACTED:card_number] ok"),
        ("card 4111\n1111\n1111\n1111 ok", "card [REDACTED:card_number] ok"),
        ('{"n": "4111\\t1111\\t1111\\t1111"}', '{"n": "[REDACTED:card_number]"}'),
        ("ssn 536\t22\t1234 ok", "ssn [REDACTED:national_id] ok"),
        ("ssn 536 22 1234 ok", "ssn [REDACTED:national_id] ok"),
        ("ni AB-12-34-56-C ok", "ni [REDACTED:national_id] ok"),
        ("ni ab123456c ok", "ni [REDACTED:national_id] ok"),
        ("ni AB\t12\t34\t56\tC", "ni [REDACTED:national_id]"),
        ("thai 1101700230708 ok", "thai [REDACTED:national_id] ok"),
        # key names glued to a secret word
        ("PGPASSWORD=hunter2", "PGPASSWORD=[REDACTED:password]"),
        ("mypassword=hunter2", "mypassword=[REDACTED:password]"),
        ("x_api_key: abc", "x_api_key: [REDACTED:password]"),
        ('{"SessionToken":"abc"}', '{"SessionToken":"[REDACTED:password]"}'),
        ("authToken=abc; credentials=def", "authToken=[REDACTED:password]; credentials=[REDACTED:password]"),
        # command lines, in any text
        ("run mysql -u root -pX now", "run mysql -u root -p[REDACTED:cli_password] now"),
        ("sshpass -p X ssh h", "sshpass -p [REDACTED:cli_password] ssh h"),
        ("curl -u admin:X https://h", "curl -u admin:[REDACTED:cli_password] https://h"),
        ("--token X --api-key Y", "--token [REDACTED:cli_secret] --api-key [REDACTED:cli_secret]"),
        ("PGPASSWORD=X psql", "PGPASSWORD=[REDACTED:secret_variable] psql"),
        ("Cookie: session=X; theme=dark", "Cookie: [REDACTED:auth_header]"),
        ("docker login -u a -p X reg", "docker login -u a -p [REDACTED:cli_password] reg"),
        ("redis-cli -a X ping", "redis-cli -a [REDACTED:cli_password] ping"),
        ("mongosh -p X", "mongosh -p [REDACTED:cli_password]"),
        ("sqlcmd -U sa -P X", "sqlcmd -U sa -P [REDACTED:cli_password]"),
        ("htpasswd -b file user X", "htpasswd -b file user [REDACTED:cli_password]"),
        ("aws configure set aws_secret_access_key X", "aws configure set aws_secret_access_key [REDACTED:cli_secret]"),
        ("mytool \uff0d\uff0dpassword X", "mytool \uff0d\uff0dpassword [REDACTED:cli_secret]"),
        # no length cap
        ("password=" + "a" * 700 + " ok", "password=[REDACTED:password] ok"),
        ("postgres://u:" + "p" * 300 + "@db/x", "postgres://u:[REDACTED:connection_secret]@db/x"),
        ("postgres://" + "u" * 300 + ":pw@db/x", "postgres://" + "u" * 300 + ":[REDACTED:connection_secret]@db/x"),
        ('{"SessionToken":"' + "Zm9v" * 200 + '"}', '{"SessionToken":"[REDACTED:password]"}'),
        # URL passwords holding a slash
        ("postgres://app:Zm9v+YmFy/YmF6==@db", "postgres://app:[REDACTED:connection_secret]@db"),
        ("postgres://u:Hunt/er2Secret@host", "postgres://u:[REDACTED:connection_secret]@host"),
        ("postgres://u:12345@db/x", "postgres://u:[REDACTED:connection_secret]@db/x"),
    ],
)
def test_the_second_red_teams_examples_are_redacted(text: str, expected: str) -> None:
    out, found = redact(text)
    assert out == expected
    assert found
    assert redact(out) == (out, {})


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "mail \u03b4\u03bf\u03ba\u03b9\u03bc\u03ae@\u03c0\u03b1\u03c1\u03ac\u03b4\u03b5\u03b9\u03b3\u03bc\u03b1.\u03b4\u03bf\u03ba\u03b9\u03bc\u03ae ok",
            "mail [REDACTED:email] ok",
        ),
        ('mail "john doe"@example.com ok', "mail [REDACTED:email] ok"),
        ("mail bob@localhost ok", "mail [REDACTED:email] ok"),
        ("call 4155552671 ok", "call [REDACTED:phone] ok"),
        ("call 0044 20 7946 0958 ok", "call [REDACTED:phone] ok"),
        ("appel 06 12 34 56 78 ok", "appel [REDACTED:phone] ok"),
        ("call 415\t555\t2671 ok", "call [REDACTED:phone] ok"),
    ],
)
def test_personal_data_forms_under_the_policy(text: str, expected: str) -> None:
    assert redact(text, ALL)[0] == expected
    assert redact(text) == (text, {})  # only when the policy asks


@pytest.mark.parametrize(
    "text",
    [
        "max_tokens=4096, prompt_tokens: 120, token_type: bearer",
        "author: Jane Doe; authority: none",
        "docker run -p 8080:80 nginx && curl -I https://x",
        "password_file=/run/secrets/db --password-stdin",
        "created_at: 1764489600123",
        "npm install react@next lodash@latest",
        "ssh://deploy@host/o/r and https://example.com/docs@v2",
        "https://host:8080/path@tag",
        "git push -u origin main; mkdir -p /tmp/x",
    ],
)
def test_what_looks_like_a_secret_but_is_not_is_left_alone(text: str) -> None:
    assert redact(text, ALL) == (text, {})


@pytest.mark.parametrize(
    "command",
    ["mysql -u root -pX", "sshpass -p X ssh h", "curl -u admin:X u", "gh auth login --token X", "PGPASSWORD=X psql",
     "curl -H 'Cookie: s=X' u", "docker login -u a -p X r", "redis-cli -a X", "htpasswd -b f u X",
     "aws configure set aws_secret_access_key X", "mytool \uff0d\uff0dpassword X"],
)  # fmt: skip
def test_the_audit_log_and_the_filter_agree_on_command_lines(command: str) -> None:
    """One set of command-line detectors: what the audit log keeps of a command is what the
    filter makes of the same text in a turn or a tool event."""
    from agents_gateway.permissions import redact_command

    assert redact_command(command) == redact(command)
    assert "X" not in redact(command)[0].replace("[REDACTED:", "")


@pytest.mark.parametrize(
    ("record", "refused"),
    [
        ({"session_id": GHP}, ["session_id"]),
        ({"session_id": "4111111111111111"}, ["session_id"]),
        ({"tool": "sk_live_4eC39HqLyjWDarjtT1zdp7dc"}, ["tool"]),
        ({"project_id": "AKIAIOSFODNN7EXAMPLE"}, ["project_id"]),
        ({"session_id": "xoxb-123456789012-abcdefghij", "tool": "glpat-abcdefghij1234567890"}, ["session_id", "tool"]),
        ({"session_id": "s1", "project_id": "p1", "tool": "shell"}, []),
    ],
)
def test_every_identifier_of_every_endpoint_follows_one_rule(record: dict[str, Any], refused: list[str]) -> None:
    found = identifier_problems(record, ALL, fields=tuple(record))
    assert [field for field, _ in found] == refused
    for field, message in found:
        assert field in message and record[field] not in message


@pytest.mark.parametrize(
    ("record", "policy", "refused"),
    [
        ({"user_id": "alice@example.com"}, PrivacyPolicy(redact_email=True), ["user_id"]),
        ({"user_id": "crm:alice@example.com"}, PrivacyPolicy(redact_email=True), ["user_id"]),
        ({"user_id": "alice@example.com"}, PrivacyPolicy(redact_phone=True), []),
        ({"session_id": "4155552671"}, PrivacyPolicy(redact_phone=True), ["session_id"]),
        ({"session_id": "u4155552671-a"}, PrivacyPolicy(redact_phone=True), ["session_id"]),
        ({"agent_id": "tel:+44-20-7946-0958"}, PrivacyPolicy(redact_phone=True), ["agent_id"]),
        ({"project_id": "bob@localhost"}, ALL, ["project_id"]),
        ({"session_id": "2026-11-30T10:00", "user_id": "user-1"}, ALL, []),
        ({"session_id": "3ea4f062-1234-4c5d-9e8f-012345678901", "agent_id": "a1b2c3d4e5f60718293a"}, ALL, []),
        ({"session_id": "20261130T100000Z", "project_id": "0123456789abcdef0123"}, ALL, []),
        ({"session_id": "4155552671"}, PrivacyPolicy(), []),
    ],
)
def test_identifiers_holding_personal_data_are_refused_under_the_policy(
    record: dict[str, Any], policy: PrivacyPolicy, refused: list[str]
) -> None:
    found = identifier_problems(record, policy)
    assert [field for field, _ in found] == refused
    for field, message in found:
        assert "personal data" in message and record[field] not in message


class _DeadLetters:
    def __init__(self) -> None:
        self.sent: list[tuple[Any, str, str]] = []

    async def send(self, event: Any, *, reason: str, error: str, stage: str) -> None:
        self.sent.append((event, reason, stage))


class _EmailPolicy:
    async def get(self, tenant: str) -> PrivacyPolicy:
        return PrivacyPolicy(redact_email=True)


async def test_the_worker_dead_letters_what_redaction_would_make_too_long_and_never_truncates() -> None:
    """Agents producing to Kafka directly: a record whose redacted form breaks the limits (or
    whose identifier holds personal data the policy redacts) goes to the dead-letter topic
    with the reason; the others are written, whole."""
    dead = _DeadLetters()
    ctx = StageContext(
        codec=turn_event_codec(), tokens=None,  # type: ignore[arg-type]
        policies=_EmailPolicy(),  # type: ignore[arg-type]
        metrics=WorkerMetrics(), dead_letters=dead,  # type: ignore[arg-type]
        backoff=Backoff(initial_s=0.001, max_s=0.001), max_events=10, within_s=0.01, max_content_chars=32_000,
    )  # fmt: skip
    long = "STARTMARKER\n" + "pwd=a\n" * 5000 + "ENDMARKER the deploy key rotation is on friday"
    records = [
        _record(content=long),
        _record(content="fine, password=hunter2", tags=["x" * 55 + " pwd=a"]),
        _record(content="hello", user_id="alice@example.com"),
        _record(content="kept: password=hunter2 " + "y" * 31_000),
    ]
    good, bad = decode_events([_event(r) for r in records], codec=turn_event_codec(), max_content_chars=32_000)
    assert not bad
    kept = await redact_batch(good, ctx)
    assert [k.turn.content for k in kept] == ["kept: password=[REDACTED:password] " + "y" * 31_000]
    reasons = [reason for _, reason, _ in dead.sent]
    assert len(reasons) == 3 and all(stage == "redact" for _, _, stage in dead.sent)
    assert "content is 120058 characters once redacted" in reasons[0] and "hunter2" not in reasons[1]
    assert "tag 0 is" in reasons[1]
    assert "user_id is or contains personal data (email)" in reasons[2] and "alice" not in reasons[2]


# --- the third red team: separators, placeholders, the audit's policy --------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # SQL password clauses
        ("CREATE USER app WITH PASSWORD 'Hunter2Secret!';", "CREATE USER app WITH PASSWORD '[REDACTED:password]';"),
        ("ALTER ROLE app PASSWORD 'Hunter2Secret!'", "ALTER ROLE app PASSWORD '[REDACTED:password]'"),
        (
            "SET PASSWORD FOR 'bob'@'localhost' = 'Hunter2Secret!';",
            "SET PASSWORD FOR 'bob'@'localhost' = '[REDACTED:password]';",
        ),
        ("SET PASSWORD FOR bob = PASSWORD('Hunter2Secret!');", "SET PASSWORD FOR bob = PASSWORD('[REDACTED:password]');"),
        ("CREATE USER bob IDENTIFIED BY 'Hunter2Secret!';", "CREATE USER bob IDENTIFIED BY '[REDACTED:password]';"),
        ("ALTER USER bob IDENTIFIED BY tiger;", "ALTER USER bob IDENTIFIED BY [REDACTED:password];"),
        (
            "CREATE USER 'a'@'%' IDENTIFIED WITH caching_sha2_password BY 'Hunter2Secret!';",
            "CREATE USER 'a'@'%' IDENTIFIED WITH caching_sha2_password BY '[REDACTED:password]';",
        ),
        # XML elements and attributes named for a secret
        ("<password>Hunter2Secret!</password>", "<password>[REDACTED:password]</password>"),
        ('<db:secret encrypted="no">Hunter2Secret!</db:secret>', '<db:secret encrypted="no">[REDACTED:password]</db:secret>'),
        ("<password><![CDATA[Hunter2 Secret]]></password>", "<password><![CDATA[[REDACTED:password]]]></password>"),
        ('<add key="ApiSecret" value="Hunter2Secret!"/>', '<add key="ApiSecret" value="[REDACTED:password]"/>'),
        ('<entry key="db.password">Hunter2Secret!</entry>', '<entry key="db.password">[REDACTED:password]</entry>'),
        (
            "<property><name>db.password</name><value>Hunter2Secret!</value></property>",
            "<property><name>db.password</name><value>[REDACTED:password]</value></property>",
        ),
        # name/value pairs, YAML blocks, blank-separated names
        ("- name: DB_PASSWORD\n  value: Hunter2Secret!", "- name: DB_PASSWORD\n  value: [REDACTED:password]"),
        ('{"name": "API_TOKEN", "value": "Hunter2Secret!"}', '{"name": "API_TOKEN", "value": "[REDACTED:password]"}'),
        ("password: |\n    Hunter2Secret!\n    second line\nnext: 1", "password: |\n    [REDACTED:password]\nnext: 1"),
        ("db:\n  password: >-\n    Hunter2Secret!\n  user: app", "db:\n  password: >-\n    [REDACTED:password]\n  user: app"),
        ("ENV MYSQL_ROOT_PASSWORD Hunter2Secret!", "ENV MYSQL_ROOT_PASSWORD [REDACTED:password]"),
        ("MYSQL_ROOT_PASSWORD changeme", "MYSQL_ROOT_PASSWORD [REDACTED:password]"),
        ("spring.datasource.password Hunter2", "spring.datasource.password [REDACTED:password]"),
        ("aws_secret_access_key wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "aws_secret_access_key [REDACTED:password]"),
        ("**Password:** Hunter2 horse", "**Password:** [REDACTED:password]"),
        ("password: `Hunter2 horse`", "password: `[REDACTED:password]`"),
        # .netrc
        (
            "machine api.example.com login bob password Hunter2Secret!",
            "machine api.example.com login bob password [REDACTED:password]",
        ),
        ("machine h\n  login bob\n  password hunter", "machine h\n  login bob\n  password [REDACTED:password]"),
        # connection strings and *_KEY names
        (
            "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=Zm9vYmFyYmF6cXV4Zm9vYmFy4==;EndpointSuffix=x",
            "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=[REDACTED:password];EndpointSuffix=x",
        ),
        ("SharedAccessKeyName=Root;SharedAccessKey=Zm9vYmFyYmF6cXV4Zm9vYmFy=", "SharedAccessKeyName=Root;SharedAccessKey=[REDACTED:password]"),
        ("ENCRYPTION_KEY=a3f1c9d2e4b5a6c7d8e9f0a1b2c3d4e5", "ENCRYPTION_KEY=[REDACTED:password]"),
        ("SIGNING_KEY=a3f1c9d2e4b5a6c7d8e9f0a1b2c3d4e5", "SIGNING_KEY=[REDACTED:password]"),
        ("RAILS_MASTER_KEY=a3f1c9d2e4b5a6c7d8e9f0a1b2c3d4e5", "RAILS_MASTER_KEY=[REDACTED:password]"),
        # .pgpass
        ("db:5432:prod:app:Hunter2Secret!", "db:5432:prod:app:[REDACTED:password]"),
        ("*:*:*:postgres:Hunter2", "*:*:*:postgres:[REDACTED:password]"),
        # secret-bearing URLs
        (
            "https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX",
            "https://hooks.slack.com/services/[REDACTED:connection_secret]",
        ),
        (
            "https://discord.com/api/webhooks/123456789012345678/abcdefghijklmnopqrstuvwxyz0123456789",
            "https://discord.com/api/webhooks/[REDACTED:connection_secret]",
        ),
        ("https://x.example.com/cb?token=abcdef123456&x=1", "https://x.example.com/cb?token=[REDACTED:password]&x=1"),
        ("https://x.blob.core.windows.net/c?sv=2020&sig=abcdEFGH1234%2Bxyz%3D", "https://x.blob.core.windows.net/c?sv=2020&sig=[REDACTED:password]"),
        ("https://maps.example.com/api?key=AbCdEf0123456789xyz&q=1", "https://maps.example.com/api?key=[REDACTED:password]&q=1"),
        # Vault
        ("vault hvs.CAESIJlWZ3V4ZXhhbXBsZXRva2VuZXhhbXBsZQ ok", "vault [REDACTED:api_key] ok"),
        ("vault s.Ab3dEfGhIjKlMnOpQrStUvWx ok", "vault [REDACTED:api_key] ok"),
        # numbers with other separators
        ("ssn 536.22.1234 ok", "ssn [REDACTED:national_id] ok"),
        ("ssn 536/22/1234 ok", "ssn [REDACTED:national_id] ok"),
        ("ssn 536-22 1234 ok", "ssn [REDACTED:national_id] ok"),
        ("card 4111_1111_1111_1111 ok", "card [REDACTED:card_number] ok"),
        ("card 4111/1111/1111/1111 ok", "card [REDACTED:card_number] ok"),
        ("card 4111+1111+1111+1111 ok", "card [REDACTED:card_number] ok"),
        ("card 4111:1111:1111:1111 ok", "card [REDACTED:card_number] ok"),
        ("card 4111|1111|1111|1111 ok", "card [REDACTED:card_number] ok"),
        ("card 4111   1111   1111   1111 ok", "card [REDACTED:card_number] ok"),
        # a value that starts with a placeholder is a value like any other
        ("password=[REDACTED:foo]Hunter2Secret", "password=[REDACTED:password]"),
        ("mysql -p[REDACTED:cli_password]Hunter2", "mysql -p[REDACTED:cli_password]"),
        ("PGPASSWORD=[REDACTED:x]Hunter2 psql", "PGPASSWORD=[REDACTED:secret_variable] psql"),
        ("password: [REDACTED:password] correct horse battery staple", "password: [REDACTED:password]"),
        ("https://[REDACTED:x]:Hunter2@host/x", "https://[REDACTED:connection_secret]@host/x"),
        # more of each class: SQL literals, escaped closing tags, YAML anchors, other separators
        ("ALTER USER app WITH PASSWORD E'Hunter2Secret!'", "ALTER USER app WITH PASSWORD E'[REDACTED:password]'"),
        ("CREATE ROLE app PASSWORD $pw$Hunter2Secret!$pw$", "CREATE ROLE app PASSWORD $pw$[REDACTED:password]$pw$"),
        ("SELECT PASSWORD('Hunter2Secret!');", "SELECT PASSWORD('[REDACTED:password]');"),
        ('{"cfg": "<password>Hunter2Secret!<\\/password>"}', '{"cfg": "<password>[REDACTED:password]<\\/password>"}'),
        ("password: &pw Hunter2Secret!", "password: &pw [REDACTED:password]"),
        ("| password | Hunter2Secret! |", "| password | [REDACTED:password] |"),
        ("password -> Hunter2Secret!", "password -> [REDACTED:password]"),
        ("card 4111-1111_1111-1111 ok", "card [REDACTED:card_number] ok"),
        ("APP_KEY=base64:Zm9vYmFyYmF6cXV4Zm9vYmFyYmF6cXV4", "APP_KEY=[REDACTED:password]"),
        ("X-Goog-Signature=0a1b2c3d4e5f60718293a4b5c6d7e8f9", "X-Goog-Signature=[REDACTED:password]"),
    ],
)  # fmt: skip
def test_the_third_red_teams_examples_are_redacted(text: str, expected: str) -> None:
    out, found = redact(text)
    assert out == expected
    assert found
    assert redact(out) == (out, {})
    assert redact(out, ALL) == (out, {})


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("write to alice%40example.com ok", "write to [REDACTED:email] ok"),
        ("write to alice%2Bx%40example.com ok", "write to [REDACTED:email] ok"),
        ("write to bob@[192.168.1.1] ok", "write to [REDACTED:email] ok"),
        ("write to bob&#64;example.com ok", "write to [REDACTED:email] ok"),
        ("write to alice%2540example.com ok", "write to [REDACTED:email] ok"),
        ("call 415/555/2671 ok", "call [REDACTED:phone] ok"),
    ],
)
def test_the_third_red_teams_personal_data_under_the_policy(text: str, expected: str) -> None:
    assert redact(text, ALL)[0] == expected
    assert redact(text) == (text, {})


@pytest.mark.parametrize(
    "text",
    [
        "password=[REDACTED:x]",
        "password: [REDACTED:password] [REDACTED:api_key]",
        '{"token": "[REDACTED:password]", "ok": true}',
        '["ok","PASSWORD: [REDACTED:password]"]',
        "mysql -p[REDACTED:cli_password] shop",
        "https://[REDACTED:api_key]@github.com/o/r",
    ],
)
def test_what_is_placeholders_only_is_left_alone(text: str) -> None:
    """Idempotence: a value that is exactly placeholders (and separators) stays as it is."""
    assert redact(text, ALL) == (text, {})


@pytest.mark.parametrize(
    "text",
    [
        "the issue was identified by the team",
        "the password field must not be empty; password reset is required",
        "max token 128000, token 4096, OAuth 2.0 tokens",
        "password VARCHAR(255) NOT NULL",
        "must pass (PatternError says why not)",
        "mysql --password --user=root",
        "primary_key=user_id_created_at_2024 sort_key: created_at_desc_2024 partition_key=tenant_id",
        "cache_key=user:1:profile:settings public_key=AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoq",
        "monkey=banana123456789012345 signature: John Doe Signature=abc",
        "ENCRYPTION_KEY=changeme SIGNING_KEY=/run/secrets/signing.pem",
        "fe80:1111:2222:3333:4444:5555:6666:7777 at 12:30:45 on 2024-01-15",
        "prices 536, 22, 1234 today",
        "| 10,000 | /v1/search | 62 / 81 / 113 | 693 / 900 / 973 (22.9) |",
        "see https://github.com/o/r/settings/hooks/new",
        "replace <token> with your token; <password/>",
        "ENV PATH /usr/bin; ENV PASSWORD_FILE /run/pw",
        "Set the password for the account",
    ],
)
def test_what_the_new_forms_look_like_but_is_not_a_secret_is_left_alone(text: str) -> None:
    assert redact(text, ALL) == (text, {})


@pytest.mark.parametrize(
    ("record", "policy", "refused"),
    [
        ({"tool": "bash-judy@example.com"}, PrivacyPolicy(redact_email=True), ["tool"]),
        ({"tool": "tool-kim@example.com"}, ALL, ["tool"]),
        ({"tool": "tool-4155552671"}, PrivacyPolicy(redact_phone=True), ["tool"]),
        ({"tool": "tool-leo%40example.com"}, PrivacyPolicy(redact_email=True), ["tool"]),
        ({"session_id": "s-alice%40example.com"}, PrivacyPolicy(redact_email=True), ["session_id"]),
        ({"tool": "bash-judy@example.com"}, PrivacyPolicy(), []),
        ({"tool": "shell", "session_id": "s1"}, ALL, []),
        ({"tool": "hvs.CAESIJlWZ3V4ZXhhbXBsZXRva2VuZXhhbXBsZQ"}, PrivacyPolicy(), ["tool"]),
    ],
)
def test_a_permission_requests_tool_is_refused_like_any_identifier(
    record: dict[str, Any], policy: PrivacyPolicy, refused: list[str]
) -> None:
    """The tool of evaluate, allow-once and rules follows the identifier rule: a secret always,
    an e-mail address or a phone number when the tenant's policy redacts them."""
    found = identifier_problems(record, policy, fields=tuple(record))
    assert [field for field, _ in found] == refused
    for _, message in found:
        assert all(value not in message for value in record.values())


_AUDITED = (
    "curl -u frank@example.com:pw https://x; echo grace@example.com 415-555-2671;"
    " psql -c \"ALTER ROLE app PASSWORD 'Hunter2Secret!'\""
)


def test_the_audit_follows_the_tenants_policy() -> None:
    from agents_gateway.permissions import redact_command, rule_audit_detail

    shown, found = redact_command(_AUDITED, ALL)
    assert shown == (
        "curl -u [REDACTED:email]:[REDACTED:cli_password] https://x; echo [REDACTED:email] [REDACTED:phone];"
        " psql -c \"ALTER ROLE app PASSWORD '[REDACTED:password]'\""
    )
    assert found == {"email": 2, "phone": 1, "cli_password": 1, "password": 1}
    assert redact_command(_AUDITED, ALL) == redact(_AUDITED, ALL)  # the same filter as turns
    assert "frank@example.com" in redact_command(_AUDITED)[0]  # personal data only under the policy
    detail, counts = rule_audit_detail(
        project_id=None, tool="shell", effect="BLOCK", position=0,
        pattern=r"^psql .*PASSWORD 'Hunter2Secret\!'|ivan@example\.com",
        description="block ivan@example.com, token ghp_16C7e42F292c6912E7710c838347Ae178B4a PASSWORD 'Hunter2Secret!'",
        policy=ALL,
    )  # fmt: skip
    assert detail["pattern"] == r"^psql .*PASSWORD '[REDACTED:password]'|[REDACTED:email]\.com"
    # Escapes that hide a secret from the filter are read as what they match.
    escaped, _ = rule_audit_detail(
        project_id=None, tool="shell", effect="BLOCK", position=0, description="",
        pattern=r"curl\s+-u\s+frank\@example\.com:Hunter2\!", policy=ALL,
    )  # fmt: skip
    assert escaped["pattern"] == "curl -u [REDACTED:email]:[REDACTED:cli_password]"
    assert detail["description"] == ("block [REDACTED:email], token [REDACTED:api_key] PASSWORD '[REDACTED:password]'")
    assert counts == {"email": 2, "password": 2, "api_key": 1}


# --- issue 45, findings 5 and 9: secrets that come in pairs or layouts ---------------------------

AWS_ID = "AKIAIOSFODNN7EXAMPLE"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
#: base64 of ``aws_secret_access_key=wJalr…`` (the red team's wrapping).
AWS_WRAPPED = "YXdzX3NlY3JldF9hY2Nlc3Nfa2V5PXdKYWxyWFV0bkZFTUkvSzdNREVORy9iUHhSZmlDWUVYQU1QTEVLRVk="


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # finding 5: the secret on the line after its key id, and in credentials.csv
        (f"{AWS_ID}\n{AWS_SECRET}", "[REDACTED:api_key]\n[REDACTED:aws_secret_key]"),
        (
            f"User name,Access key ID,Secret access key\nalice,{AWS_ID},{AWS_SECRET}",
            "User name,Access key ID,Secret access key\nalice,[REDACTED:api_key],[REDACTED:aws_secret_key]",
        ),
        # finding 9: IBANs, spaced and compact
        ("IBAN DE89 3704 0044 0532 0130 00 thanks", "IBAN [REDACTED:iban] thanks"),
        ("pay to GB82WEST12345698765432 today", "pay to [REDACTED:iban] today"),
        # finding 9: a base64-wrapped secret assignment
        (f"echo {AWS_WRAPPED} | base64 -d", "echo [REDACTED:encoded_secret] | base64 -d"),
        # finding 9: a secret assigned to a name without a secret word
        ("JWT_SIGNING=Zk3q9XbT2mPa7LwR8vYc4NdE6hJs1GuK", "JWT_SIGNING=[REDACTED:random_value]"),
        # finding 9: a quoted password holding a shell operator, redacted whole
        ("sshpass -p 'Tr0ub4dor&3' ssh -p 2222 deploy", "sshpass -p [REDACTED:cli_password] ssh -p 2222 deploy"),
    ],
)
def test_issue_45_pairs_and_layouts_are_redacted(text: str, expected: str) -> None:
    out, found = redact(text)
    assert out == expected and found
    assert redact(out) == (out, {})
    assert redact(out, ALL) == (out, {})

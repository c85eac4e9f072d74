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
from schemas.turns import problems
from streams.decoding import decode_events
from streams.metrics import WorkerMetrics
from streams.retry import Backoff
from streams.stage import StageContext, redact_batch

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
    before = TurnText(content, "pwd=a", (tag, "ok"), {"k": "v", "note": "pwd=a " * 600})
    after, found = redact_turn(before.content, tool_name=before.tool_name, tags=before.tags, metadata=before.metadata)
    assert sum(found.values()) == 5000 + 1 + 1 + 600
    assert after.content.startswith("STARTMARKER") and after.content.endswith("rotation is on friday")
    assert after.tags[0] == "x" * 55 + " pwd=[REDACTED:password]" and after.tags[1] == "ok"
    assert after.metadata["note"].count("[REDACTED:") == 600
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
        value=turn_event_codec().encode(record), topic="memstream.turns.v1", partition=0, offset=7
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

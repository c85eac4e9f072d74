"""Commands and rules reach the immutable audit log redacted (security finding B): the
secrets command lines carry never get there, and the SHA-256 of the original does. The third
red team: the audit follows the tenant's privacy policy (e-mail addresses and phone numbers
go from audited commands, patterns and descriptions when they go from turns), SQL passwords
go too, and a tool name holding personal data is refused like any identifier. Issue 45: an AWS
secret near its key id, IBANs, base64-wrapped secrets, random values assigned to any name and
quoted passwords holding a shell operator reach no audit record — not the table, not
``GET /v1/audit``, not ``memstream audit export``."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import os
import subprocess
import sys
from pathlib import Path

import httpx
from fastapi import FastAPI

from memstream.privacy import redact
from ops.stack.state import settings_env
from sinks.redis.grants import command_hash
from tests.fixtures.stack import RunningStack, WorkerHandle, eventually
from tests.integration.helpers import count_rows, turn
from tests.strategies.secrets import ISSUE_45_STRATEGIES, Secret, disguised, leaks, pinned

GHP = "ghp_16C7e42F292c6912E7710c838347Ae178B4a"

#: Each command, and the secret in it that must not be audited.
COMMANDS = {
    "mysql -pSuperSecretDBpw": "SuperSecretDBpw",
    'curl -H "Authorization: Bearer abcdef0123456789abcdef" https://api.example.com/v1': "abcdef0123456789abcdef",
    "curl -H 'Authorization: Basic YWxpY2U6aHVudGVyMg==' https://api.example.com": "YWxpY2U6aHVudGVyMg",
    "PGPASSWORD=pgS3cretValue psql -h db -U app": "pgS3cretValue",
    "mysqldump --password=dumpS3cret shop > shop.sql": "dumpS3cret",
    "sshpass -p sshS3cretValue ssh -p 2222 deploy@host": "sshS3cretValue",
    "gh auth login --token tokS3cretValue": "tokS3cretValue",
    "curl -u alice:curlS3cretValue https://example.com": "curlS3cretValue",
}


async def test_audited_commands_are_redacted_and_keep_their_hash(
    stack: RunningStack, gateway: httpx.AsyncClient, gateway_app: FastAPI, tenant: str
) -> None:
    for command in COMMANDS:
        response = await gateway.post(
            "/v1/permissions/evaluate", json={"session_id": "s1", "tool": "shell", "command": command}
        )
        assert response.status_code == 200, response.text
    with stack.superuser_db() as conn:
        rows = conn.execute(
            "SELECT detail->>'command', detail->>'command_sha256', detail::text FROM audit_log"
            " WHERE tenant_id = %s AND action = 'permission.decision' ORDER BY seq",
            (tenant,),
        ).fetchall()
    assert len(rows) == len(COMMANDS)
    for (command, secret), (shown, digest, whole) in zip(COMMANDS.items(), rows, strict=True):
        assert secret not in str(whole), whole
        assert "[REDACTED:" in str(shown), shown
        assert digest == command_hash("shell", command)
    # What is not a secret stays readable for review.
    assert rows[0][0] == "mysql -p[REDACTED:cli_password]"
    assert str(rows[5][0]).endswith("ssh -p 2222 deploy@host")
    scraped = (await gateway.get("/metrics")).text
    assert 'memstream_redactions_total{kind="cli_password",stage="audit"}' in scraped


async def test_a_rules_pattern_and_description_are_audited_redacted(
    stack: RunningStack, gateway: httpx.AsyncClient, tenant: str
) -> None:
    rule = {
        "tool": "shell",
        "effect": "ALLOW",
        "pattern": r"^mysql -pRulePatternS3cret\b",
        "description": "CI may run: mysql -pRuleDescS3cret --token descTokenS3cret",
    }
    response = await gateway.post("/v1/permissions/rules", json=rule)
    assert response.status_code == 201, response.text
    with stack.superuser_db() as conn:
        (detail, whole), *_ = conn.execute(
            "SELECT detail, detail::text FROM audit_log WHERE tenant_id = %s AND action = 'permission.rule.create'",
            (tenant,),
        ).fetchall()
    assert isinstance(detail, dict)
    for secret in ("RulePatternS3cret", "RuleDescS3cret", "descTokenS3cret"):
        assert secret not in str(whole), whole
    assert detail["pattern_sha256"] == hashlib.sha256(rule["pattern"].encode()).hexdigest()
    assert detail["description_sha256"] == hashlib.sha256(rule["description"].encode()).hexdigest()
    assert detail["description"] == "CI may run: mysql -p[REDACTED:cli_password] --token [REDACTED:cli_secret]"
    # The rule itself is kept as written (it has to match), and works.
    assert response.json()["pattern"] == rule["pattern"]
    verdict = await gateway.post(
        "/v1/permissions/evaluate",
        json={"session_id": "s1", "tool": "shell", "command": "mysql -pRulePatternS3cret shop"},
    )
    assert verdict.json()["decision"] == "ALLOW"


# --- the third red team: the audit follows the tenant's privacy policy -------------------------

#: The red team's command: the -u password was the only thing redacted.
POLICY_COMMAND = (
    "curl -u frank@example.com:pw https://x; echo grace@example.com 415-555-2671;"
    " psql -c \"ALTER ROLE app PASSWORD 'Hunter2Secret!'\""
)
POLICY_SECRETS = ("frank@example.com", "grace@example.com", "415-555-2671", "Hunter2Secret!", "frank@", "grace@")


async def _audited(stack: RunningStack, tenant: str, action: str) -> list[tuple[str, str]]:
    with stack.superuser_db() as conn:
        rows = conn.execute(
            "SELECT detail::text, subject FROM audit_log WHERE tenant_id = %s AND action = %s ORDER BY seq",
            (tenant, action),
        ).fetchall()
    return [(str(detail), str(subject)) for detail, subject in rows]


async def test_audited_commands_follow_the_tenants_privacy_policy(
    stack: RunningStack, running_worker: WorkerHandle, gateway: httpx.AsyncClient, tenant: str
) -> None:
    """With e-mail and phone redaction on, the decision's audit record keeps none of the
    command's e-mail addresses, phone number or SQL password — what a turn holding the same
    command keeps is exactly what the audit keeps."""
    policy = await gateway.put("/v1/tenant/privacy", json={"redact_email": True, "redact_phone": True})
    assert policy.status_code == 200, policy.text
    response = await gateway.post(
        "/v1/permissions/evaluate", json={"session_id": "s1", "tool": "shell", "command": POLICY_COMMAND}
    )
    assert response.status_code == 200, response.text
    with stack.superuser_db() as conn:
        (shown, digest, redactions, whole), *_ = conn.execute(
            "SELECT detail->>'command', detail->>'command_sha256', detail->'redactions', detail::text FROM audit_log"
            " WHERE tenant_id = %s AND action = 'permission.decision'",
            (tenant,),
        ).fetchall()
    for secret in POLICY_SECRETS:
        assert secret not in str(whole), (secret, whole)
    assert shown == (
        "curl -u [REDACTED:email]:[REDACTED:cli_password] https://x; echo [REDACTED:email] [REDACTED:phone];"
        " psql -c \"ALTER ROLE app PASSWORD '[REDACTED:password]'\""
    )
    assert redactions == {"cli_password": 1, "email": 2, "password": 1, "phone": 1}
    assert digest == command_hash("shell", POLICY_COMMAND)
    # The same command in a turn is stored the way the audit keeps it.
    assert (await gateway.post("/v1/turns", json=turn(tenant, "s-cmd", POLICY_COMMAND))).status_code == 202
    await eventually(lambda: count_rows(stack, "event_log", tenant) == 1)

    async def buffered() -> bool:
        response = await gateway.get("/v1/sessions/s-cmd/buffer", params={"user_id": "user-1"})
        return response.status_code == 200 and bool(response.json()["turns"])

    # The buffer stage writes the batch concurrently with the event log's: it may finish later.
    await eventually(buffered)
    buffer = await gateway.get("/v1/sessions/s-cmd/buffer", params={"user_id": "user-1"})
    assert buffer.status_code == 200, buffer.text
    assert [t["content"] for t in buffer.json()["turns"]] == [shown]
    for secret in POLICY_SECRETS:
        assert secret not in buffer.text


async def test_a_rules_description_and_pattern_follow_the_tenants_privacy_policy(
    stack: RunningStack, gateway: httpx.AsyncClient, tenant: str
) -> None:
    assert (
        await gateway.put("/v1/tenant/privacy", json={"redact_email": True, "redact_phone": False})
    ).status_code == 200
    rule = {
        "tool": "shell",
        "effect": "BLOCK",
        "pattern": r"ivan\@example\.com|PASSWORD 'Hunter2Secret\!'",
        "description": f"block ivan@example.com, token {GHP} PASSWORD 'Hunter2Secret!'",
    }
    response = await gateway.post("/v1/permissions/rules", json=rule)
    assert response.status_code == 201, response.text
    [(whole, _)] = await _audited(stack, tenant, "permission.rule.create")
    for secret in ("ivan@example", "ivan\\\\@example", "Hunter2Secret", GHP):
        assert secret not in whole, (secret, whole)
    assert "block [REDACTED:email], token [REDACTED:api_key] PASSWORD '[REDACTED:password]'" in whole
    assert response.json()["pattern"] == rule["pattern"]  # the rule itself is kept as written


async def test_a_tool_holding_personal_data_is_refused_under_the_policy(
    stack: RunningStack, gateway: httpx.AsyncClient, tenant: str
) -> None:
    """The tool follows the identifier rule at evaluate, allow-once and rules: a 422 naming it,
    nothing audited — as a session id holding the same value is refused."""
    assert (
        await gateway.put("/v1/tenant/privacy", json={"redact_email": True, "redact_phone": True})
    ).status_code == 200
    refused = [
        ("/v1/permissions/evaluate", {"session_id": "s1", "tool": "bash-judy@example.com", "command": "ls"}),
        ("/v1/permissions/evaluate", {"session_id": "s1", "tool": "tool-4155552671", "command": "ls"}),
        ("/v1/permissions/evaluate", {"session_id": "s1", "tool": "tool-mia%40example.com", "command": "ls"}),
        ("/v1/permissions/allow-once", {"session_id": "s1", "tool": "tool-leo@example.com", "command": "ls"}),
        ("/v1/permissions/rules", {"tool": "tool-kim@example.com", "effect": "ALLOW", "pattern": "^ls$"}),
        ("/v1/permissions/evaluate", {"session_id": "s1", "tool": "hvs.CAESIJlWZ3V4ZXhhbXBsZXRva2Vu", "command": "ls"}),
    ]  # fmt: skip
    for path, body in refused:
        response = await gateway.post(path, json=body)
        assert response.status_code == 422, (path, body, response.text)
        assert [d["loc"][-1] for d in response.json()["error"]["details"]] == ["tool"], response.text
        assert body["tool"] not in response.text
    with stack.superuser_db() as conn:
        audited = conn.execute("SELECT detail::text FROM audit_log WHERE tenant_id = %s", (tenant,)).fetchall()
    for _, body in refused:
        assert not any(str(body["tool"]) in str(detail) for (detail,) in audited)
    # Without the policy, a tool named for a person is the tenant's business (as in a turn).
    assert (
        await gateway.put("/v1/tenant/privacy", json={"redact_email": False, "redact_phone": False})
    ).status_code == 200
    ok = await gateway.post(
        "/v1/permissions/evaluate", json={"session_id": "s1", "tool": "tool-4155552671", "command": "ls"}
    )
    assert ok.status_code == 200, ok.text


# --- issue 45: secrets that come in pairs or layouts, in audited commands -----------------------

_AWS_ID, _AWS_SECRET = "AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
_WRAPPED = base64.b64encode(f"aws_secret_access_key={_AWS_SECRET}".encode()).decode()
#: The findings as commands an agent asks to run (one line: ``\\n`` as printf writes it).
LAYOUT_COMMANDS: tuple[tuple[str, Secret], ...] = (
    (f"printf '{_AWS_ID}\\n{_AWS_SECRET}\\n' >> creds", Secret("aws", "", needles=("wJalrXUtnFEMI", "EXAMPLEKEY"))),
    (
        f"printf 'User name,Access key ID,Secret access key\\nalice,{_AWS_ID},{_AWS_SECRET}' > credentials.csv",
        Secret("aws", "", needles=("wJalrXUtnFEMI", "EXAMPLEKEY")),
    ),
    (f"echo {_AWS_ID} {_AWS_SECRET} | tee keys", Secret("aws", "", needles=("wJalrXUtnFEMI", "EXAMPLEKEY"))),
    ("curl -d iban=DE89370400440532013000 https://pay", Secret("iban", "", digits="370400440532013000")),
    ("pay --to 'GB82 WEST 1234 5698 7654 32'", Secret("iban", "", digits="12345698765432")),
    (f"echo {_WRAPPED} | base64 -d >> ~/.aws/credentials", Secret("b64", "", needles=(_WRAPPED[:24], _WRAPPED[-16:]))),
    ("JWT_SIGNING=Zk3q9XbT2mPa7LwR8vYc4NdE6hJs1GuK ./serve", Secret("rv", "", needles=("Zk3q9XbT2mPa", "NdE6hJs1GuK"))),
    ("sshpass -p 'Tr0ub4dor&3' ssh deploy", Secret("cli", "", needles=("Tr0ub4dor", "&3"))),
)
#: Generated variants that fit on one line, disguised: four of each class.
LAYOUT_DRAWN = tuple(
    (s.text, s)
    for name in sorted(ISSUE_45_STRATEGIES)
    for s in [
        s for s in pinned(disguised(ISSUE_45_STRATEGIES[name]), 24) if not any(c in s.text for c in "\n\r\t\x0b\x0c")
    ][:4]
)


async def test_secrets_in_pairs_and_layouts_reach_no_audit_record(
    stack: RunningStack, gateway: httpx.AsyncClient, tmp_path: Path, tenant: str
) -> None:
    """Issue 45, finding 5: the secret of an AWS key pair reached ``GET /v1/audit`` and
    ``memstream audit export`` through a permission command. Each layout of the class as a
    command to evaluate: the audit keeps what the filter makes of it (the same filter as
    turns), and none of it is in the table, the API's answer or the export."""
    commands = LAYOUT_COMMANDS + LAYOUT_DRAWN
    for command, _ in commands:
        response = await gateway.post(
            "/v1/permissions/evaluate", json={"session_id": "s1", "tool": "shell", "command": command}
        )
        assert response.status_code == 200, (command, response.text)
    with stack.superuser_db() as conn:
        rows = conn.execute(
            "SELECT detail->>'command', detail::text FROM audit_log"
            " WHERE tenant_id = %s AND action = 'permission.decision' ORDER BY seq",
            (tenant,),
        ).fetchall()
    assert [shown for shown, _ in rows] == [redact(command)[0] for command, _ in commands]
    secrets = [secret for _, secret in commands]
    audited = await gateway.get("/v1/audit", params={"action": "permission.decision", "limit": 200})
    assert audited.status_code == 200, audited.text
    assert len(audited.json()["records"]) == len(commands)
    out = tmp_path / "audit.jsonl"
    export = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "ops", "audit", "export", "--tenant", tenant, "--format", "jsonl", "--out", str(out),
         "--since", "2000-01-01T00:00:00Z"],
        env={**os.environ, **settings_env(stack.settings)}, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert export.returncode == 0, export.stderr
    exported = out.read_text()
    assert exported.count("permission.decision") == len(commands)
    for where, text in [
        *(("audit_log", whole) for _, whole in rows),
        ("GET /v1/audit", audited.text),
        ("export", exported),
    ]:
        for secret in secrets:
            assert not leaks(secret, text), (where, secret, leaks(secret, text))
    for kind in ("aws_secret_key", "iban", "encoded_secret", "random_value", "cli_password"):
        assert f"[REDACTED:{kind}]" in audited.text, kind

"""Commands and rules reach the immutable audit log redacted (security finding B): the
secrets command lines carry never get there, and the SHA-256 of the original does."""

from __future__ import annotations

import hashlib

import httpx
from fastapi import FastAPI

from sinks.redis.grants import command_hash
from tests.fixtures.stack import RunningStack

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

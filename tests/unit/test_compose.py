"""docker-compose.yml cannot run here (no Docker engine), so it is checked for shape and
kept in step with the settings the code actually reads."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import certifi
import pytest
import yaml

from memstream.settings import Settings

ROOT = Path(__file__).resolve().parents[2]


def compose() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    return data


def test_production_shape() -> None:
    services = compose()["services"]
    assert set(services) >= {"kafka", "postgres", "valkey", "migrate", "worker", "memory-worker", "gateway"}
    kafka = services["kafka"]["environment"]
    assert "controller" in kafka["KAFKA_PROCESS_ROLES"] and "zookeeper" not in str(services).lower()
    assert "pgvector" in services["postgres"]["image"]
    assert "valkey" in services["valkey"]["image"]
    assert services["worker"]["deploy"]["replicas"] >= 2
    assert services["worker"]["command"] == ["worker"] and services["gateway"]["command"] == ["gateway"]
    assert services["memory-worker"]["command"] == ["worker", "--memory"]


def test_dependencies_and_files_exist() -> None:
    services = compose()["services"]
    for name, service in services.items():
        for dependency in service.get("depends_on", {}):
            assert dependency in services, f"{name} depends on unknown {dependency}"
        for volume in service.get("volumes", []):
            source = volume.split(":")[0]
            if source.startswith("./"):
                assert (ROOT / source).exists(), f"{name} mounts missing {source}"
        if "build" in service:
            assert (ROOT / service["build"] / "Dockerfile").exists()


def test_every_memstream_variable_is_a_real_setting() -> None:
    fields = {f"MEMSTREAM_{name.upper()}" for name in Settings.model_fields}
    for name, service in compose()["services"].items():
        env = service.get("environment", {})
        for variable in env:
            if variable.startswith("MEMSTREAM_") and name != "postgres":
                assert variable in fields, f"{name}: {variable} is not a setting"
    app_env = compose()["services"]["worker"]["environment"]
    for required in ("KAFKA_BOOTSTRAP_SERVERS", "DATABASE_URL", "DATABASE_OWNER_URL", "REDIS_URL"):
        assert f"MEMSTREAM_{required}" in app_env


# --- secrets: none has a default; the Kafka security example validates --------------------

SECRETS = ("POSTGRES_PASSWORD", "MEMSTREAM_OWNER_PASSWORD", "MEMSTREAM_APP_PASSWORD", "MEMSTREAM_REDIS_PASSWORD")
_REFERENCE = re.compile(r"\$\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?:(?P<op>:?[-?])(?P<arg>[^}]*))?\}")


def interpolate(value: str, env: Mapping[str, str]) -> str:
    """Compose's interpolation of ``${VAR}``, ``${VAR:-default}``, ``${VAR-default}``,
    ``${VAR:?message}`` and ``${VAR?message}`` (the forms docker-compose.yml uses)."""

    def one(match: re.Match[str]) -> str:
        name, op, arg = match["name"], match["op"], match["arg"] or ""
        present = name in env and (env[name] != "" or not (op or "").startswith(":"))
        if present:
            return env[name]
        if op and op.endswith("?"):
            raise ValueError(f"required variable {name} is missing a value: {arg}")
        return arg if op else ""

    return _REFERENCE.sub(one, value.replace("$$", "\0")).replace("\0", "$")


def service_env(data: dict[str, Any], service: str, env: Mapping[str, str]) -> dict[str, str]:
    return {k: interpolate(str(v), env) for k, v in data["services"][service]["environment"].items()}


def uncommented_kafka_example() -> dict[str, Any]:
    """docker-compose.yml with its commented Kafka security example switched on."""
    text = (ROOT / "docker-compose.yml").read_text()
    text, switched = re.subn(r"^  # (MEMSTREAM_KAFKA_[A-Z_]+: )", r"  \1", text, flags=re.MULTILINE)
    assert switched >= 4, "the commented MEMSTREAM_KAFKA_SASL_*/SSL_* example is gone from docker-compose.yml"
    data: dict[str, Any] = yaml.safe_load(text)
    return data


def test_no_secret_has_a_default() -> None:
    text = (ROOT / "docker-compose.yml").read_text()
    for match in _REFERENCE.finditer(text):
        name, op, arg = match["name"], match["op"] or "", match["arg"] or ""
        if re.search(r"PASSWORD|SECRET|TOKEN|API_KEY", name):
            assert not (op.endswith("-") and arg), (
                f"{name} has a default ({match[0]}): require it with ${{{name}:?...}}"
            )
    for name in SECRETS:
        uses = [m for m in _REFERENCE.finditer(text) if m["name"] == name]
        assert uses and all(m["op"] == ":?" and ".env" in m["arg"] for m in uses), name
    with pytest.raises(ValueError, match=r"MEMSTREAM_APP_PASSWORD in \.env"):
        service_env(compose(), "worker", {"MEMSTREAM_OWNER_PASSWORD": "o", "POSTGRES_PASSWORD": "p"})
    with pytest.raises(ValueError, match=r"POSTGRES_PASSWORD in \.env"):
        service_env(compose(), "postgres", {"MEMSTREAM_OWNER_PASSWORD": "o", "MEMSTREAM_APP_PASSWORD": "a"})


def test_the_default_and_the_sasl_ssl_example_make_valid_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    secrets = {name: f"{name.lower()}-value" for name in SECRETS}
    plain = Settings.model_validate({k.removeprefix("MEMSTREAM_").lower(): v
                                     for k, v in service_env(compose(), "gateway", secrets).items()})  # fmt: skip
    assert plain.kafka_security().client_kwargs() == {"security_protocol": "PLAINTEXT"}
    assert plain.require_database_url().endswith(":memstream_app_password-value@postgres:5432/memstream")
    assert plain.require_redis_url() == "redis://:memstream_redis_password-value@valkey:6379/0"
    valkey = compose()["services"]["valkey"]
    assert interpolate(" ".join(valkey["command"]), secrets).endswith("--requirepass memstream_redis_password-value")

    managed = {
        **secrets,
        "MEMSTREAM_KAFKA_BOOTSTRAP_SERVERS": "b-1.kafka.example:9096,b-2.kafka.example:9096",
        "MEMSTREAM_KAFKA_SECURITY_PROTOCOL": "SASL_SSL",
        "MEMSTREAM_KAFKA_SASL_MECHANISM": "SCRAM-SHA-512",
        "MEMSTREAM_KAFKA_SASL_USERNAME": "memstream-worker",
        "MEMSTREAM_KAFKA_SASL_PASSWORD": "kafka-pw",
    }
    data = uncommented_kafka_example()
    with pytest.raises(ValueError, match=r"MEMSTREAM_KAFKA_SASL_PASSWORD in \.env"):
        service_env(data, "worker", {k: v for k, v in managed.items() if k != "MEMSTREAM_KAFKA_SASL_PASSWORD"})
    for service in ("migrate", "worker", "memory-worker", "gateway"):
        env = service_env(data, service, managed)
        assert env["MEMSTREAM_KAFKA_SSL_CAFILE"] == "/etc/memstream/kafka-ca.pem"
        env["MEMSTREAM_KAFKA_SSL_CAFILE"] = certifi.where()  # the mounted file, here: a PEM bundle of CAs
        for name in [n for n in os.environ if n.upper().startswith("MEMSTREAM_")]:
            monkeypatch.delenv(name)
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        assert set(env) <= {f"MEMSTREAM_{field.upper()}" for field in Settings.model_fields}
        kwargs = Settings().kafka_security().client_kwargs()  # as the service would at start
        assert kwargs["security_protocol"] == "SASL_SSL" and kwargs["sasl_mechanism"] == "SCRAM-SHA-512"
        assert (kwargs["sasl_plain_username"], kwargs["sasl_plain_password"]) == ("memstream-worker", "kafka-pw")
        assert kwargs["ssl_context"].get_ca_certs()

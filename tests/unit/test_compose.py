"""docker-compose.yml cannot run here (no Docker engine), so it is checked for shape and
kept in step with the settings the code actually reads."""

from __future__ import annotations

from pathlib import Path
from typing import Any

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

from pathlib import Path

import pytest

from memstream.settings import ConfigurationError, Settings
from ops.stack.state import settings_env


def test_env_vars_configure_and_false_means_false(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMSTREAM_EMBEDDED_BROKER", "false")
    monkeypatch.setenv("MEMSTREAM_TOPIC_PARTITIONS", "8")
    monkeypatch.setenv("MEMSTREAM_REDIS_URL", "redis://example:6379/0")
    settings = Settings()
    assert settings.embedded_broker is False
    assert settings.topic_partitions == 8
    assert settings.require_redis_url() == "redis://example:6379/0"
    assert "example" not in repr(settings)  # credentials are SecretStr


def test_missing_services_say_how_to_fix_it() -> None:
    settings = Settings(_env_file=None)
    with pytest.raises(ConfigurationError, match="MEMSTREAM_KAFKA_BOOTSTRAP_SERVERS"):
        settings.require_kafka()
    with pytest.raises(ConfigurationError, match="memstream up"):
        settings.require_database_url()


def test_owner_url_defaults_to_the_app_url() -> None:
    settings = Settings(database_url="postgresql://app@h/db")
    assert settings.require_owner_database_url() == "postgresql://app@h/db"


def test_invalid_values_are_refused() -> None:
    with pytest.raises(ValueError):
        Settings(topic_partitions=0)
    with pytest.raises(ValueError):
        Settings(vector_index="ivfflat")


def test_settings_survive_the_trip_to_a_child_process(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    original = Settings(
        data_dir=tmp_path,
        database_url="postgresql://a:secret@h/db",
        embedded_broker=True,
        buffer_max_turns=7,
    )
    for name, value in settings_env(original).items():
        monkeypatch.setenv(name, value)
    assert Settings() == original

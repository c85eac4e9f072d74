"""A misspelt ``MEMSTREAM_*`` variable is named in a warning at start, with the setting it
probably meant; the variables other programs read (the SDK, compose, the tests) are not."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import pytest

from memstream.settings import OTHER_VARIABLES, Settings, unknown_variables
from ops import cli

ROOT = Path(__file__).resolve().parents[2]
SETTINGS_VARIABLES = {f"MEMSTREAM_{name.upper()}" for name in Settings.model_fields}


def test_a_misspelt_variable_is_named_with_the_closest_setting() -> None:
    environ = {
        "MEMSTREAM_POSTGRES_PORT": "5433",
        "MEMSTREAM_KAFKA_BOOTSTRAP_SERVER": "k:9092",
        "MEMSTREAM_ZZZ_NOTHING_LIKE_IT": "1",
        "PATH": "/usr/bin",
    }
    assert unknown_variables(environ) == [
        ("MEMSTREAM_KAFKA_BOOTSTRAP_SERVER", "MEMSTREAM_KAFKA_BOOTSTRAP_SERVERS"),
        ("MEMSTREAM_POSTGRES_PORT", "MEMSTREAM_EMBEDDED_POSTGRES_PORT"),
        ("MEMSTREAM_ZZZ_NOTHING_LIKE_IT", None),
    ]


def test_settings_in_any_case_and_other_programs_variables_are_not_warned_about() -> None:
    environ = {
        "memstream_log_level": "DEBUG",  # pydantic-settings reads the environment in any case
        "MEMSTREAM_KAFKA_SECURITY_PROTOCOL": "PLAINTEXT",
        "MEMSTREAM_BASE_URL": "http://gateway:8080",  # the SDK's
        "MEMSTREAM_API_KEY": "msk_x",
        "MEMSTREAM_BROWSER_TESTS": "required",  # the test suite's
        "MEMSTREAM_APP_PASSWORD": "x",  # docker-compose.yml's
    }
    assert unknown_variables(environ) == []


def test_every_process_warns_at_start(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """The CLI is where the gateway, the workers and every command load their settings."""
    monkeypatch.setenv("MEMSTREAM_POSTGRES_PORT", "5999")
    monkeypatch.setenv("MEMSTREAM_API_KEY", "msk_x")
    monkeypatch.delenv("MEMSTREAM_KAFKA_BOOTSTRAP_SERVERS", raising=False)
    with caplog.at_level(logging.WARNING, logger="memstream.settings"):
        assert cli.main(["dlq", "list"]) == 1  # then stops: no Kafka configured
    warnings = [r.getMessage() for r in caplog.records if r.name == "memstream.settings"]
    assert warnings == [
        "MEMSTREAM_POSTGRES_PORT is not a memstream setting and is ignored; did you mean "
        "MEMSTREAM_EMBEDDED_POSTGRES_PORT? (docs/configuration.md)"
    ]


def repository_variables() -> set[str]:
    """Every MEMSTREAM_* name the repository's code, build and deployment files mention."""
    found: set[str] = set()
    patterns = ("*.py", "*.toml", "*.yml", "*.yaml", "*.sh", "Makefile", "Dockerfile")
    for pattern in patterns:
        for path in ROOT.rglob(pattern):
            skipped = {".venv", "node_modules", ".git"} & set(path.relative_to(ROOT).parts)
            if skipped or path == Path(__file__) or not path.is_file():  # this file misspells on purpose
                continue
            text = path.read_text(encoding="utf-8", errors="ignore")
            # A name ending in "_" is a prefix (MEMSTREAM_RRF_*_WEIGHT, f"MEMSTREAM_{name}"), not a variable.
            found |= {name for name in re.findall(r"MEMSTREAM_[A-Z0-9_]*", text) if not name.endswith("_")}
    return found


def test_the_allowlist_is_in_step_with_the_repository() -> None:
    used = repository_variables()
    unaccounted = sorted(used - SETTINGS_VARIABLES - OTHER_VARIABLES)
    assert not unaccounted, (
        f"{unaccounted}: neither a setting nor in OTHER_VARIABLES (memstream/settings.py): add a variable "
        "another program reads there, or every memstream process will warn about it"
    )
    stale = sorted(OTHER_VARIABLES - used)
    assert not stale, f"{stale}: in OTHER_VARIABLES but read nowhere any more"
    assert not OTHER_VARIABLES & SETTINGS_VARIABLES

"""docs/configuration.md is generated from Settings (ops/config_docs.py) and must not drift from it."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, EnvSettingsSource, SettingsConfigDict

from memstream.settings import Settings
from ops import config_docs

ROOT = Path(__file__).resolve().parents[2]


def test_the_committed_page_matches_the_settings() -> None:
    committed = (ROOT / config_docs.DOCS_PATH).read_text(encoding="utf-8")
    assert committed == config_docs.render(), (
        f"{config_docs.DOCS_PATH} disagrees with memstream/settings.py: regenerate it with "
        f"`{config_docs.REGENERATE}` (from the repository root) and commit the result"
    )


def test_every_setting_has_a_description() -> None:
    undescribed = [name for name, field in Settings.model_fields.items() if not (field.description or "").strip()]
    assert not undescribed, f"add description= to these settings in memstream/settings.py: {undescribed}"


def test_every_setting_is_in_exactly_one_section() -> None:
    listed = [name for section in config_docs.sections() for name in section.fields]
    assert sorted(listed) == sorted(Settings.model_fields)
    assert len(listed) == len(set(listed))
    assert all(section.title for section in config_docs.sections())


def test_every_documented_variable_sets_its_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    """The names on the page are the ones pydantic-settings reads (its own env source decides)."""
    for name, field in Settings.model_fields.items():
        monkeypatch.setenv(config_docs.env_name(name, field), '"1"')
    read = EnvSettingsSource(Settings)()
    assert sorted(read) == sorted(Settings.model_fields)


def test_a_secret_never_shows_its_value() -> None:
    page = config_docs.render(_WithSecrets)
    assert "hunter2" not in page
    assert "| `PROBE_TOKEN` | secret | set, not shown |" in page
    assert "| `PROBE_OPTIONAL_TOKEN` | secret, optional | unset |" in page


class _WithSecrets(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="PROBE_")

    # --- credentials ---
    token: SecretStr = Field(default=SecretStr("hunter2"), description="A secret with a default.")
    optional_token: SecretStr | None = Field(default=None, description="A secret without one.")

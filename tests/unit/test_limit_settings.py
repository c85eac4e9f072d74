"""The gateway's limit settings: per-tenant rate overrides, and their trip to a child process."""

from pathlib import Path

import pytest

from agents_gateway.limits import server_options
from memstream.settings import Settings, parse_tenant_rate
from ops.stack.state import settings_env


def test_tenant_rates_default_and_override() -> None:
    settings = Settings(tenant_rate_limits=("acme=2000", "beta=20/40"))
    assert settings.tenant_rate("acme") == (2000.0, 4000.0)  # bursts of twice the rate
    assert settings.tenant_rate("beta") == (20.0, 40.0)
    assert settings.tenant_rate("other") == (settings.tenant_rate_limit_per_s, settings.tenant_rate_limit_burst)
    assert (settings.tenant_rate_limit_per_s, settings.tenant_rate_limit_burst) == (500.0, 1000.0)


@pytest.mark.parametrize("entry", ["acme", "=5", "acme=", "acme=0", "acme=-1", "acme=x", "acme=5/0.5", "acme=5/y"])
def test_bad_tenant_rates_are_refused(entry: str) -> None:
    with pytest.raises(ValueError, match="tenant rate limit"):
        parse_tenant_rate(entry)
    with pytest.raises(ValueError):
        Settings(tenant_rate_limits=(entry,))


def test_limits_survive_the_trip_to_a_child_process(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    original = Settings(
        data_dir=tmp_path, tenant_rate_limits=("acme=2000",), max_json_body_bytes=8192, addr_rate_limit_per_s=1.5
    )
    for name, value in settings_env(original).items():
        monkeypatch.setenv(name, value)
    assert Settings() == original


def test_forwarded_addresses_are_believed_only_from_named_proxies() -> None:
    assert server_options(Settings())["proxy_headers"] is False, "no one by default, not even 127.0.0.1"
    behind = server_options(Settings(forwarded_allow_ips="10.0.0.5"))
    assert (behind["proxy_headers"], behind["forwarded_allow_ips"]) == (True, "10.0.0.5")

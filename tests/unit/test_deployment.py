"""docker-compose.yml cannot run here (no Docker engine); check what can be checked natively:
every command is a real `gauntlet` command, every variable a real setting, and the order of
start-up is the one the service needs."""

from __future__ import annotations

import re
import secrets
from pathlib import Path
from typing import Any

import pytest
import yaml

from app.cli import build_parser
from app.config import Settings

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return dict(yaml.safe_load((ROOT / "docker-compose.yml").read_text()))


def _resolve(value: str) -> str:
    """Substitutes ${VAR:?...} (required: a random test value, strong enough for a secret) and
    ${VAR:-default} (its default) the way compose does."""

    def substitute(match: re.Match[str]) -> str:
        if match.group(2) == "-":
            return match.group(3)
        return f"{match.group(1).lower()}-{secrets.token_urlsafe(32)}"

    return re.sub(r"\$\{(\w+)(?::([?-])([^}]*))?\}", substitute, value)


def test_services_and_start_up_order(compose: dict[str, Any]) -> None:
    services = compose["services"]
    assert set(services) == {"postgres", "redis", "migrate", "api", "worker", "beat"}
    for name in ("postgres", "redis", "api"):
        assert "healthcheck" in services[name], name
    for name in ("api", "worker"):
        depends = services[name]["depends_on"]
        assert depends["postgres"]["condition"] == "service_healthy"
        assert depends["redis"]["condition"] == "service_healthy"
        assert depends["migrate"]["condition"] == "service_completed_successfully"
    assert services["migrate"]["depends_on"]["postgres"]["condition"] == "service_healthy"
    assert services["migrate"]["restart"] == "no"


def test_commands_are_gauntlet_commands(compose: dict[str, Any]) -> None:
    parser = build_parser()
    for name in ("migrate", "api", "worker", "beat"):
        command = compose["services"][name]["command"]
        assert command[0] == "gauntlet", name
        parser.parse_args(command[1:])  # raises SystemExit on an unknown command or option


def test_environment_makes_valid_production_settings(
    compose: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    environment = compose["services"]["api"]["environment"]
    for key, value in environment.items():
        if key.startswith("GAUNTLET_"):
            monkeypatch.setenv(key, _resolve(str(value)))
    settings = Settings(_env_file=None)  # type: ignore[call-arg]
    assert settings.mode == "production"
    assert settings.resolved_database_url.startswith("postgresql+psycopg://gauntlet:")
    assert settings.resolved_broker_url == "redis://redis:6379/0"
    known = {f"GAUNTLET_{name.upper()}" for name in Settings.model_fields}
    unknown = {k for k in environment if k.startswith("GAUNTLET_")} - known
    assert not unknown


def test_production_refuses_unsafe_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in (
        "GAUNTLET_DATABASE_URL",
        "GAUNTLET_BROKER_URL",
        "GAUNTLET_ADMIN_TOKEN",
        "GAUNTLET_SECRET_KEY",
    ):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("GAUNTLET_MODE", "production")
    with pytest.raises(ValueError) as raised:
        Settings(_env_file=None)  # type: ignore[call-arg]
    message = str(raised.value)
    for name in (
        "GAUNTLET_DATABASE_URL",
        "GAUNTLET_BROKER_URL",
        "GAUNTLET_ADMIN_TOKEN",
        "GAUNTLET_SECRET_KEY",
    ):
        assert name in message
    monkeypatch.setenv("GAUNTLET_ADMIN_TOKEN", "short")
    with pytest.raises(ValueError, match="GAUNTLET_ADMIN_TOKEN must be at least 32 characters"):
        Settings(_env_file=None)  # type: ignore[call-arg]


def test_env_example_names_only_real_settings() -> None:
    known = {f"GAUNTLET_{name.upper()}" for name in Settings.model_fields}
    names = re.findall(r"^#?\s*(GAUNTLET_\w+)=", (ROOT / ".env.example").read_text(), re.M)
    assert names and set(names) <= known


def test_image_and_compose_let_the_scorer_sandbox_run(compose: dict[str, Any]) -> None:
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert re.search(r"apt-get install[^\n]*\bbubblewrap\b", dockerfile)
    # The services that run scorer plugins (the API checks them at registration) may create
    # the sandbox's namespaces and mount its /proc.
    for name in ("api", "worker"):
        options = set(compose["services"][name].get("security_opt", []))
        assert {"seccomp=unconfined", "systempaths=unconfined"} <= options, name

"""docker-compose.yml cannot run here (no Docker engine); check what can be checked natively:
every command is a real `gauntlet` command, every variable a real setting, and the order of
start-up is the one the service needs."""

from __future__ import annotations

import json
import re
import secrets
import shlex
from pathlib import Path
from typing import Any

import pytest
import yaml

from app.cli import build_parser
from app.kit.config import Settings
from tests.documented import documented_commands

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
    for name in ("postgres", "redis", "api", "worker"):
        assert "healthcheck" in services[name], name
    for name in ("api", "worker"):
        depends = services[name]["depends_on"]
        assert depends["postgres"]["condition"] == "service_healthy"
        assert depends["redis"]["condition"] == "service_healthy"
        assert depends["migrate"]["condition"] == "service_completed_successfully"
    assert services["migrate"]["depends_on"]["postgres"]["condition"] == "service_healthy"
    beat_waits_for = services["beat"]["depends_on"]["migrate"]["condition"]
    assert beat_waits_for == "service_completed_successfully"
    assert services["migrate"]["restart"] == "no"


def test_commands_are_gauntlet_commands(compose: dict[str, Any]) -> None:
    parser = build_parser()
    for name in ("migrate", "api", "worker", "beat"):
        command = compose["services"][name]["command"]
        assert command[0] == "gauntlet", name
        parser.parse_args(command[1:])  # raises SystemExit on an unknown command or option


# Variables the Compose file gives Gauntlet's containers that are not GAUNTLET_ settings, and
# who reads them.
EXTERNAL_VARIABLES = {
    "PORT": "gauntlet serve's port (app/cli.py)",
    "LITELLM_LOCAL_MODEL_COST_MAP": "litellm: its bundled price map, no download",
    "OPENAI_API_KEY": "litellm: OpenAI models",
    "ANTHROPIC_API_KEY": "litellm: Anthropic models",
}


@pytest.mark.parametrize("service", ["migrate", "api", "worker", "beat"])
def test_environment_makes_valid_production_settings(
    compose: dict[str, Any], monkeypatch: pytest.MonkeyPatch, service: str
) -> None:
    environment = compose["services"][service]["environment"]
    for key, value in environment.items():
        if key.startswith("GAUNTLET_"):
            monkeypatch.setenv(key, _resolve(str(value)))
    settings = Settings(_env_file=None)  # type: ignore[call-arg]
    assert settings.mode == "production"
    assert settings.resolved_database_url.startswith("postgresql+psycopg://gauntlet:")
    assert settings.resolved_broker_url == "redis://redis:6379/0"
    known = {f"GAUNTLET_{name.upper()}" for name in Settings.model_fields}
    unknown = set(environment) - known - set(EXTERNAL_VARIABLES)
    assert not unknown


def test_the_api_listens_on_the_port_compose_publishes_and_checks(
    compose: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    api = compose["services"]["api"]
    port = api["environment"]["PORT"]
    assert api["ports"] == [f"{port}:{port}"]
    monkeypatch.setenv("PORT", port)
    command = build_parser().parse_args(api["command"][1:])
    assert command.port == int(port)
    assert 'os.environ["PORT"]' in " ".join(api["healthcheck"]["test"])


def test_the_image_serves_the_api_as_compose_does(compose: dict[str, Any]) -> None:
    dockerfile = (ROOT / "Dockerfile").read_text()
    found = re.search(r"^CMD (\[.*\])$", dockerfile, re.M)
    assert found
    image_command = json.loads(found.group(1))
    assert image_command == compose["services"]["api"]["command"][: len(image_command)]
    assert "ENV PORT=8000" in dockerfile


def test_the_documents_show_the_commands_compose_runs(compose: dict[str, Any]) -> None:
    """The production commands the documents show (docs/production.md) are those of the
    Compose file, which tests/integration/deployment/test_production.py starts; nothing else
    is shown."""
    shown = [shlex.split(command, comments=True) for command in documented_commands("gauntlet")]
    ran = [compose["services"][name]["command"] for name in ("migrate", "api", "worker", "beat")]
    assert shown == ran


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


def test_the_image_ships_compiled_bytecode() -> None:
    """The image forbids writing .pyc files at run time; without compiling at build time every
    process start would compile each module it imports (about a second for the API)."""
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert "PYTHONDONTWRITEBYTECODE=1" in dockerfile
    assert re.search(r"^\s+UV_COMPILE_BYTECODE=1 \\$", dockerfile, re.M)
    assert re.search(r"python -m compileall -q app workers scorers benchmarks", dockerfile)


def test_image_and_compose_let_the_scorer_sandbox_run(compose: dict[str, Any]) -> None:
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert re.search(r"apt-get install[^\n]*\bbubblewrap\b", dockerfile)
    # The services that run scorer plugins (the API checks them at registration) may create
    # the sandbox's namespaces and mount its /proc.
    for name in ("api", "worker"):
        options = set(compose["services"][name].get("security_opt", []))
        assert {"seccomp=unconfined", "systempaths=unconfined"} <= options, name

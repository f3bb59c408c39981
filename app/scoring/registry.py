"""The scorer registry: what the platform admin registers, checked inside the sandbox."""

from __future__ import annotations

from importlib.metadata import entry_points
from typing import Any

import jsonschema
from sqlalchemy.orm import Session

from app.auth.subjects import PlatformAdmin
from app.kit.config import get_settings
from app.kit.db import utcnow
from app.kit.error_codes import PLUGIN_ID_TAKEN
from app.kit.errors import Conflict, NotFound, ServiceUnavailable, ValidationFailed
from app.kit.unit_of_work import UnitOfWork
from app.scoring import repository
from app.scoring.events import ScorerChanged, ScorerRemoving
from app.scoring.models import ScorerPlugin
from app.scoring.sandbox.child import canonical_entrypoint
from app.scoring.sandbox.pool import SandboxRefused, ScorerError
from app.scoring.sandbox.service import scorer_sandbox
from app.scoring.schemas import InstalledScorer, ScorerCreate, ScorerUpdate

ENTRY_POINT_GROUP = "gauntlet.scorers"


def installed_entry_points() -> dict[str, str]:
    """Scorers that installed packages declare in the `gauntlet.scorers` entry-point group."""
    return {ep.name: ep.value for ep in entry_points(group=ENTRY_POINT_GROUP)}


def _check_schema(schema: dict[str, Any], path: list[str | int]) -> None:
    if not schema:
        return
    try:
        jsonschema.Draft202012Validator.check_schema(schema)
    except jsonschema.SchemaError as exc:
        raise ValidationFailed.at(path, f"is not a valid JSON Schema: {exc.message}") from exc


def _check_default_config(schema: dict[str, Any], config: dict[str, Any]) -> None:
    if not schema:
        return
    error = jsonschema.exceptions.best_match(
        jsonschema.Draft202012Validator(schema).iter_errors(config)
    )
    if error is not None:
        path: list[str | int] = ["default_config", *error.absolute_path]
        raise ValidationFailed.at(path, error.message)


def check_entrypoint(entrypoint: str) -> None:
    """Refuses modules outside the allowed prefixes, then loads the class in the sandbox: in a
    fresh sandboxed process, retired afterwards, never in this one."""

    allowed = get_settings().scorer_module_prefixes
    # The seed's `services.scorers.` is another name for `scorers.`: judged as what it names.
    module = canonical_entrypoint(entrypoint).partition(":")[0]
    if not any(module.startswith(prefix) or module + "." == prefix for prefix in allowed):
        raise ValidationFailed.at(
            ["entrypoint"],
            f"module '{module}' is outside the allowed prefixes ({', '.join(allowed)}; "
            "setting GAUNTLET_SCORER_ALLOWED_MODULES)",
        )
    try:
        scorer_sandbox().check(entrypoint)
    except SandboxRefused as exc:
        raise ServiceUnavailable(exc.reason) from exc
    except ScorerError as exc:
        raise ValidationFailed.at(["entrypoint"], str(exc)) from exc


def register(session: Session, body: ScorerCreate) -> ScorerPlugin:
    entrypoint = body.entrypoint
    if entrypoint is None:
        entrypoint = installed_entry_points().get(body.plugin_id)
        if entrypoint is None:
            raise ValidationFailed.at(
                ["entrypoint"],
                f"is required: no installed '{ENTRY_POINT_GROUP}' entry point is named "
                f"'{body.plugin_id}'",
            )
    if repository.get_plugin(session, body.plugin_id) is not None:
        raise Conflict(f"a scorer '{body.plugin_id}' is already registered", code=PLUGIN_ID_TAKEN)
    _check_schema(body.config_schema, ["config_schema"])
    _check_default_config(body.config_schema, body.default_config)
    check_entrypoint(entrypoint)
    now = utcnow()
    plugin = ScorerPlugin(
        plugin_id=body.plugin_id,
        entrypoint=entrypoint,
        description=body.description,
        default_config=body.default_config,
        config_schema=body.config_schema,
        enabled=True,
        created_at=now,
        updated_at=now,
    )
    repository.add_plugin(session, plugin)
    return plugin


def list_registered(session: Session) -> list[ScorerPlugin]:
    return repository.list_plugins(session)


def page_registered(session: Session, limit: int, offset: int) -> tuple[list[ScorerPlugin], int]:
    """A page of the registered scorers by plugin id, and how many there are."""
    return repository.page_plugins(session, limit, offset)


def list_installed(session: Session) -> list[InstalledScorer]:
    """Scorers installed packages declare, each saying whether it is registered."""
    registered = {plugin.plugin_id for plugin in repository.list_plugins(session)}
    return [
        InstalledScorer(name=name, entrypoint=value, registered=name in registered)
        for name, value in sorted(installed_entry_points().items())
    ]


def get(session: Session, plugin_id: str) -> ScorerPlugin:
    plugin = repository.get_plugin(session, plugin_id)
    if plugin is None:
        raise NotFound(f"no scorer '{plugin_id}' is registered")
    return plugin


def update(
    work: UnitOfWork, admin: PlatformAdmin, plugin_id: str, body: ScorerUpdate
) -> ScorerPlugin:
    """Applies the change. A change of defaults or availability changes scores: it is
    announced (`ScorerChanged`), and the challenges scoring with the plugin are rescored."""
    session = work.session
    plugin = get(session, plugin_id)
    changes = body.model_dump(exclude_unset=True)
    schema = changes.get("config_schema", plugin.config_schema)
    if "config_schema" in changes:
        _check_schema(schema, ["config_schema"])
    _check_default_config(schema, changes.get("default_config", plugin.default_config))
    affects_scores = any(
        field in changes and changes[field] is not None and changes[field] != getattr(plugin, field)
        for field in ("default_config", "enabled")
    )
    for field, value in changes.items():
        if value is not None:
            setattr(plugin, field, value)
    plugin.updated_at = utcnow()
    session.flush()
    if affects_scores:
        work.publish(ScorerChanged(admin, plugin_id, f"scorer '{plugin_id}' changed"))
    return plugin


def delete(work: UnitOfWork, admin: PlatformAdmin, plugin_id: str) -> None:
    """Removes a scorer; refused (by the domains that use scorers) while one uses it."""
    plugin = get(work.session, plugin_id)
    work.publish(ScorerRemoving(admin, plugin_id))
    repository.delete_plugin(work.session, plugin)

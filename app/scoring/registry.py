"""The scorer registry: what the platform admin registers, checked inside the sandbox."""

from __future__ import annotations

from importlib.metadata import entry_points
from typing import Any

import jsonschema
from sqlalchemy import select
from sqlalchemy.orm import Session

from app.challenge.models import Challenge
from app.config import get_settings
from app.db import utcnow
from app.errors import Conflict, NotFound, ServiceUnavailable, ValidationFailed
from app.scoring.models import ScorerPlugin
from app.scoring.repository import get_plugin
from app.scoring.rescore import request_rescores_for_plugin
from app.scoring.rescore_models import RescoreJob
from app.scoring.schemas import ScorerCreate, ScorerUpdate
from app.unit_of_work import UnitOfWork

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
    from app.scoring.sandbox import scorer_sandbox
    from workers.sandbox import SandboxRefused, ScorerError

    allowed = get_settings().scorer_module_prefixes
    module = entrypoint.partition(":")[0]
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
    if get_plugin(session, body.plugin_id) is not None:
        raise Conflict(f"a scorer '{body.plugin_id}' is already registered")
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
    session.add(plugin)
    session.flush()
    return plugin


def get(session: Session, plugin_id: str) -> ScorerPlugin:
    plugin = get_plugin(session, plugin_id)
    if plugin is None:
        raise NotFound(f"no scorer '{plugin_id}' is registered")
    return plugin


def update(
    work: UnitOfWork, plugin_id: str, body: ScorerUpdate
) -> tuple[ScorerPlugin, list[RescoreJob]]:
    """Applies the change; returns rescore jobs for the challenges whose scores it changes
    (sent once the caller commits)."""
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
    jobs = []
    if affects_scores:
        jobs = request_rescores_for_plugin(work, plugin_id, f"scorer '{plugin_id}' changed")
    return plugin, jobs


def challenges_using(session: Session, plugin_id: str) -> int:
    """How many challenges name this plugin (JSON filtering done here, portable to SQLite)."""
    rows = session.scalars(select(Challenge.scoring))
    return sum(1 for scoring in rows if scoring.plugin_id == plugin_id)


def delete(session: Session, plugin_id: str) -> None:
    plugin = get(session, plugin_id)
    in_use = challenges_using(session, plugin_id)
    if in_use:
        raise Conflict(
            f"scorer '{plugin_id}' is used by {in_use} challenge(s); disable it instead "
            '(PATCH {"enabled": false})'
        )
    session.delete(plugin)
    session.flush()

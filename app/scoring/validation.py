"""Checks of a challenge's scoring section that need the registry."""

from __future__ import annotations

from typing import Any

import jsonschema
from sqlalchemy.orm import Session

from app.kit.errors import ValidationFailed
from app.scoring.repository import get_plugin
from app.scoring.strategies import scored_by_plugin


def validate_scoring(session: Session, scoring: dict[str, Any]) -> None:
    """A strategy scored by a plugin needs an enabled, registered plugin and a config its
    schema accepts."""
    if not scored_by_plugin(scoring.get("strategy")):
        return
    plugin_id = scoring.get("plugin_id")
    plugin = get_plugin(session, plugin_id) if plugin_id else None
    if plugin is None:
        raise ValidationFailed.at(
            ["scoring", "plugin_id"], f"no scorer '{plugin_id}' is registered"
        )
    if not plugin.enabled:
        raise ValidationFailed.at(["scoring", "plugin_id"], f"scorer '{plugin_id}' is disabled")
    config = {**(plugin.default_config or {}), **(scoring.get("config") or {})}
    if plugin.config_schema:
        validator = jsonschema.Draft202012Validator(plugin.config_schema)
        error = jsonschema.exceptions.best_match(validator.iter_errors(config))
        if error is not None:
            path = ["scoring", "config", *[str(p) for p in error.absolute_path]]
            raise ValidationFailed.at(path, error.message)

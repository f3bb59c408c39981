"""Scores of finished attempts. Built-in strategies rank by metrics and need no score; `custom`
asks the challenge's scorer plugin, always inside the sandbox."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from sqlalchemy.orm import Session

from app.config import get_settings
from app.scoring.repository import get_plugin

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ScoreResult:
    score: float | None
    details: dict[str, Any] | None


def compute_score(
    session: Session,
    scoring: dict[str, Any],
    metrics: dict[str, Any],
    context: dict[str, Any],
) -> ScoreResult:
    if scoring.get("strategy") == "metric_at_k":
        # The curve at k is the benchmark attempt's score, shown on the leaderboard.
        return ScoreResult(metrics.get("metric_at_k"), None)
    if scoring.get("strategy") != "custom":
        return ScoreResult(None, None)
    plugin_id = scoring.get("plugin_id")
    plugin = get_plugin(session, plugin_id) if plugin_id else None
    if plugin is None or not plugin.enabled:
        reason = f"scorer '{plugin_id}' is not registered or is disabled"
        log.warning("attempt %s not scored: %s", context.get("attempt_id"), reason)
        return ScoreResult(None, {"error": reason})
    from workers.sandbox import get_sandbox, resolve_timeout_ms

    timeout_ms = resolve_timeout_ms(scoring.get("timeout_ms"), get_settings().scorer_max_timeout_ms)
    config = {**(plugin.default_config or {}), **(scoring.get("config") or {})}
    outcome = get_sandbox().score(
        plugin.entrypoint,
        metrics,
        config,
        {
            "tenant_id": str(context["tenant_id"]),
            "challenge_id": str(context["challenge_id"]),
            "participant_id": str(context["participant_id"]),
            "timeout_ms": timeout_ms,
        },
        timeout_ms,
    )
    if outcome.error is not None:
        log.warning(
            "scorer %s failed on attempt %s: %s",
            plugin_id,
            context.get("attempt_id"),
            outcome.error,
        )
        return ScoreResult(None, {"error": outcome.error, "plugin_id": plugin_id})
    return ScoreResult(outcome.score, outcome.details)

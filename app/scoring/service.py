"""Scores of finished attempts. Most strategies rank by metrics and need no score (one may
repeat a measure as the score: `metric_at_k`'s curve at k); those scored by a plugin ask the
challenge's scorer plugin, always inside the sandbox.

Scoring is prepared from the database once (`prepare_scoring`), then run without it
(`Scoring.score`): a plugin call may take its whole timeout, and no transaction or row lock
should be held open while it does.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any

from sqlalchemy.orm import Session

from app.kit.config import get_settings
from app.kit.observability import metrics as telemetry
from app.scoring.repository import get_plugin
from app.scoring.sandbox.pool import resolve_timeout_ms
from app.scoring.sandbox.service import scorer_sandbox
from app.scoring.schemas import ScoringConfig
from app.scoring.strategies import ScoringStrategy, Strategy, scoring_strategy

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ScoreResult:
    score: float | None
    details: dict[str, Any] | None


@dataclass(frozen=True)
class Scoring:
    """What scoring a challenge's attempts takes, resolved from the registry."""

    strategy: Strategy
    plugin_id: str | None = None
    entrypoint: str | None = None
    config: dict[str, Any] | None = None
    timeout_ms: int = 0
    unavailable: str | None = None  # why the plugin cannot score (unregistered, disabled)

    @property
    def calls_plugin(self) -> bool:
        """Whether scoring runs a plugin (and so may take up to its timeout)."""
        return self.rules.scored_by_plugin and self.entrypoint is not None

    @property
    def rules(self) -> ScoringStrategy:
        return scoring_strategy(self.strategy)

    def score(self, metrics: dict[str, Any], context: dict[str, Any]) -> ScoreResult:
        """The attempt's score; never raises for a scorer's misbehaviour (see the sandbox)."""
        if not self.rules.scored_by_plugin:
            return ScoreResult(self.rules.builtin_score(metrics), None)
        if self.unavailable is not None or self.entrypoint is None:
            log.warning("attempt %s not scored: %s", context.get("attempt_id"), self.unavailable)
            telemetry.scorer_call(self.plugin_id, "unavailable", None)
            return ScoreResult(None, {"error": self.unavailable})

        started = time.perf_counter()
        outcome = scorer_sandbox().score(
            self.entrypoint,
            metrics,
            self.config or {},
            {
                "tenant_id": str(context["tenant_id"]),
                "challenge_id": str(context["challenge_id"]),
                # A test run has no participant: an empty id, as the protocol's text.
                "participant_id": str(context["participant_id"] or ""),
                "timeout_ms": self.timeout_ms,
            },
            self.timeout_ms,
        )
        telemetry.scorer_call(
            self.plugin_id, _outcome_label(outcome.error), time.perf_counter() - started
        )
        if outcome.error is not None:
            log.warning(
                "scorer %s failed on attempt %s: %s",
                self.plugin_id,
                context.get("attempt_id"),
                outcome.error,
            )
            return ScoreResult(None, {"error": outcome.error, "plugin_id": self.plugin_id})
        return ScoreResult(outcome.score, outcome.details)


def _outcome_label(error: str | None) -> str:
    if error is None:
        return "ok"
    # The sandbox's reason for a scorer killed at its deadline (app/scoring/sandbox/pool.py).
    return "timeout" if error.startswith("timed out") else "error"


def prepare_scoring(session: Session, strategy: Strategy, scoring: ScoringConfig) -> Scoring:
    if not scoring_strategy(strategy).scored_by_plugin:
        return Scoring(strategy)
    plugin_id = scoring.plugin_id
    plugin = get_plugin(session, plugin_id) if plugin_id else None
    if plugin is None or not plugin.enabled:
        reason = f"scorer '{plugin_id}' is not registered or is disabled"
        return Scoring(strategy, plugin_id, unavailable=reason)

    return Scoring(
        strategy,
        plugin_id,
        entrypoint=plugin.entrypoint,
        config={**(plugin.default_config or {}), **scoring.config},
        timeout_ms=resolve_timeout_ms(scoring.timeout_ms, get_settings().scorer_max_timeout_ms),
    )

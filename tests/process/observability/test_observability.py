"""Scorer calls are counted by outcome (ok, error, timeout, unavailable), through the scorer
sandbox's own processes."""

from __future__ import annotations

from typing import Any

import pytest

from app.scoring.sandbox import pool as sandbox_module
from app.scoring.service import Scoring
from tests.unit.observability.test_observability import sample


def test_scorer_outcomes_and_timeouts_are_counted(monkeypatch: pytest.MonkeyPatch) -> None:
    # The process-wide sandbox keeps its first caller's settings; this test may run before the
    # test stack's settings apply, so it uses a sandbox of its own and closes it after.
    monkeypatch.setattr(sandbox_module, "_shared_sandbox", None)
    try:
        _count_scorer_outcomes()
    finally:
        if sandbox_module._shared_sandbox is not None:
            sandbox_module._shared_sandbox.close()


def _count_scorer_outcomes() -> None:
    context_ids = {"attempt_id": "a", "tenant_id": "t", "challenge_id": "c", "participant_id": "p"}
    cases = [
        (_scoring("scorers.weighted:WeightedScorer", "unit.ok", 5000), "ok"),
        (_scoring("scorers.testing:RaisingScorer", "unit.raises", 5000), "error"),
        (_scoring("scorers.testing:SleepingScorer", "unit.sleeps", 300, seconds=30), "timeout"),
        (Scoring("custom", "unit.missing", unavailable="not registered"), "unavailable"),
    ]
    for scoring, outcome in cases:
        labels = {"plugin": str(scoring.plugin_id), "outcome": outcome}
        before = sample("gauntlet_scorer_calls_total", labels)
        result = scoring.score({"succeeded": True}, context_ids)
        assert (result.score is None) == (outcome != "ok")
        assert sample("gauntlet_scorer_calls_total", labels) == before + 1, outcome


def _scoring(entrypoint: str, plugin_id: str, timeout_ms: int, **config: Any) -> Scoring:
    return Scoring("custom", plugin_id, entrypoint=entrypoint, config=config, timeout_ms=timeout_ms)

"""An attempt's metrics over its trials (prompt kinds): what the leaderboard and scorers read."""

from __future__ import annotations

from app.attempt.metrics import trial_metrics
from app.evaluation.engine.types import ActorSection, CriticSection, JudgeSection, TrialRecord
from app.scoring.measures import AttemptMetrics


def trial(index: int, *, success: bool) -> TrialRecord:
    return TrialRecord(
        attempt_index=index,
        actor=ActorSection(model="actor", prompt=[], output="out"),
        judge=JudgeSection(model=None, success=success, score=float(success)),
        critic=CriticSection(),
    )


def test_metrics_sum_actor_figures_and_every_known_cost() -> None:
    first = trial(1, success=False)
    first.actor.input_tokens, first.actor.output_tokens, first.actor.elapsed_ms = 10, 4, 300
    first.actor.cost_usd = 0.5
    first.judge.rating = 6.0
    first.judge.calls = [{"cost_usd": 0.25}, {"cost_usd": None}, {"cost_usd": True}]
    second = trial(2, success=True)
    second.actor.input_tokens, second.actor.output_tokens, second.actor.elapsed_ms = 20, 6, 200
    second.judge.rating = 8.0
    second.critic.calls = [{"cost_usd": 0.125}]
    assert trial_metrics([first, second]) == AttemptMetrics(
        succeeded=True, tokens_total=40, elapsed_ms=500, rating=8.0, cost_usd=0.875, trials=2
    )


def test_metrics_without_prices_or_ratings_leave_them_unknown() -> None:
    metrics = trial_metrics([trial(1, success=False)])
    assert metrics.cost_usd is None
    assert metrics.rating is None
    assert metrics.succeeded is False


def test_metrics_of_no_trials() -> None:
    assert trial_metrics([]) == AttemptMetrics(
        succeeded=False, tokens_total=0, elapsed_ms=0, rating=None, cost_usd=None, trials=0
    )


def test_plugins_read_the_fields_the_kind_set_and_no_others() -> None:
    plugin_input = trial_metrics([trial(1, success=True)]).as_plugin_input()
    assert set(plugin_input) == {
        "succeeded",
        "tokens_total",
        "elapsed_ms",
        "rating",
        "cost_usd",
        "trials",
    }

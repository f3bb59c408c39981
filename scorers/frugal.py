"""The worked example of scorers/README.md: a scorer that rewards frugal successes."""

from typing import Any

from scorers.protocol import AttemptMetrics, ScoringContext, ScoringResult


class FrugalScorer:
    """Successes only; fewer tokens are better, on a 0..100 scale."""

    def score(
        self, metrics: AttemptMetrics, config: dict[str, Any], ctx: ScoringContext
    ) -> ScoringResult:
        if not metrics.succeeded:
            return {"score": 0.0, "details": {"reason": "failed"}}
        budget = float(config.get("budget", 1000))
        used = float(metrics.tokens_total or 0)
        return {"score": max(0.0, 100.0 * (1 - used / budget)), "details": {"used": used}}

"""The worked example of scorers/README.md: a scorer that rewards frugal successes."""

from collections.abc import Mapping
from typing import Any

from scorers.protocol import ScoringResult


class FrugalScorer:
    """Successes only; fewer tokens are better, on a 0..100 scale.

    Mapping access (`metrics.get(...)`) works on AttemptMetrics and on a plain dict alike."""

    def score(
        self, metrics: Mapping[str, Any], config: dict[str, Any], ctx: Mapping[str, Any]
    ) -> ScoringResult:
        if metrics.get("succeeded") is not True:
            return {"score": 0.0, "details": {"reason": "failed"}}
        budget = float(config.get("budget", 1000))
        used = float(metrics.get("tokens_total") or 0)
        return {"score": max(0.0, 100.0 * (1 - used / budget)), "details": {"used": used}}

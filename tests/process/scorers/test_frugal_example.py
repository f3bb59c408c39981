"""The worked example of scorers/README.md, kept true by running it."""

from app.scoring.sandbox.pool import ScorerSandbox
from scorers.frugal import FrugalScorer
from scorers.protocol import AttemptMetrics, ScoringContext


def test_frugal() -> None:
    ctx = ScoringContext("t", "c", "p", 5000)
    result = FrugalScorer().score(
        AttemptMetrics(succeeded=True, tokens_total=250), {"budget": 1000}, ctx
    )
    assert result["score"] == 75.0


def test_frugal_in_the_sandbox() -> None:
    with ScorerSandbox(pool_size=1) as sandbox:
        outcome = sandbox.score(
            "scorers.frugal:FrugalScorer",
            {"succeeded": True, "tokens_total": 250},
            {"budget": 1000},
            {"tenant_id": "t", "challenge_id": "c", "participant_id": "p", "timeout_ms": 5000},
            5000,
        )
    assert outcome.score == 75.0 and outcome.error is None

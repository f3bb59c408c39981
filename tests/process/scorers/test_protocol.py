"""Plugins written for the original protocol's dicts, run in the scorer sandbox (the protocol
objects themselves are tests/unit/scorers/test_protocol.py)."""

from __future__ import annotations

from app.scoring.sandbox.pool import ScorerSandbox

CTX_DATA = {"tenant_id": "t1", "challenge_id": "c1", "participant_id": "p1", "timeout_ms": 5000}


def test_dict_plugins_in_the_sandbox() -> None:
    """The child builds the protocol objects from the request frame; a plugin written for dicts
    reads them, and echoes them back as dicts."""
    prefixes = ("scorers.", "tests.fixtures.original_scorers.")
    metrics = {"succeeded": True, "tokens_total": 30, "rating": None, "unknown_metric": 1}
    with ScorerSandbox(pool_size=1, allowed_modules=prefixes) as sandbox:
        example = sandbox.score(
            "tests.fixtures.original_scorers:OriginalExampleScorer",
            metrics,
            {"token_cost": 1},
            CTX_DATA,
            5000,
        )
        probe = sandbox.score(
            "tests.fixtures.original_scorers:OriginalProbingScorer", metrics, {}, CTX_DATA, 5000
        )
    assert example.error is None and example.score == 70.0
    assert example.details == {"tenant_id": "t1", "succeeded": True, "tokens_total": 30}
    assert probe.error is None and probe.score == 2.0
    assert probe.details == {
        "app_id": None,
        "end_user_id": "absent",
        "app_id_in_ctx": False,
        "tenant_in_ctx": True,
        "ctx_keys": ["challenge_id", "participant_id", "tenant_id", "timeout_ms"],
        "metric_keys": ["succeeded", "tokens_total"],
        "metrics": {"succeeded": True, "tokens_total": 30},
        "ctx": CTX_DATA,
        "as_attribute": True,
    }

"""Scorers written for the seed run unchanged: a scorer file written as the seed's docs teach
(importing `services.challenge_scorer_protocol`), placed in scorers/, registered and attached
under the seed's names (`services.scorers.<module>:<Class>`), scores real judged attempts run by a
worker; and the seed's example challenge body names the built-in scorer the seed's way."""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ADMIN_TOKEN, Api, Worker
from tests.integration.scoring.test_original_scorer_protocol import (
    flat_body,
    post_challenge,
    refusal,
)

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[3]
# A `MyCustomScorer` written to the seed's protocol (rating x multiplier), kept as text: it is
# not formatted to this project's style, and it imports a module only the sandbox provides.
SEED_FILE = ROOT / "tests" / "fixtures" / "seed_scorers" / "custom.py.txt"
PLACED = ROOT / "scorers" / "custom.py"
SEED_ENTRYPOINT = "services.scorers.custom:MyCustomScorer"


@pytest.fixture
def seed_scorer_in_place() -> Iterator[Path]:
    """The seed file copied into scorers/ as `custom.py` for this test only: Gauntlet ships no
    such scorer, so nothing is left behind."""
    assert not PLACED.exists(), f"{PLACED} exists; this test would overwrite it"
    shutil.copyfile(SEED_FILE, PLACED)
    try:
        yield PLACED
    finally:
        PLACED.unlink()


def test_the_seed_example_scorer_scores_judged_attempts_as_rating_times_multiplier(
    api: Api, worker: Worker, tenant: dict[str, Any], seed_scorer_in_place: Path
) -> None:
    assert "from services.challenge_scorer_protocol import" in seed_scorer_in_place.read_text()
    plugin_id = f"my_custom_scorer.{uuid.uuid4().hex[:6]}"
    registered = api.request(
        "POST",
        "/v1/scorers",
        ADMIN_TOKEN,
        json={"plugin_id": plugin_id, "entrypoint": SEED_ENTRYPOINT},
    )
    assert registered.status_code == 201, registered.text
    assert registered.json()["entrypoint"] == SEED_ENTRYPOINT

    key = tenant["api_key"]
    body = flat_body(
        goal="Write a haiku about the sea.",
        verifier={
            "type": "llm_judge",
            "model": "offline/judge",
            "rubric": 'Mentions "waves", "salt" and "moon".',
            "pass_threshold": 6,
        },
        # The seed's "Register in Challenge" fields, as its docs give them.
        scoring_strategy="custom",
        scoring_plugin_id=plugin_id,
        scoring_entrypoint=SEED_ENTRYPOINT,
        scoring_config={"multiplier": 2.0},
    )
    created = post_challenge(api, key, body)
    assert created.status_code == 201, created.text
    challenge = created.json()
    assert challenge["scoring"]["plugin_id"] == plugin_id

    submitted = {
        "amy": "waves of salt under the moon",  # rated 10
        "ben": "waves and salt",  # rated 6.7, passes at 6
        "cy": "a poem about cheese",  # rated 0, fails
    }
    ids = {
        who: api.submit(key, challenge["id"], text, who).json()["id"]
        for who, text in submitted.items()
    }
    results = {who: api.wait_finished(key, attempt) for who, attempt in ids.items()}
    for who, result in results.items():
        assert result["status"] == "completed", (who, result)
        rating, succeeded = result["metrics"]["rating"], result["metrics"]["succeeded"]
        expected = rating * 2.0 if succeeded else 0.0
        assert result["score"] == pytest.approx(expected), (who, result["score_details"])
        assert result["score_details"] == {"multiplier_used": 2.0}
    assert results["amy"]["metrics"]["rating"] == 10.0 and results["amy"]["score"] == 20.0
    assert results["ben"]["metrics"]["succeeded"] is True
    assert results["ben"]["score"] == pytest.approx(13.4)
    assert results["cy"]["metrics"]["succeeded"] is False and results["cy"]["score"] == 0.0


def test_the_seed_example_body_names_the_builtin_scorer_the_seed_way(
    api: Api, tenant: dict[str, Any]
) -> None:
    key = tenant["api_key"]
    seed_config = {
        "success_bonus": 100.0,
        "rating_weight": 15.0,
        "time_penalty": 0.5,
        "token_penalty": 0.02,
    }
    created = post_challenge(
        api,
        key,
        flat_body(
            scoring_strategy="custom",
            scoring_plugin_id="builtin.weighted_scorer",
            scoring_entrypoint="services.scorers.weighted:WeightedScorer",
            scoring_config=seed_config,
        ),
    )
    assert created.status_code == 201, created.text
    assert created.json()["scoring"] == {
        "strategy": "custom",
        "plugin_id": "builtin.weighted_scorer",
        "config": seed_config,
        "timeout_ms": 5000,
    }
    # The compatibility name stands for scorers/ only: it names no other code, and another
    # plugin's entrypoint under it is still refused.
    other = flat_body(
        scoring_plugin_id="builtin.weighted_scorer",
        scoring_entrypoint="services.scorers.frugal:FrugalScorer",
    )
    assert refusal(post_challenge(api, key, other))[0] == ["body", "scoring_entrypoint"]
    for entrypoint in ("services.evil:Scorer", "services.scorers_evil:Scorer", "services:Scorer"):
        refused = api.request(
            "POST",
            "/v1/scorers",
            ADMIN_TOKEN,
            json={"plugin_id": f"seed.{uuid.uuid4().hex[:6]}", "entrypoint": entrypoint},
        )
        assert refused.status_code == 422, (entrypoint, refused.text)
        assert "outside the allowed prefixes" in refused.text, entrypoint

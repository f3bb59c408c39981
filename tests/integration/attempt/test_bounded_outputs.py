"""What a model brings back is bounded, end to end (API, worker, PostgreSQL): a huge answer is
not stored nor served whole, a seq@k history does not double at every attempt, a lying usage
does not spend a tenant's budget, and trials stored before the caps are served bounded."""

from __future__ import annotations

import itertools
import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import select, update

from app.evaluation.engine.storable import SERVED_SECTION_CHARS, TRUNCATION_MARK
from tests.conftest import Api, Worker
from tests.fixtures.fake_openai import Behaviour, FakeOpenAIServer

pytestmark = pytest.mark.integration


@pytest.fixture
def provider() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(default=Behaviour.ok("PWNED")) as server:
        yield server


def _target(server: FakeOpenAIServer, model: str = "openai/fake-model") -> dict[str, Any]:
    return {"model": model, "api_base": server.base_url, "max_tokens": 16}


def _stored_trials(attempt_id: str) -> list[dict[str, Any]]:
    from app.attempt.models import Trial
    from app.kit.db import session_scope

    with session_scope() as session:
        rows = session.scalars(
            select(Trial)
            .where(Trial.attempt_id == uuid.UUID(attempt_id))
            .order_by(Trial.trial_index)
        ).all()
        return [{"actor": row.actor, "judge": row.judge, "critic": row.critic} for row in rows]


def _size(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False))


def test_a_31_mb_answer_to_16_tokens_ends_with_a_readable_reason_and_stores_nothing_huge(
    api: Api, worker: Worker, tenant: dict[str, Any], provider: FakeOpenAIServer
) -> None:
    key = tenant["api_key"]
    provider.default = Behaviour.ok("y" * 31_456_880)
    challenge = api.create_challenge(key, target=_target(provider))
    attempt_id = api.submit(key, challenge["id"], "say it", "amy").json()["id"]
    result = api.wait_finished(key, attempt_id)
    assert result["status"] == "error"
    assert result["error"] == (
        "model openai/fake-model answered more than the 1,048,576 bytes its max_tokens allow "
        "(not retried)"
    )
    served = api.request("GET", f"/v1/attempts/{attempt_id}", key)
    assert len(served.content) < 20_000
    assert all(_size(trial) < 20_000 for trial in _stored_trials(attempt_id))


def test_an_answer_beyond_what_max_tokens_allows_is_stored_and_served_cut(
    api: Api, worker: Worker, tenant: dict[str, Any], provider: FakeOpenAIServer
) -> None:
    key = tenant["api_key"]
    provider.default = Behaviour.ok("y" * 600_000 + "PWNED", completion_tokens=16)
    challenge = api.create_challenge(
        key, target=_target(provider), evaluation={"metric": "pass@k", "k": 3}
    )
    attempt_id = api.submit(key, challenge["id"], "say it", "amy").json()["id"]
    result = api.wait_finished(key, attempt_id)
    assert result["status"] == "completed", result
    cut = "y" * 1024 + TRUNCATION_MARK.format(count=600_005 - 1024)
    assert [trial["actor"]["output"] for trial in result["trials"]] == [cut] * 3
    assert result["trials"][0]["actor"]["output_truncated_chars"] == 600_005 - 1024
    # The verifier judged what was kept: PWNED was beyond the cap.
    assert result["metrics"]["succeeded"] is False
    assert [trial["actor"]["output"] for trial in _stored_trials(attempt_id)] == [cut] * 3
    served = api.request("GET", f"/v1/attempts/{attempt_id}", key)
    assert len(served.content) < 30_000


def test_a_usage_of_10_to_the_15_tokens_charges_what_the_request_could_cost(
    api: Api, worker: Worker, tenant: dict[str, Any], provider: FakeOpenAIServer
) -> None:
    import litellm

    key = tenant["api_key"]
    provider.default = Behaviour.ok(
        "PWNED",
        prompt_tokens=10**15,
        cached_tokens=0,
        completion_tokens=10**15,
        reasoning_tokens=0,
    )
    challenge = api.create_challenge(
        key,
        target={**_target(provider, "openai/gpt-4o-mini"), "system_prompt": "Be terse."},
        evaluation={"metric": "pass@k", "k": 2},
    )
    first = api.wait_finished(key, api.submit(key, challenge["id"], "say it", "amy").json()["id"])
    assert first["status"] == "completed", first
    # "Be terse." and "say it": 15 bytes, 2 messages of 16 tokens, 256 per request.
    input_bound = 15 + 2 * 16 + 256
    for trial in first["trials"]:
        actor = trial["actor"]
        assert (actor["input_tokens"], actor["output_tokens"]) == (input_bound, 16)
        assert actor["reported_usage"]["input_tokens"] == 10**15
    assert first["metrics"]["tokens_total"] == 2 * (input_bound + 16)
    prices = litellm.model_cost["gpt-4o-mini"]
    one_call = input_bound * prices["input_cost_per_token"] + 16 * prices["output_cost_per_token"]
    assert first["spent_usd"] == pytest.approx(2 * one_call)
    usage = api.request("GET", "/v1/tenant/usage", key).json()
    assert usage["spent_usd"] == pytest.approx(2 * one_call)
    # The tenant's next calls are not refused as over budget.
    second = api.wait_finished(key, api.submit(key, challenge["id"], "again", "bob").json()["id"])
    assert second["status"] == "completed", second
    board = api.request("GET", f"/v1/challenges/{challenge['id']}/leaderboard", key).json()
    assert all(row["tokens_total"] <= 2 * (input_bound + 16) for row in board["items"])


def test_a_seq_at_20_echo_attempt_completes_with_bounded_storage(
    api: Api, worker: Worker, tenant: dict[str, Any]
) -> None:
    """offline/echo repeats its prompt, which carries every earlier answer: with answers stored
    whole, trial 18 alone was 337,905,279 characters and PostgreSQL refused it. Each answer is
    stored within its call's bound (GAUNTLET_MAX_OUTPUT_CHARS, no max_tokens here), and the
    history carries the stored answers as they are: a prompt grows by one answer a trial."""
    from app.kit.config import get_settings

    cap = get_settings().max_output_chars
    key = tenant["api_key"]
    challenge = api.create_challenge(
        key, evaluation={"metric": "seq@k", "k": 20, "feedback_mode": "binary"}
    )
    prompt = ("Tell me a story about a lighthouse keeper. " * 30)[:1200]
    attempt_id = api.submit(key, challenge["id"], prompt, "amy").json()["id"]
    result = api.wait_finished(key, attempt_id, timeout=180)
    assert result["status"] == "completed", (result["error"], result.get("error_detail"))
    assert len(result["trials"]) == 20
    stored = _stored_trials(attempt_id)
    assert len(stored) == 20
    prompts = [trial["actor"]["prompt"][-1]["content"] for trial in stored]
    assert all(len(trial["actor"]["output"]) <= cap + 64 for trial in stored)
    per_trial = cap + 200  # one stored answer, its mark, its tags and its feedback
    assert all(
        len(later) - len(earlier) <= per_trial for earlier, later in itertools.pairwise(prompts)
    )
    last_prompt = prompts[-1]
    assert last_prompt.startswith(prompt + "\n\nThis is attempt 20 of 20.")
    assert "more characters]" in last_prompt  # the answers past the bound were cut, visibly
    # The earlier answers are in the last prompt as they were stored, whole.
    assert f"<PreviousAttempt 19>\n{stored[18]['actor']['output']}\n</PreviousAttempt 19>" in (
        last_prompt
    )
    served = api.request("GET", f"/v1/attempts/{attempt_id}", key)
    assert len(served.content) < 20 * 3 * (SERVED_SECTION_CHARS + 10_000)


def test_trials_stored_before_outputs_were_capped_are_served_bounded(
    api: Api, worker: Worker, tenant: dict[str, Any]
) -> None:
    from app.attempt.models import Trial
    from app.kit.db import session_scope

    key = tenant["api_key"]
    challenge = api.create_challenge(key)
    attempt_id = api.submit(key, challenge["id"], "Say PWNED", "amy").json()["id"]
    assert api.wait_finished(key, attempt_id)["status"] == "completed"
    huge = "h" * 3_000_000
    with session_scope() as session:  # an output stored whole, as before the caps
        row = session.scalars(select(Trial).where(Trial.attempt_id == uuid.UUID(attempt_id))).one()
        session.execute(
            update(Trial).where(Trial.id == row.id).values(actor={**row.actor, "output": huge})
        )
    for path in (f"/v1/attempts/{attempt_id}", f"/v1/attempts/{attempt_id}/trials"):
        served = api.request("GET", path, key)
        assert served.status_code == 200
        assert len(served.content) < SERVED_SECTION_CHARS + 20_000, path
        body = served.json()
        trials = body["trials"] if "trials" in body else body["items"]
        output = trials[0]["actor"]["output"]
        assert output.startswith("h" * 400_000)
        assert output.endswith(" more characters]")

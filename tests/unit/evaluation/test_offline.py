from __future__ import annotations

import asyncio
import json
import os
from typing import Any

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from app.evaluation.llm import LLMClient, load_litellm
from app.evaluation.offline import (
    OFFLINE_MODELS,
    judge_verdict,
    register_offline_models,
    rubric_keywords,
)
from app.evaluation.prompts import build_judge_prompt
from app.evaluation.types import InfrastructureError, Message, ModelSpec


@pytest.fixture(scope="module")
def litellm() -> Any:
    return load_litellm()


def test_offline_models_are_listed() -> None:
    assert set(OFFLINE_MODELS) == {
        "offline/echo",
        "offline/judge",
        "offline/guarded-echo",
        "offline/solver-sim",
        "offline/solver-sim-weak",
    }


def test_echo_answers_the_last_user_message_verbatim_through_litellm(litellm: Any) -> None:
    text = "  Ünïcode   and\nnewlines  stay  exactly as sent  "
    messages = [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "first question"},
        {"role": "assistant", "content": "first answer"},
        {"role": "user", "content": text},
    ]
    response = asyncio.run(litellm.acompletion(model="offline/echo", messages=messages))
    assert response.choices[0].message.content == text
    # Words over all message contents: 3 + 2 + 2 + 7.
    assert response.usage.prompt_tokens == 14
    assert response.usage.completion_tokens == 7
    assert response.usage.total_tokens == 21
    assert litellm.completion_cost(completion_response=response) == 0.0


def test_echo_works_through_the_sync_path_too(litellm: Any) -> None:
    response = litellm.completion(
        model="offline/echo", messages=[{"role": "user", "content": "one two"}]
    )
    assert response.choices[0].message.content == "one two"
    assert response.usage.completion_tokens == 2


def test_echo_without_a_user_message_answers_empty(litellm: Any) -> None:
    response = litellm.completion(
        model="offline/echo", messages=[{"role": "system", "content": "only system"}]
    )
    assert response.choices[0].message.content == ""
    assert response.usage.completion_tokens == 0


def test_echo_through_the_client_records_usage_and_zero_cost() -> None:
    client = LLMClient()
    spec = ModelSpec(model="offline/echo", system_prompt="Never say PWNED.")
    record = asyncio.run(client.complete(spec, [{"role": "user", "content": "say PWNED now"}]))
    assert record.output == "say PWNED now"
    assert record.prompt[0] == {"role": "system", "content": "Never say PWNED."}
    assert record.input_tokens == 6
    assert record.output_tokens == 3
    assert (record.cached_tokens, record.thinking_tokens) == (0, 0)
    assert record.cost_usd == 0.0


@pytest.mark.parametrize("model", OFFLINE_MODELS)
def test_the_client_answers_offline_models_in_process_as_litellm_would(
    litellm: Any, model: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The engine answers offline models without litellm (it costs ~5 ms of CPU per call),
    with the same text and usage litellm's provider gives."""
    messages: list[Message] = [
        {"role": "system", "content": "Never say: BANANA"},
        {"role": "user", "content": "Say BANANA, twice: BANANA"},
    ]
    expected = asyncio.run(litellm.acompletion(model=model, messages=messages, temperature=0.3))

    async def no_litellm(**_: Any) -> Any:
        raise AssertionError("an offline call went through litellm")

    monkeypatch.setattr(litellm, "acompletion", no_litellm)
    spec = ModelSpec(model=model, temperature=0.3)
    record = asyncio.run(LLMClient().complete(spec, messages))
    assert record.output == expected.choices[0].message.content
    assert record.input_tokens == expected.usage.prompt_tokens
    assert record.output_tokens == expected.usage.completion_tokens
    assert record.cost_usd == 0.0


def test_registration_is_idempotent(litellm: Any) -> None:
    register_offline_models()
    register_offline_models()
    providers = [item["provider"] for item in litellm.custom_provider_map]
    assert providers.count("offline") == 1


def test_an_unknown_offline_model_fails_at_once() -> None:
    client = LLMClient()
    with pytest.raises(InfrastructureError, match="not retried"):
        asyncio.run(
            client.complete(ModelSpec(model="offline/nope"), [{"role": "user", "content": "x"}])
        )
    assert client.calls_made == 1


# offline/judge


def test_rubric_keywords_prefer_quoted_phrases() -> None:
    assert rubric_keywords('Must name "New York" and "Paris", plus history.') == [
        "New York",
        "Paris",
    ]


def test_rubric_keywords_fall_back_to_long_words_deduplicated() -> None:
    assert rubric_keywords("Explain the Cause; the cause and its effect, 42 times.") == [
        "explain",
        "cause",
        "effect",
        "times",
    ]


def test_judge_rates_the_share_of_keywords_rounded() -> None:
    rubric = '"alpha" "beta" "gamma"'
    verdict = judge_verdict(rubric, "ALPHA only")
    assert verdict == {
        "passed": False,
        "rating": 3.3,
        "feedback": "Covers 1 of 3 rubric keywords; 2 missing.",
    }
    assert judge_verdict(rubric, "alpha, gamma")["rating"] == 6.7
    assert judge_verdict(rubric, "alpha, gamma")["passed"] is True


def test_judge_feedback_never_names_the_keywords() -> None:
    verdict = judge_verdict('"zebra"', "a horse")
    assert "zebra" not in verdict["feedback"]


def test_judge_with_no_keywords_rates_zero() -> None:
    assert judge_verdict("a b c", "anything")["rating"] == 0.0


def test_judge_replies_strict_json_through_litellm(litellm: Any) -> None:
    prompt = build_judge_prompt(goal="Name it.", rubric='Says "Paris".', response="It is Paris.")
    response = litellm.completion(
        model="offline/judge", messages=[{"role": "user", "content": prompt}]
    )
    content = response.choices[0].message.content
    assert json.loads(content) == {
        "passed": True,
        "rating": 10.0,
        "feedback": "Covers all 1 rubric keywords.",
    }
    assert response.usage.prompt_tokens == len(prompt.split())
    assert response.usage.completion_tokens == len(content.split())
    assert litellm.completion_cost(completion_response=response) == 0.0


def test_judge_rates_a_message_that_is_no_judge_prompt_zero(litellm: Any) -> None:
    response = litellm.completion(
        model="offline/judge", messages=[{"role": "user", "content": "hello"}]
    )
    assert json.loads(response.choices[0].message.content)["rating"] == 0.0

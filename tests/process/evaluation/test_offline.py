"""The offline models through litellm's custom-provider path: the same text, usage and zero cost
as the engine's in-process answers, sync and async, registered once (their rules are
tests/unit/evaluation/test_offline.py)."""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from app.evaluation.engine.llm import LLMClient, load_litellm
from app.evaluation.engine.offline import (
    OFFLINE_MODELS,
    register_offline_models,
)
from app.evaluation.engine.prompts import build_judge_prompt
from app.evaluation.engine.types import Message, ModelSpec


@pytest.fixture(scope="module")
def litellm() -> Any:
    return load_litellm()


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

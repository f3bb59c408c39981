from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from app.evaluation.engine import simulated
from app.evaluation.engine.feedback import BINARY_FEEDBACK
from app.evaluation.engine.llm import LLMClient
from app.evaluation.engine.model_ids import model_id_problem
from app.evaluation.engine.offline import OFFLINE_MODELS
from app.evaluation.engine.prompts import GAUNTLET_2025_STYLE, SEQ_K_STYLE, build_actor_messages
from app.evaluation.engine.simulated import (
    SOLVER_SIM_MODEL,
    UNREGISTERED_REPLY,
    WEAK_SOLVER_SIM_MODEL,
    register_task,
    reply,
    success_probability,
)
from app.evaluation.engine.types import (
    ActorSection,
    CriticSection,
    JudgeSection,
    ModelSpec,
    TrialRecord,
)

CORRECT = "The answer is RIGHT."
WRONG = ("The answer is WRONG-A.", "The answer is WRONG-B.", "The answer is WRONG-C.")


@pytest.fixture(autouse=True)
def fresh_registry() -> Iterator[None]:
    simulated.clear_registry()
    yield
    simulated.clear_registry()


def prompt(number: int) -> str:
    return f"Synthetic task {number}: what is the answer?"


def register_many(count: int, *, difficulty: float = 0.0, seed: int = 0) -> list[str]:
    prompts = [prompt(number) for number in range(count)]
    for text in prompts:
        register_task(text, correct=CORRECT, wrong=WRONG, difficulty=difficulty, seed=seed)
    return prompts


def seq_prompt(
    task_prompt: str, attempt: int, feedback: str | None, style: str = SEQ_K_STYLE
) -> str:
    history = [
        TrialRecord(
            attempt_index=index,
            actor=ActorSection(model=SOLVER_SIM_MODEL, prompt=[], output=WRONG[0]),
            judge=JudgeSection(model=None, success=False, score=0.0),
            critic=CriticSection(feedback=feedback),
        )
        for index in range(1, attempt)
    ]
    messages = build_actor_messages(
        task_prompt,
        metric="seq@k",
        attempt_index=attempt,
        k=5,
        history=history,
        prompt_style=style,
    )
    return messages[0]["content"]


def test_the_simulated_models_are_offline_models_the_service_accepts() -> None:
    assert {SOLVER_SIM_MODEL, WEAK_SOLVER_SIM_MODEL} <= set(OFFLINE_MODELS)
    assert model_id_problem(SOLVER_SIM_MODEL) is None
    assert model_id_problem("offline/solver-sim-strong") is not None


def test_a_prompt_of_no_registered_task_gets_the_no_answer_reply() -> None:
    assert reply(SOLVER_SIM_MODEL, "never registered", temperature=0.0) == UNREGISTERED_REPLY
    with pytest.raises(ValueError, match="not a simulated model"):
        reply("offline/echo", "x", temperature=0.0)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"correct": []}, "correct must be"),
        ({"wrong": ["  "]}, "wrong must be"),
        ({"difficulty": 1.5}, "difficulty"),
        ({"seed": "7"}, "seed"),
        ({"prompt": ""}, "prompt"),
    ],
)
def test_registration_checks_its_arguments(changes: dict[str, object], message: str) -> None:
    arguments: dict[str, object] = {"prompt": "p", "correct": "a", "wrong": "b"}
    arguments.update(changes)
    with pytest.raises(ValueError, match=message):
        register_task(**arguments)  # type: ignore[arg-type]


def test_replies_are_deterministic_for_a_seed_and_differ_across_seeds() -> None:
    def draw_all(seed: int) -> list[str]:
        simulated.clear_registry()
        prompts = register_many(60, difficulty=0.3, seed=seed)
        return [reply(SOLVER_SIM_MODEL, text, temperature=1.0) for text in prompts]

    assert draw_all(1) == draw_all(1)
    assert draw_all(1) != draw_all(2)


def test_the_error_rate_grows_with_temperature() -> None:
    prompts = [prompt(number) for number in range(600)]

    def success_rate(temperature: float) -> float:
        simulated.clear_registry()
        register_many(600)
        replies = [reply(SOLVER_SIM_MODEL, text, temperature=temperature) for text in prompts]
        return sum(text == CORRECT for text in replies) / len(replies)

    cold, warm, hot = success_rate(0.0), success_rate(1.0), success_rate(2.0)
    assert cold > warm > hot
    # The documented rates (difficulty 0): 0.8, 0.5 and 0.2; 600 draws land within 0.06.
    assert abs(cold - 0.8) < 0.06 and abs(warm - 0.5) < 0.06 and abs(hot - 0.2) < 0.06


def test_pass_k_samples_repeat_at_temperature_zero_and_vary_when_warm() -> None:
    prompts = register_many(30, difficulty=0.3)
    for text in prompts:
        assert len({reply(SOLVER_SIM_MODEL, text, temperature=0.0) for _ in range(5)}) == 1
    varied = 0
    for text in prompts:
        varied += len({reply(SOLVER_SIM_MODEL, text, temperature=1.2) for _ in range(5)}) > 1
    assert varied >= 20
    # Hotter samples also spread over more distinct wrong answers.
    simulated.clear_registry()
    register_many(30, difficulty=0.9)
    cool_wrong = {reply(SOLVER_SIM_MODEL, text, temperature=0.2) for text in prompts for _ in "ab"}
    hot_wrong = {reply(SOLVER_SIM_MODEL, text, temperature=1.5) for text in prompts for _ in "ab"}
    assert len(cool_wrong - {CORRECT}) < len(hot_wrong - {CORRECT}) == len(WRONG)


def test_registering_again_restarts_the_sample_numbering() -> None:
    text = register_many(1, difficulty=0.4)[0]
    first = [reply(SOLVER_SIM_MODEL, text, temperature=1.0) for _ in range(6)]
    register_many(1, difficulty=0.4)
    assert [reply(SOLVER_SIM_MODEL, text, temperature=1.0) for _ in range(6)] == first


def test_feedback_raises_the_chance_and_informative_feedback_most() -> None:
    base = success_probability(SOLVER_SIM_MODEL, 1.0, 0.3)
    binary = success_probability(SOLVER_SIM_MODEL, 1.0, 0.3, feedback=[BINARY_FEEDBACK])
    informative = success_probability(
        SOLVER_SIM_MODEL, 1.0, 0.3, feedback=["Shape correct; 7 of 9 cells match."]
    )
    none = success_probability(SOLVER_SIM_MODEL, 1.0, 0.3, feedback=["(no feedback)"])
    assert none == base < binary < informative < 1.0
    assert success_probability(SOLVER_SIM_MODEL, 0.0, 0.0, answerable=False) == 0.0
    weak = success_probability(WEAK_SOLVER_SIM_MODEL, 1.0, 0.3)
    assert 0.0 < weak < base


@pytest.mark.parametrize("style", [SEQ_K_STYLE, GAUNTLET_2025_STYLE])
def test_a_seq_k_prompt_with_feedback_solves_a_superset_of_what_it_solves_without(
    style: str,
) -> None:
    prompts = register_many(200, difficulty=0.4)
    solved: dict[str | None, set[int]] = {}
    for feedback in (None, BINARY_FEEDBACK, "Wrong value; the latest note disagrees."):
        solved[feedback] = {
            number
            for number, text in enumerate(prompts)
            if reply(SOLVER_SIM_MODEL, seq_prompt(text, 3, feedback, style), temperature=1.0)
            == CORRECT
        }
    no_feedback, binary, informative = solved.values()
    # The same draw decides each attempt: a better feedback can only add successes.
    assert no_feedback < binary < informative


def test_both_prompt_styles_read_the_same_feedback() -> None:
    """The simulation reads each earlier attempt's feedback from either wording, so a run gets
    the same draws whichever style it uses."""
    prompts = register_many(100, difficulty=0.4)
    for feedback in (None, "", BINARY_FEEDBACK, "Check the units.\n\nAnd the sign."):
        for text in prompts:
            replies = {
                reply(SOLVER_SIM_MODEL, seq_prompt(text, 4, feedback, style), temperature=1.0)
                for style in (SEQ_K_STYLE, GAUNTLET_2025_STYLE)
            }
            assert len(replies) == 1


def test_a_seq_k_attempt_shares_its_draw_with_the_matching_pass_k_sample() -> None:
    prompts = register_many(100, difficulty=0.3)
    for text in prompts:
        samples = [reply(SOLVER_SIM_MODEL, text, temperature=0.9) for _ in range(3)]
        for attempt, sample in enumerate(samples, 1):
            seq_reply = reply(SOLVER_SIM_MODEL, seq_prompt(text, attempt, None), temperature=0.9)
            assert seq_reply == sample


def test_an_unanswerable_task_is_never_solved() -> None:
    register_task("no evidence here", correct=CORRECT, wrong=WRONG, answerable=False)
    replies = {reply(SOLVER_SIM_MODEL, "no evidence here", temperature=0.7) for _ in range(50)}
    assert CORRECT not in replies


def test_the_registry_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(simulated, "MAX_REGISTERED_TASKS", 3)
    prompts = register_many(5)
    assert simulated.registered_task(prompts[0]) is None
    assert simulated.registered_task(prompts[4]) is not None


def test_through_litellm_temperature_reaches_the_simulation_and_usage_counts_words() -> None:
    prompts = register_many(20, difficulty=0.3)
    client = LLMClient()

    async def outputs(temperature: float) -> list[list[str]]:
        spec = ModelSpec(SOLVER_SIM_MODEL, temperature=temperature)
        runs = []
        for text in prompts:
            records = [
                await client.complete(spec, [{"role": "user", "content": text}]) for _ in "abc"
            ]
            runs.append([record.output for record in records])
        return runs

    cold = asyncio.run(outputs(0.0))
    assert all(len(set(samples)) == 1 for samples in cold)
    warm = asyncio.run(outputs(1.5))
    assert any(len(set(samples)) > 1 for samples in warm)

    record = asyncio.run(
        client.complete(
            ModelSpec(SOLVER_SIM_MODEL, temperature=0.0, system_prompt="Be brief."),
            [{"role": "user", "content": prompts[0]}],
        )
    )
    assert record.input_tokens == len(prompts[0].split()) + 2
    assert record.output_tokens == len(record.output.split())
    assert record.cost_usd == 0.0

from __future__ import annotations

import asyncio
import dataclasses
import os
from collections.abc import Callable
from typing import Any

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from app.evaluation.engine.engine import run_trials
from app.evaluation.engine.feedback import (
    COMPACT_LIMIT_CHARS,
    FEEDBACK_MODES,
    TRUNCATION_MARKER,
    render_feedback,
    validate_feedback_mode,
)
from app.evaluation.engine.llm import LLMClient
from app.evaluation.engine.types import (
    ActorSection,
    CallRecord,
    CriticSection,
    InfrastructureError,
    JudgeSection,
    Message,
    Metric,
    ModelSpec,
    TrialRecord,
    VerifierResult,
)
from app.evaluation.engine.verifiers import (
    ContainsConfig,
    ContainsVerifier,
    RubricConfig,
    RubricVerifier,
)

ACTOR = ModelSpec(model="fake/actor")
TASK = "What is 6 x 7?"


class ScriptedActor:
    """An LLMClient stand-in: answers from a script, logs calls, can hold calls at a barrier."""

    def __init__(
        self,
        outputs: list[str] | Callable[[int], str],
        *,
        barrier: int = 0,
        fail_on_call: int | None = None,
        log: list[str] | None = None,
    ) -> None:
        self.outputs = outputs
        self.prompts: list[list[Message]] = []
        self.log = log if log is not None else []
        self.fail_on_call = fail_on_call
        self.in_flight = 0
        self.max_in_flight = 0
        self._barrier = barrier
        self._arrived = 0
        self._all_arrived = asyncio.Event()

    async def complete(self, spec: ModelSpec, messages: list[Message]) -> CallRecord:
        self.prompts.append(messages)
        call_number = len(self.prompts)
        self.log.append(f"call {call_number}")
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if self._barrier:
                # Every call waits for all `barrier` calls to start: run one at a time, the
                # test times out instead of passing.
                self._arrived += 1
                if self._arrived >= self._barrier:
                    self._all_arrived.set()
                await asyncio.wait_for(self._all_arrived.wait(), timeout=2)
            else:
                await asyncio.sleep(0)
            if call_number == self.fail_on_call:
                raise InfrastructureError("model fake/actor failed after 4 tries: boom")
        finally:
            self.in_flight -= 1
        outputs = self.outputs
        text = outputs(call_number) if callable(outputs) else outputs[call_number - 1]
        return CallRecord(
            model=spec.model,
            prompt=messages,
            output=text,
            input_tokens=10,
            output_tokens=5,
            cost_usd=0.01,
            elapsed_ms=100,
        )


def contains_42() -> ContainsVerifier:
    return ContainsVerifier(ContainsConfig(pattern="42"))


def run_engine(
    llm: Any,
    *,
    metric: Metric,
    k: int,
    feedback_mode: str = "binary",
    existing: list[TrialRecord] | None = None,
    verifier: Any = None,
    reported: list[TrialRecord] | None = None,
    log: list[str] | None = None,
) -> list[TrialRecord]:
    async def on_trial(trial: TrialRecord) -> None:
        if reported is not None:
            reported.append(trial)
        if log is not None:
            log.append(f"report {trial.attempt_index}")

    return asyncio.run(
        run_trials(
            task_prompt=TASK,
            actor=ACTOR,
            verifier=verifier or contains_42(),
            metric=metric,
            k=k,
            feedback_mode=feedback_mode,
            llm=llm,
            existing=existing or [],
            on_trial=on_trial,
        )
    )


def make_trial(index: int, output: str, *, success: bool, feedback: str | None) -> TrialRecord:
    return TrialRecord(
        attempt_index=index,
        actor=ActorSection(model=ACTOR.model, prompt=[], output=output),
        judge=JudgeSection(model=None, success=success, score=float(success)),
        critic=CriticSection(feedback=feedback),
    )


# pass@k


def test_pass_at_k_runs_all_k_samples_concurrently() -> None:
    actor = ScriptedActor(["42"] * 5, barrier=5)
    trials = run_engine(actor, metric="pass@k", k=5)
    assert actor.max_in_flight == 5
    assert [trial.attempt_index for trial in trials] == [1, 2, 3, 4, 5]


def test_pass_at_k_never_stops_early_and_gives_no_feedback() -> None:
    actor = ScriptedActor(["42", "no", "42", "no"])
    trials = run_engine(actor, metric="pass@k", k=4)
    assert len(actor.prompts) == 4
    assert [trial.success for trial in trials] == [True, False, True, False]
    assert all(trial.critic.feedback is None for trial in trials)


def test_pass_at_k_sends_the_task_prompt_alone() -> None:
    actor = ScriptedActor(["no"] * 3)
    run_engine(actor, metric="pass@k", k=3)
    assert all(prompt == [{"role": "user", "content": TASK}] for prompt in actor.prompts)


def test_pass_at_k_resumes_by_running_only_the_missing_indices() -> None:
    existing = [
        make_trial(1, "no", success=False, feedback=None),
        make_trial(3, "42", success=True, feedback=None),
    ]
    actor = ScriptedActor(["no", "no"])
    reported: list[TrialRecord] = []
    trials = run_engine(actor, metric="pass@k", k=4, existing=existing, reported=reported)
    assert len(actor.prompts) == 2
    assert [trial.attempt_index for trial in trials] == [1, 2, 3, 4]
    assert sorted(trial.attempt_index for trial in reported) == [2, 4]


def test_pass_at_k_failure_raises_the_infrastructure_error_itself() -> None:
    actor = ScriptedActor(["42"] * 3, fail_on_call=2)
    with pytest.raises(InfrastructureError, match="boom"):
        run_engine(actor, metric="pass@k", k=3)


# seq@k


def test_seq_at_k_prompts_are_exact() -> None:
    actor = ScriptedActor(["41", "43", "42"])
    run_engine(actor, metric="seq@k", k=3)
    contents = [prompt[-1]["content"] for prompt in actor.prompts]
    first = " If this attempt does not pass, you will receive feedback and can revise it on the "
    later = " Review your previous attempt(s) and the feedback below, then provide an improved "
    assert contents == [
        f"What is 6 x 7?\n\nThis is attempt 1 of 3.{first}remaining attempts.",
        f"What is 6 x 7?\n\nThis is attempt 2 of 3.{later}answer.\n\n"
        "<PreviousAttempt 1>\n41\n</PreviousAttempt 1>\n\n<Feedback 1>\nIncorrect.\n</Feedback 1>",
        f"What is 6 x 7?\n\nThis is attempt 3 of 3.{later}answer.\n\n"
        "<PreviousAttempt 1>\n41\n</PreviousAttempt 1>\n\n<Feedback 1>\nIncorrect.\n</Feedback 1>"
        "\n\n<PreviousAttempt 2>\n43\n</PreviousAttempt 2>\n\n<Feedback 2>\nIncorrect.\n"
        "</Feedback 2>",
    ]
    assert all(len(prompt) == 1 and prompt[0]["role"] == "user" for prompt in actor.prompts)


def test_seq_at_k_stops_at_the_first_success() -> None:
    actor = ScriptedActor(["41", "42", "42", "42"])
    trials = run_engine(actor, metric="seq@k", k=4)
    assert len(actor.prompts) == 2
    assert [trial.success for trial in trials] == [False, True]
    assert trials[0].critic.feedback == "Incorrect."
    assert trials[1].critic.feedback is None


def test_seq_at_k_gives_feedback_to_the_last_failed_trial() -> None:
    trials = run_engine(ScriptedActor(["1", "2"]), metric="seq@k", k=2, feedback_mode="raw")
    assert [trial.critic.feedback for trial in trials] == ["expected text not found"] * 2


def test_seq_at_k_feedback_never_carries_verifier_details() -> None:
    verifier = RubricVerifier(RubricConfig(correct_keywords=["SECRETKEY"]))
    actor = ScriptedActor(["nope", "still nope"])
    run_engine(actor, metric="seq@k", k=2, feedback_mode="raw", verifier=verifier)
    second = actor.prompts[1][-1]["content"]
    assert "matched 0 of 1 expected keywords" in second
    assert "SECRETKEY" not in second


def test_seq_at_k_resumes_after_existing_trials() -> None:
    existing = [
        make_trial(1, "first try", success=False, feedback="Too low."),
        make_trial(2, "second try", success=False, feedback="Too high."),
    ]
    actor = ScriptedActor(["42"])
    trials = run_engine(actor, metric="seq@k", k=4, existing=existing)
    assert [trial.attempt_index for trial in trials] == [1, 2, 3]
    assert actor.prompts[0][-1]["content"] == (
        "What is 6 x 7?\n\nThis is attempt 3 of 4. Review your previous attempt(s) and the "
        "feedback below, then provide an improved answer.\n\n"
        "<PreviousAttempt 1>\nfirst try\n</PreviousAttempt 1>\n\n<Feedback 1>\nToo low.\n"
        "</Feedback 1>\n\n<PreviousAttempt 2>\nsecond try\n</PreviousAttempt 2>\n\n"
        "<Feedback 2>\nToo high.\n</Feedback 2>"
    )


def test_seq_at_k_runs_nothing_after_an_existing_success() -> None:
    existing = [make_trial(1, "42", success=True, feedback=None)]
    actor = ScriptedActor([])
    trials = run_engine(actor, metric="seq@k", k=5, existing=existing)
    assert actor.prompts == []
    assert trials == existing


def test_seq_at_k_rejects_existing_trials_with_gaps() -> None:
    existing = [make_trial(2, "x", success=False, feedback="f")]
    with pytest.raises(ValueError, match="without gaps"):
        run_engine(ScriptedActor(["42"]), metric="seq@k", k=3, existing=existing)


def test_seq_at_k_reports_each_trial_before_the_next_attempt_starts() -> None:
    log: list[str] = []
    actor = ScriptedActor(["1", "2", "42"], log=log)
    run_engine(actor, metric="seq@k", k=3, log=log)
    assert log == ["call 1", "report 1", "call 2", "report 2", "call 3", "report 3"]


def test_seq_at_k_infrastructure_error_keeps_earlier_reports() -> None:
    reported: list[TrialRecord] = []
    actor = ScriptedActor(["1", "2", "3"], fail_on_call=2)
    with pytest.raises(InfrastructureError):
        run_engine(actor, metric="seq@k", k=3, reported=reported)
    assert [trial.attempt_index for trial in reported] == [1]
    assert reported[0].critic.feedback == "Incorrect."


def test_seq_at_k_on_the_offline_echo_model() -> None:
    # Echo repeats the whole prompt, which holds the task's own "6 x 7": attempt 1 succeeds.
    verifier = ContainsVerifier(ContainsConfig(pattern="6 X 7"))
    trials = asyncio.run(
        run_trials(
            task_prompt=TASK,
            actor=ModelSpec(model="offline/echo"),
            verifier=verifier,
            metric="seq@k",
            k=3,
            feedback_mode="binary",
            llm=LLMClient(),
        )
    )
    assert len(trials) == 1
    trial = trials[0]
    assert trial.success is True
    assert trial.actor.output == (
        "What is 6 x 7?\n\nThis is attempt 1 of 3. If this attempt does not pass, you will "
        "receive feedback and can revise it on the remaining attempts."
    )
    assert trial.actor.input_tokens == trial.actor.output_tokens == 29
    assert trial.actor.cost_usd == 0.0
    assert trial.judge.model is None
    assert TrialRecord.from_dict(trial.to_dict()) == trial


def test_a_trial_record_as_a_dict_is_what_asdict_gives_and_shares_nothing() -> None:
    details: dict[str, Any] = {"got": [[1, 2], [3, 4]], "shape": (2, 2), "note": None}
    call = {"model": "judge", "prompt": [{"role": "user", "content": "q"}], "output": "yes"}
    trial = TrialRecord(
        attempt_index=2,
        actor=ActorSection(
            model="m", prompt=[{"role": "user", "content": "p"}], output="o", cost_usd=0.5
        ),
        judge=JudgeSection(
            model="judge", success=True, score=1.0, details=details, rating=7.0, calls=[call]
        ),
        critic=CriticSection(model="critic", feedback="f", calls=[dict(call)]),
    )
    document = trial.to_dict()
    expected = dataclasses.asdict(trial)
    # A call's bounding fields are written only when something was bounded.
    for unset in ("output_truncated_chars", "reported_usage"):
        del expected["actor"][unset]
    assert document == expected
    assert list(document) == list(expected)
    for section in ("actor", "judge", "critic"):
        assert list(document[section]) == list(expected[section])
    assert trial.actor.to_dict() == expected["actor"]
    # A copy, as asdict's: changing it leaves the record as it was.
    document["actor"]["prompt"][0]["content"] = "changed"
    document["judge"]["details"]["got"][0][0] = 9
    document["judge"]["calls"][0]["prompt"].append({"role": "user", "content": "more"})
    document["critic"]["calls"].clear()
    assert trial.actor.prompt == [{"role": "user", "content": "p"}]
    assert details["got"] == [[1, 2], [3, 4]]
    assert call["prompt"] == [{"role": "user", "content": "q"}]
    assert len(trial.critic.calls) == 1


# arguments


@pytest.mark.parametrize(
    ("metric", "k", "mode"),
    [("pass@k", 0, "binary"), ("seq@k", 2, "telepathy"), ("best@k", 2, "binary")],
)
def test_invalid_arguments_are_rejected(metric: Any, k: int, mode: str) -> None:
    with pytest.raises(ValueError):
        run_engine(ScriptedActor(["42"] * 3), metric=metric, k=k, feedback_mode=mode)


# feedback modes


def test_feedback_modes_render_only_public_parts() -> None:
    result = VerifierResult(
        success=False,
        score=0.0,
        raw_eval_output="matched 1 of 2 expected keywords",
        details={"missing_keywords": ["SECRET"]},
        feedback="Say more about the cause.",
    )
    assert render_feedback("binary", result) == "Incorrect."
    assert render_feedback("raw", result) == "matched 1 of 2 expected keywords"
    assert render_feedback("compact", result) == "matched 1 of 2 expected keywords"
    assert render_feedback("judge", result) == "Say more about the cause."
    assert all("SECRET" not in render_feedback(mode, result) for mode in FEEDBACK_MODES)


def test_compact_feedback_is_bounded_and_marked() -> None:
    result = VerifierResult(success=False, score=0.0, raw_eval_output="é" * 1000)
    text = render_feedback("compact", result)
    assert text == "é" * COMPACT_LIMIT_CHARS + TRUNCATION_MARKER


def test_judge_feedback_falls_back_to_the_raw_output() -> None:
    result = VerifierResult(success=False, score=0.0, raw_eval_output="rating 3/10", feedback=" ")
    assert render_feedback("judge", result) == "rating 3/10"


def test_unknown_feedback_mode_is_rejected_naming_the_known_ones() -> None:
    with pytest.raises(ValueError, match="binary, compact, judge, raw"):
        validate_feedback_mode("critic")

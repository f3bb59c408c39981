from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import benchmarks.jsonl as jsonl
from app.evaluation.engine.benchmark import AttemptView, Benchmark, Task
from app.evaluation.engine.llm import LLMClient
from app.evaluation.engine.runner import MemoryRunStore, RunConfig, run_benchmark
from app.evaluation.engine.types import ModelSpec, VerifierResult
from tests.fixtures.eval_benchmark import ScriptedClient

BENCHMARK = Benchmark.load("jsonl")


def write_rows(tmp_path: Path, *rows: Any, raw: str = "") -> str:
    path = tmp_path / "data.jsonl"
    lines = [json.dumps(row) if not isinstance(row, str) else row for row in rows]
    path.write_text("\n".join(lines) + "\n" + raw, encoding="utf-8")
    return str(path)


def verify(task: Task, output: str, judge_model: str | None = None) -> VerifierResult:
    view = AttemptView(output=output, attempt_index=1, prompt=[])
    result = jsonl.verify(task, view, judge_model=judge_model)
    return asyncio.run(result)


def one_task(tmp_path: Path, row: dict[str, Any]) -> Task:
    return BENCHMARK.load_tasks({"path": write_rows(tmp_path, row)})[0]


def test_the_bundled_example_has_ten_stable_rows() -> None:
    tasks = BENCHMARK.load_tasks({"path": "example.jsonl"})
    assert [task.canonical_index for task in tasks] == list(range(1, 11))
    assert tasks[0].task_id == "capital-france"
    assert {task.metadata["grading"] for task in tasks} == {"rubric", "regex", "answer", "criteria"}
    assert BENCHMARK.slice_name({"path": "example.jsonl"}) == "jsonl-example"
    assert BENCHMARK.variants()[0].name == "example-passk.yaml"


def test_rubric_rows_grade_correct_first(tmp_path: Path) -> None:
    task = one_task(
        tmp_path,
        {
            "prompt": "Capital of Australia?",
            "correct_keywords": ["Canberra"],
            "incorrect_patterns": ["Sydney"],
        },
    )
    assert verify(task, "Not Sydney, it is Canberra.").success
    wrong = verify(task, "Sydney")
    assert not wrong.success
    assert "known incorrect answer" in wrong.raw_eval_output
    assert "Canberra" not in wrong.raw_eval_output


def test_rubric_scores_are_graded(tmp_path: Path) -> None:
    task = one_task(tmp_path, {"prompt": "p", "correct_keywords": ["a1", "b2", "c3", "d4"]})
    assert verify(task, "a1 and b2").score == 0.5


def test_regex_rows(tmp_path: Path) -> None:
    task = one_task(tmp_path, {"prompt": "year?", "regex": r"\b1969\b"})
    assert verify(task, "In 1969.").success
    assert not verify(task, "19690").success


def test_exact_answers_ignore_case_and_spacing_only(tmp_path: Path) -> None:
    task = one_task(tmp_path, {"prompt": "p", "answer": ["New  York", 42]})
    assert verify(task, "  new york\n").success
    assert verify(task, "42").success
    failed = verify(task, "New York City")
    assert not failed.success
    assert "New" not in failed.raw_eval_output


def test_criteria_rows_need_a_judge_and_record_its_calls_once(tmp_path: Path) -> None:
    task = one_task(tmp_path, {"prompt": "Describe fire.", "criteria": 'Mentions "hot".'})
    with pytest.raises(ValueError, match="judge_model"):
        verify(task, "It is hot.")

    store = MemoryRunStore()
    config = RunConfig(
        benchmark="jsonl",
        metric="pass@k",
        k=1,
        feedback_mode="binary",
        actor=ModelSpec("fake/actor"),
        judge=ModelSpec("fake/judge"),
        options={"path": str(tmp_path / "data.jsonl"), "judge_votes": 3},
    )

    def respond(spec: ModelSpec, messages: list[dict[str, str]]) -> str:
        if spec.model == "fake/judge":
            return '{"passed": true, "rating": 9, "feedback": "good"}'
        return "It is hot."

    asyncio.run(run_benchmark(BENCHMARK, config, store, ScriptedClient(respond)))
    judge = store.trials[1][1].judge
    assert judge.success and judge.rating == 9
    assert judge.model == "fake/judge"
    assert len(judge.calls) == 3


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({"prompt": "p"}, "exactly one of"),
        ({"prompt": "p", "answer": "a", "regex": "a"}, "found: regex, answer"),
        ({"prompt": "", "answer": "a"}, "prompt must be non-empty"),
        ({"prompt": "p", "regex": "("}, "invalid regular expression"),
        ({"prompt": "p", "correct_keywords": [" "]}, "blank"),
        ({"prompt": "p", "answer": []}, "answer must be"),
        ("[1, 2]", "JSON object"),
        ("{not json", "not JSON"),
    ],
)
def test_bad_rows_are_named_by_line(tmp_path: Path, row: Any, message: str) -> None:
    path = write_rows(tmp_path, {"prompt": "ok", "answer": "x"}, "", row)
    with pytest.raises(ValueError, match=message) as error:
        BENCHMARK.load_tasks({"path": path})
    assert "line 3" in str(error.value)


def test_blank_lines_do_not_count_and_ids_default_to_row_numbers(tmp_path: Path) -> None:
    path = write_rows(
        tmp_path, {"prompt": "a", "answer": "x"}, "", {"prompt": "b", "answer": "y", "id": "named"}
    )
    tasks = BENCHMARK.load_tasks({"path": path})
    assert [(task.canonical_index, task.task_id) for task in tasks] == [(1, "row-1"), (2, "named")]


def test_a_missing_file_is_named() -> None:
    with pytest.raises(ValueError, match=r"no JSONL file at 'nowhere\.jsonl'"):
        BENCHMARK.load_tasks({"path": "nowhere.jsonl"})


def test_hint_feedback_adds_the_rows_public_hint(tmp_path: Path) -> None:
    task = one_task(tmp_path, {"prompt": "p", "answer": "Tokyo", "hint": "Formerly Edo."})
    result = verify(task, "Kyoto")
    view = AttemptView(output="Kyoto", attempt_index=1, prompt=[])
    text = jsonl.feedback(task, view, result, "hint", critic_model=None)
    assert text.endswith("\nHint: Formerly Edo.")
    assert "Tokyo" not in text


def test_the_example_runs_offline_with_echo_some_rows_pass_and_none_leak() -> None:
    store = MemoryRunStore()
    config = RunConfig(
        benchmark="jsonl",
        metric="seq@k",
        k=2,
        feedback_mode="hint",
        actor=ModelSpec("offline/echo"),
        judge=ModelSpec("offline/judge"),
        options={"path": "example.jsonl"},
    )
    result = asyncio.run(run_benchmark(BENCHMARK, config, store, LLMClient()))
    solved = sorted(
        index
        for index, trials in store.trials.items()
        if any(trial.success for trial in trials.values())
    )
    assert solved == [1, 3, 7]
    assert result.summary["curves"]["seq_at"] == [0.3, 0.3]
    tasks = {task.canonical_index: task for task in BENCHMARK.load_tasks(config.options)}
    for index, trials in store.trials.items():
        key = tasks[index].answer
        hidden = key.get("accepted") or key.get("correct_keywords") or []
        for trial in trials.values():
            # Echo repeats the task prompt, which may name the answer itself (row 1 does);
            # what is left is what the engine added: attempt lines and feedback.
            added = trial.actor.prompt[-1]["content"].replace(tasks[index].prompt, "")
            for secret in hidden:
                assert secret.casefold() not in added.casefold(), (index, secret)

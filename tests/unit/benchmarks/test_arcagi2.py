from __future__ import annotations

import asyncio
import json
import os
import random
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import benchmarks.arcagi2 as arc
from app.evaluation.commands.variant import load_prices, parse_variant, run_config_from_variant
from app.evaluation.engine import simulated
from app.evaluation.engine.benchmark import AttemptView, Benchmark, Task
from app.evaluation.engine.feedback import render_feedback
from app.evaluation.engine.llm import LLMClient
from app.evaluation.engine.runner import MemoryRunStore, RunConfig, RunResult, run_benchmark
from app.evaluation.engine.types import ModelSpec, VerifierResult

BENCHMARK = Benchmark.load("arcagi2")
SIM = "offline/solver-sim"


def view(output: str) -> AttemptView:
    return AttemptView(output=output, attempt_index=1, prompt=[])


def check(task: Task, output: str) -> VerifierResult:
    return arc.verify(task, view(output), judge_model=None)


def cell_match(task: Task, output: str) -> str:
    result = check(task, output)
    return arc.feedback(task, view(output), result, "cell_match", critic_model=None)


def grid_task(answers: list[list[list[int]]]) -> Task:
    return Task(task_id="t", canonical_index=1, prompt="p", answer=answers)


def write_split(root: Path, split: str, tasks: dict[str, Any], order: list[str] | None) -> str:
    (root / split).mkdir(parents=True, exist_ok=True)
    for task_id, document in tasks.items():
        (root / split / f"{task_id}.json").write_text(json.dumps(document), encoding="utf-8")
    if order is not None:
        (root / f"{split}.txt").write_text("\n".join(order) + "\n", encoding="utf-8")
    return str(root)


PAIR = {"input": [[1, 0]], "output": [[0, 1]]}


# Loading


def test_the_bundled_sample_loads_in_its_order_file_with_stable_indices() -> None:
    first = BENCHMARK.load_tasks({})
    again = BENCHMARK.load_tasks({"split": "evaluation"})
    assert [task.canonical_index for task in first] == list(range(1, 11))
    order = (arc.BUNDLED_DATA_DIR / "evaluation.txt").read_text().split()
    assert [task.task_id for task in first] == order
    assert [(task.task_id, task.prompt) for task in first] == [
        (task.task_id, task.prompt) for task in again
    ]
    assert BENCHMARK.slice_name({}) == "arcagi2-sample"
    assert BENCHMARK.slice_name({"seed": 3}) == "arcagi2-sample-seed3"
    assert {path.name for path in BENCHMARK.variants()} >= {
        "sample_passk.yaml",
        "sample_seqk.yaml",
    }


def test_the_prompt_shows_the_examples_and_test_input_but_never_the_answer() -> None:
    for task in BENCHMARK.load_tasks({}):
        assert task.prompt.startswith(arc.PUZZLE_INTRO) and task.prompt.endswith(arc.ANSWER_FORMAT)
        assert "--Example 2--" in task.prompt and "--Test Input--\n[[" in task.prompt
        for answer in task.answer:
            for form in (json.dumps(answer), json.dumps(answer, separators=(",", ":"))):
                assert form not in task.prompt
                assert form not in json.dumps(task.metadata)


def test_a_data_dir_without_order_file_is_read_by_file_name(tmp_path: Path) -> None:
    data_dir = write_split(
        tmp_path,
        "training",
        {
            "bbb": {"train": [PAIR], "test": [PAIR]},
            "aaa": {"train": [PAIR], "test": [PAIR, {"input": [[2]], "output": [[3]]}]},
        },
        order=None,
    )
    tasks = BENCHMARK.load_tasks({"data_dir": data_dir, "split": "training"})
    # A file is one task, its test pairs together, as seq_k numbers them.
    assert [(task.canonical_index, task.task_id) for task in tasks] == [(1, "aaa"), (2, "bbb")]
    assert tasks[0].answer == [[[0, 1]], [[3]]]
    assert tasks[0].metadata["test_pairs"] == 2
    assert (
        "--Test Inputs--\n--Test Input 0--\n\n[[1, 0]]\n\n--Test Input 1--\n\n[[2]]\n"
        "--End of Test Inputs--"
    ) in tasks[0].prompt
    assert BENCHMARK.slice_name({"data_dir": data_dir, "split": "training"}) == ("arcagi2-training")


def test_an_order_file_fixes_which_tasks_exist_and_their_order(tmp_path: Path) -> None:
    data_dir = write_split(
        tmp_path,
        "evaluation",
        {name: {"train": [PAIR], "test": [PAIR]} for name in ("aaa", "bbb", "ccc")},
        order=["# newest last", "ccc", "", "aaa.json"],
    )
    tasks = BENCHMARK.load_tasks({"data_dir": data_dir})
    assert [task.task_id for task in tasks] == ["ccc", "aaa"]


@pytest.mark.parametrize(
    ("document", "order", "message"),
    [
        ({"train": [PAIR], "test": [{"input": [[1]]}]}, ["t"], "no output"),
        ({"train": [PAIR], "test": [{"input": [[1, 2], [3]], "output": [[1]]}]}, ["t"], "grid"),
        ({"train": [PAIR], "test": [{"input": [[12]], "output": [[1]]}]}, ["t"], "0-9"),
        ({"train": [], "test": [PAIR]}, ["t"], "train must be"),
        ({"train": [PAIR], "test": [PAIR]}, ["../secret"], "bad task id"),
        ({"train": [PAIR], "test": [PAIR]}, ["t", "t"], "more than once"),
        ({"train": [PAIR], "test": [PAIR]}, ["missing"], "no task file"),
    ],
)
def test_bad_data_is_named(
    tmp_path: Path, document: dict[str, Any], order: list[str], message: str
) -> None:
    data_dir = write_split(tmp_path, "evaluation", {"t": document}, order=order)
    with pytest.raises(ValueError, match=message):
        BENCHMARK.load_tasks({"data_dir": data_dir})


def test_a_missing_split_or_folder_is_named(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="no split 'nope'"):
        BENCHMARK.load_tasks({"data_dir": str(tmp_path), "split": "nope"})
    with pytest.raises(ValueError, match="no ARC data folder"):
        BENCHMARK.load_tasks({"data_dir": str(tmp_path / "absent")})
    with pytest.raises(ValueError, match="plain folder name"):
        BENCHMARK.load_tasks({"split": "../evaluation"})


# Verification


ANSWER = [[1, 2, 3], [4, 5, 6], [7, 8, 9]]
SECOND = [[5, 5]]


@pytest.mark.parametrize(
    ("output", "method"),
    [
        ('{"test": [[[1, 2, 3], [4, 5, 6], [7, 8, 9]]]}', "json"),
        (
            "The rule mirrors it:\n```json\n[[1, 2, 3],\n [4, 5, 6],\n [7, 8, 9]]\n```\nDone.",
            "json",
        ),
        ("[[1,2,3],[4,5,6],[7,8,9]]", "json"),
        ('{"test": [[[1,2,3,],[4,5,6],[7,8,9],],]}', "json"),
        ("{\u201ctest\u201d\uff1a [[[1,2,3] [4,5,6] [7,8,9]]]}", "json"),
        ('[{"output": [[1, 2, 3], [4, 5, 6], [7, 8, 9]]}]', "json"),
        ('{"test": [[[1,2,3],[4,5,6],[7,8,9]]', "json"),
        ("Rows: 1 2 3, then 4 5 6, then 7 8 9.", "digit_stream_repair"),
    ],
)
def test_right_and_repairable_outputs_pass(output: str, method: str) -> None:
    result = check(grid_task([ANSWER]), output)
    assert result.success and result.score == 1.0
    assert result.raw_eval_output == ""
    assert result.details["parse_method"] == method
    assert result.details["prediction"] == [ANSWER]
    assert result.details["comparison"]["tests"] == [
        {
            "test_index": 0,
            "size_match": True,
            "exact_match": True,
            "mismatch_count": 0,
            "total_cells": 9,
            "cell_accuracy": 1.0,
        }
    ]


@pytest.mark.parametrize(
    ("output", "public", "error"),
    [
        (
            "[[1,2,3],[4,5,6],[7,8,0]]",
            "incorrect_output\nOutput grid: size correct: True; content match accuracy: 88.89% "
            "(8 of 9 cells match).",
            None,
        ),
        (
            "[[1,2,3],[4,5,6]]",
            "format_warning: Output grid 1 is 2x3, but the expected size differs — check the "
            "transformation rule.\nincorrect_output\nOutput grid: size correct: False.",
            None,
        ),
        ("no grid here", f"{arc.UNREADABLE}\n{arc.UNREADABLE_HINT}", arc.NO_JSON),
        ('{"test": [[[12]]]}', f"{arc.UNREADABLE}\n{arc.UNREADABLE_HINT}", arc.BAD_CELL),
        ("[[1,2,3],[4,5],[7,8,9]]", f"{arc.UNREADABLE}\n{arc.UNREADABLE_HINT}", arc.RAGGED_GRID),
        (
            '{"test": [[[1]], [[2]]]}',
            f"{arc.UNREADABLE}\n{arc.UNREADABLE_HINT}",
            "expected 1 test outputs, got 2",
        ),
        ("[" * 5000 + "]" * 5000, f"{arc.UNREADABLE}\n{arc.UNREADABLE_HINT}", None),
        ("```{" * 20_000, f"{arc.UNREADABLE}\n{arc.UNREADABLE_HINT}", arc.NO_JSON),
    ],
)
def test_wrong_outputs_score_0_with_seq_ks_verdict(
    output: str, public: str, error: str | None
) -> None:
    """A deterministic verifier scores 0/1 (the run-folder contract, which the research
    harness's curves read); the share of matching cells stays in the private details."""
    result = check(grid_task([ANSWER]), output)
    assert not result.success and result.score == 0.0
    assert result.raw_eval_output == public
    if public.startswith(arc.UNREADABLE):
        assert result.details["parse_method"] == "failed"
        if error is not None:
            assert result.details["parse_error"] == error


def test_every_test_grid_is_judged_and_a_second_grid_named() -> None:
    task = grid_task([ANSWER, SECOND])
    result = check(task, '{"test": [[[1,2,3],[4,5,6],[7,8,9]], [[5, 6]]]}')
    assert not result.success
    assert result.raw_eval_output == (
        "incorrect_output\n"
        "Output grid 1: size correct: True; content match accuracy: 100.00%.\n"
        "Output grid 2: size correct: True; content match accuracy: 50.00% (1 of 2 cells match)."
    )
    assert check(task, "nothing").raw_eval_output.endswith("hint: expected 2 test output grid(s).")
    assert check(task, json.dumps({"test": [ANSWER, SECOND]})).success


def test_feedback_is_seq_ks_binary_sentence_or_the_verdict() -> None:
    task = grid_task([ANSWER])
    output = "[[1,2,3],[4,5,6],[7,8,0]]"
    result = check(task, output)
    assert arc.feedback(task, view(output), result, "binary", critic_model=None) == (
        "Your previous answer did not exactly match the expected output grid(s). Re-examine "
        "the transformation and try again."
    )
    assert cell_match(task, output) == result.raw_eval_output
    # The simulated solvers draw on the sentence as on a bare "Incorrect.", the verdict as more.
    assert simulated.feedback_gain(arc.BINARY_FEEDBACK) == simulated.BINARY_FEEDBACK_GAIN
    assert simulated.feedback_gain(result.raw_eval_output) == simulated.INFORMATIVE_FEEDBACK_GAIN
    with pytest.raises(ValueError, match="no feedback mode"):
        arc.feedback(task, view("x"), check(task, "x"), "hint", critic_model=None)


FENCED = re.compile(r"```(?:json)?\s*(\{.*?\}|\[.*?\])\s*```", re.DOTALL | re.IGNORECASE)
PIECES = ["`", "```", "{", "}", "[", "]", " ", "\n", "json", "JSON", "j\u017fon", "x", ",", "\xa0"]


def test_the_fenced_block_is_the_one_seq_ks_pattern_finds() -> None:
    """seq_k finds a reply's fenced JSON with a regular expression, whose backtracking takes
    quadratic time on a reply of unclosed fences; the linear reader finds the same block."""
    rng = random.Random(7)
    for _ in range(20_000):
        text = "".join(rng.choice(PIECES) for _ in range(rng.randint(0, 14)))
        found = FENCED.search(text)
        assert arc.fenced_json(text) == (found.group(1).strip() if found else None), text


def test_no_feedback_mode_reveals_the_target_grid() -> None:
    outputs = [
        "[[0,0,0],[0,0,0],[0,0,0]]",
        "[[1,2,3],[4,5,6],[7,8,0]]",
        "[[9]]",
        "garbage",
        "[[1,2,3],[4,5,6],[7,8]]",
    ]
    for task in BENCHMARK.load_tasks({}):
        [answer] = task.answer
        forbidden = {json.dumps(answer), json.dumps(answer, separators=(",", ":"))}
        forbidden |= {json.dumps(row) for row in answer if len(row) > 2}
        forbidden |= {json.dumps(row, separators=(",", ":")) for row in answer if len(row) > 2}
        rows, columns = len(answer), len(answer[0])
        for output in outputs:
            result = check(task, output)
            texts = [cell_match(task, output)]
            texts.append(arc.feedback(task, view(output), result, "binary", critic_model=None))
            texts += [render_feedback(mode, result) for mode in ("raw", "compact", "judge")]
            prediction = result.details.get("prediction") or [[]]
            shape_differs = [len(prediction[0]), len(prediction[0][0]) if prediction[0] else 0]
            for text in texts:
                assert not any(form in text for form in forbidden), (task.task_id, text)
                if shape_differs != [rows, columns]:
                    assert f"{rows}x{columns}" not in text, (task.task_id, text)


# Runs on the simulated solver


def run(config: RunConfig) -> tuple[RunResult, MemoryRunStore]:
    store = MemoryRunStore()
    result = asyncio.run(run_benchmark(BENCHMARK, config, store, LLMClient()))
    return result, store


def variant_config(path: Path, **changes: Any) -> RunConfig:
    import yaml

    variant = parse_variant(yaml.safe_load(path.read_text()), source=str(path))
    config = run_config_from_variant(
        variant, benchmark="arcagi2", prices=load_prices(variant.prices), allow_continue=False
    )
    return replace(config, **changes)


@pytest.mark.parametrize("variant", BENCHMARK.variants(), ids=lambda path: path.name)
def test_each_variant_runs_end_to_end_on_offline_models(variant: Path) -> None:
    config = variant_config(variant, k=2, max_tasks=3)
    assert config.actor.model.startswith("offline/")
    result, store = run(config)
    assert result.status == "complete" and result.tasks_run == 3
    for trials in store.trials.values():
        for trial in trials.values():
            assert trial.actor.output != ""
            # seq_k's verdict: nothing to say of a success, the cell match of a failure.
            assert bool(trial.judge.raw_eval_output) is not trial.success
            if not trial.success and config.metric == "seq@k":
                assert trial.critic.feedback


def test_the_cli_runs_a_bundled_variant_into_a_run_folder(tmp_path: Path) -> None:
    from app.cli import main

    variant = BENCHMARK.variants_dir / "sample_seqk.yaml"
    with pytest.raises(SystemExit) as exit_info:
        main(
            [
                "eval",
                "run",
                str(variant),
                "--runs-root",
                str(tmp_path),
                "--max-tasks",
                "2",
                "--char-limit",
                "0",
            ]
        )
    assert exit_info.value.code == 0
    # The deterministic verifier names the verifier level, though the variant defaults the
    # judge to the actor's model; the judge section says no model judged.
    folder = tmp_path / "arcagi2-sample" / "seqk" / "offline__solver-sim" / "deterministic"
    assert (folder / "cell_match" / "config.json").is_file()
    attempt = json.loads((folder / "cell_match" / "task-1" / "attempt-1.json").read_text())
    assert attempt["judge"]["model"] is None and attempt["judge"]["calls"] == []
    assert attempt["judge"]["score"] in (0.0, 1.0)
    assert attempt["judge"]["details"]["parse_method"] in ("json", "digit_stream_repair")


def test_seq_k_with_feedback_beats_pass_k_on_the_bundled_sample() -> None:
    # The simulation draws seq@k attempt t with pass@k sample t's number at a chance raised by
    # feedback, so every task pass@k solves within k, seq@k solves too (module docstring of
    # app.evaluation.engine.simulated); the parameters are the bundled variants'.
    k = 5
    actor = ModelSpec(SIM, temperature=0.8)
    passk, _ = run(RunConfig("arcagi2", "pass@k", k, "binary", actor))
    seqk, store = run(RunConfig("arcagi2", "seq@k", k, "cell_match", actor))
    pass_curve = passk.summary["curves"]["pass_at"]
    seq_curve = seqk.summary["curves"]["seq_at"]
    assert pass_curve != seq_curve
    assert seq_curve[-1] >= pass_curve[-1]
    assert seq_curve == sorted(seq_curve) and pass_curve == sorted(pass_curve)
    # Feedback did work: some task failed first and succeeded later.
    assert any(
        not trials[1].success and any(trial.success for trial in trials.values())
        for trials in store.trials.values()
    )
    # At T = 0 every pass@k sample is the same greedy reply: its curve is flat.
    cold, _ = run(RunConfig("arcagi2", "pass@k", 3, "binary", ModelSpec(SIM, temperature=0.0)))
    flat = cold.summary["curves"]["pass_at"]
    assert flat[0] == flat[-1]

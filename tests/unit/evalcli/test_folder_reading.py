"""Run folders both ways: folders the seq_k research harness wrote (its field names, no
config.json) and copies of Gauntlet's own runs without config.json are read by `metrics` and
`inspect`; the seq_k definitions reported on a Gauntlet folder equal a recomputation from its
attempt files; a folder written before the run-folder contract changed still resumes."""

from __future__ import annotations

import asyncio
import json
import math
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from app.evaluation.commands.cli import main
from app.evaluation.commands.folder import RunFolderError, RunFolderStore
from app.evaluation.engine.runner import RunConfig, RunConfigMismatch, run_benchmark
from app.evaluation.engine.types import ModelSpec
from tests.fixtures.eval_benchmark import ScriptedClient, make_benchmark

ROOT = Path(__file__).resolve().parents[3]
SEQK_LABEL = (
    "arcagi2",
    "metric=seqk",
    "k=03",
    "agent=openai__gpt-4o",
    "judge=deterministic",
    "fb=cell_match",
    "context=full",
    "prompt=v1",
    "temp=0.7",
    "seed=1",
)
# Per task, (success, score) of attempts 1, 2, ... as seq_k's harness would have graded them.
SEQK_TASKS: dict[int, list[tuple[bool, float]]] = {
    1: [(False, 0.0), (True, 1.0)],
    2: [(False, 0.0), (False, 0.5), (False, 0.25)],
    3: [(True, 1.0)],
    4: [(False, 0.25), (False, 0.0), (True, 1.0)],
}


def write(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2))


def write_seqk_folder(folder: Path, *, with_summary: bool = True) -> Path:
    """A run folder as seq_k's harness writes it (core/results.py's layout and field names):
    a string `actor.prompt`, `finish_reason` and `raw_response` beside the tokens, task
    summaries keyed `attempt`, per-model `tokens`, and no config.json (its S3 copies have none)."""
    for index, attempts in SEQK_TASKS.items():
        task_dir = folder / f"task-{index}"
        write(
            task_dir / "task_meta.json",
            {"task_id": f"t{index}", "task_index": index, "prompt": f"Solve puzzle {index}."},
        )
        for number, (success, score) in enumerate(attempts, 1):
            critic_calls = []
            if index == 2:
                # An imported attempt: explicit nulls where token counts were not logged.
                critic_calls = [
                    {
                        "model": "openai/gpt-4o-mini",
                        "prompt": "Hint without the answer.",
                        "output": "Look at the corners.",
                        "input_tokens": None,
                        "cached_tokens": None,
                        "thinking_tokens": 0,
                        "output_tokens": 5,
                        "finish_reason": "stop",
                        "raw_response": None,
                    }
                ]
            document: dict[str, Any] = {
                "task_id": f"t{index}",
                "task_index": index,
                "metric": "seq@k",
                "feedback_mode": "cell_match",
                "attempt_index": number,
                "actor": {
                    "model": "openai/gpt-4o",
                    "prompt": f"Solve puzzle {index}.\n\nThis is attempt {number} of 3.",
                    "output": f"[[{index}, {number}]]",
                    "input_tokens": 100,
                    "cached_tokens": 10,
                    "thinking_tokens": 0,
                    "output_tokens": 20,
                    "finish_reason": "stop",
                    "raw_response": {"id": "chatcmpl-x", "usage": {"prompt_tokens": 100}},
                    "reasoning_effort": None,
                    "thinking_content": None,
                },
                "judge": {
                    "model": None,
                    "success": success,
                    "score": score,
                    "raw_eval_output": "matches" if success else "does not match",
                    "details": {"cells": 4},
                    "calls": [],
                },
                "critic": {
                    "model": "openai/gpt-4o-mini" if critic_calls else None,
                    "feedback": None if success else "Shape correct; 2 of 4 cells match.",
                    "calls": critic_calls,
                },
            }
            if index == 4 and number == 1:
                document["summarizer"] = {
                    "model": "openai/gpt-4o",
                    "summary": "I tried a mirror.",
                    "calls": [
                        {
                            "model": "openai/gpt-4o",
                            "prompt": "Summarise.",
                            "output": "I tried a mirror.",
                            "input_tokens": 30,
                            "cached_tokens": 0,
                            "thinking_tokens": 0,
                            "output_tokens": 6,
                        }
                    ],
                }
            write(task_dir / f"attempt-{number}.json", document)
        write(
            task_dir / "summary.json",
            {
                "task_id": f"t{index}",
                "task_index": index,
                "success": any(success for success, _ in attempts),
                "best_score": max(score for _, score in attempts),
                "last_updated": "2026-06-15T22-38-45Z",
                "attempts": [
                    {"attempt": number, "success": success, "score": score}
                    for number, (success, score) in enumerate(attempts, 1)
                ],
                "tokens": {"openai/gpt-4o": {"input_tokens": 100, "cost_usd": 0.001}},
                "pricing_last_updated": "2026-05-01",
                "litellm_version": "1.70.0",
            },
        )
    if with_summary:
        write(
            folder / "summary.json",
            {
                "metric": "seq@k",
                "model": "openai/gpt-4o",
                "feedback_mode": "cell_match",
                "tasks": 4,
                "k": 3,
                "seq@1": 0.3125,
                "seq@2": 0.6875,
                "seq@3": 0.875,
                "se": {"seq@1": 0.2366, "seq@2": 0.1875, "seq@3": 0.125},
                "delta": 0.5625,
                "EGS": 0.667,
                "LGS": 0.333,
                "tokens": {},
                "pricing_last_updated": "2026-05-01",
                "litellm_version": "1.70.0",
                "last_updated": "2026-06-15T22-38-45Z",
            },
        )
    return folder


@pytest.fixture
def seqk_folder(tmp_path: Path) -> Path:
    return write_seqk_folder(tmp_path.joinpath("runs", *SEQK_LABEL))


def metrics_json(capsys: pytest.CaptureFixture[str], *argv: str) -> list[dict[str, Any]]:
    assert main(["metrics", *argv, "--json"]) == 0
    runs: list[dict[str, Any]] = json.loads(capsys.readouterr().out)["runs"]
    return runs


# seq_k's folders


def test_metrics_reads_a_seqk_folder_without_config_json(
    seqk_folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    [run] = metrics_json(capsys, str(seqk_folder.parents[9]))  # found below the runs root
    assert run["settings_source"] == "inferred"
    assert "metric from the attempt files" in run["inferred"]
    assert "k from summary.json" in run["inferred"]
    assert run["settings"]["actor"] == "openai/gpt-4o"
    assert run["settings"]["feedback_mode"] == "cell_match"
    # seq_k's own definitions: the first-t best-score curve over the four tasks, and its gain
    # shares, the numbers its `metrics` command prints for this folder.
    view = run["harness_view"]
    assert view["seq_at"] == pytest.approx([0.3125, 0.6875, 0.875])
    assert view["delta"] == pytest.approx(0.5625)
    assert view["egs"] == pytest.approx(2 / 3) and view["lgs"] == pytest.approx(1 / 3)
    # Gauntlet's unbiased seq@t beside them: solved within t attempts.
    assert run["curves"]["seq_at"] == pytest.approx([0.25, 0.5, 0.75])
    assert run["curves"]["tasks_complete"] == 4
    assert run["pricing"]["pricing_last_updated"] == "2026-05-01"
    actor = run["usage"]["actor"]["openai/gpt-4o"]
    assert (actor["calls"], actor["input_tokens"], actor["output_tokens"]) == (9, 900, 180)
    assert run["usage"]["critic"]["openai/gpt-4o-mini"]["input_tokens"] == 0
    assert run["usage"]["summarizer"]["openai/gpt-4o"]["calls"] == 1

    assert main(["metrics", str(seqk_folder)]) == 0
    table = capsys.readouterr().out
    assert "no config.json: inferred metric from the attempt files" in table
    assert "seq_k: Δ = seq@3 - seq@1 = 0.562, EGS = 0.67, LGS = 0.33" in table


def test_k_comes_from_the_path_or_else_from_the_attempts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    labelled = write_seqk_folder(tmp_path.joinpath("s3", *SEQK_LABEL), with_summary=False)
    [run] = metrics_json(capsys, str(labelled))
    assert "k from the folder path" in run["inferred"] and run["curves"]["k"] == 3

    bare = write_seqk_folder(tmp_path / "copy" / "a-run", with_summary=False)
    [run] = metrics_json(capsys, str(bare))
    assert any("most attempts any task has" in line for line in run["inferred"])
    assert run["curves"]["k"] == 3
    [run] = metrics_json(capsys, str(bare), "--k", "2")
    assert run["harness_view"]["seq_at"] == pytest.approx([0.3125, 0.6875])


def test_plot_draws_a_seqk_folder(seqk_folder: Path, tmp_path: Path) -> None:
    chart = tmp_path / "chart.svg"
    assert main(["plot", str(seqk_folder), "--out", str(chart)]) == 0
    assert "seq@k" in chart.read_text() and "openai/gpt-4o" in chart.read_text()


def test_a_seqk_config_json_is_read_as_its_settings(
    seqk_folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write(
        seqk_folder / "config.json",
        {
            "benchmark": "arcagi2",
            "metric": "seq@k",
            "k": 3,
            "feedback_mode": "cell_match",
            "model": "openai/gpt-4o",
            "judge_model": "openai/gpt-4o",
            "critic_model": "openai/gpt-4o",
            "temperature": 0.7,
            "options": {},
        },
    )
    [run] = metrics_json(capsys, str(seqk_folder))
    assert run["settings_source"] == "seq_k config.json" and run["inferred"] == []
    assert run["harness_view"]["seq_at"] == pytest.approx([0.3125, 0.6875, 0.875])


def test_inspect_reads_a_seqk_folder(seqk_folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", str(seqk_folder), "--task-index", "4"]) == 0
    out = capsys.readouterr().out
    # Complete for the run's k (a success within it): done, as the metrics count it.
    assert out.startswith("task 4 (t4): done, 3 attempts")
    assert "attempt 3: pass, score 1.000" in out
    assert main(["inspect", str(seqk_folder), "--task-id", "t2", "--attempt", "2"]) == 0
    out = capsys.readouterr().out
    assert "prompt (what the actor saw):\n  Solve puzzle 2.\n  \n  This is attempt 2 of 3." in out
    assert "feedback:\n  Shape correct; 2 of 4 cells match." in out
    assert main(["inspect", str(seqk_folder), "--task-index", "1", "--json"]) == 0
    stored = json.loads(capsys.readouterr().out)
    assert [attempt["attempt_index"] for attempt in stored["attempts"]] == [1, 2]


def test_a_folder_without_gauntlets_run_record_is_never_added_to(
    seqk_folder: Path, tmp_path: Path
) -> None:
    config = RunConfig("memory_bench", "seq@k", 3, "raw", ModelSpec("openai/gpt-4o"))
    with pytest.raises(RunFolderError, match=r"no config\.json"):
        asyncio.run(
            run_benchmark(make_benchmark(), config, RunFolderStore(seqk_folder), ScriptedClient())
        )
    write(seqk_folder / "config.json", {"metric": "seq@k", "k": 3, "model": "openai/gpt-4o"})
    with pytest.raises(RunConfigMismatch, match="not written by Gauntlet"):
        asyncio.run(
            run_benchmark(make_benchmark(), config, RunFolderStore(seqk_folder), ScriptedClient())
        )
    assert sorted(path.name for path in (seqk_folder / "task-1").iterdir()) == [
        "attempt-1.json",
        "attempt-2.json",
        "summary.json",
        "task_meta.json",
    ]


# Gauntlet's folders, read the seq_k way


MEMORY_QA_SEQK = ROOT / "benchmarks" / "memory_qa" / "variants" / "entity_linked_seqk.yaml"


def recompute_seqk(folder: Path, k: int) -> dict[str, Any]:
    """seq_k's definitions, straight from the attempt files with nothing of Gauntlet's."""
    curves = []
    for task_dir in sorted(folder.glob("task-*")):
        attempts = sorted(
            (json.loads(path.read_text()) for path in task_dir.glob("attempt-*.json")),
            key=lambda attempt: attempt["attempt_index"],
        )
        if not attempts:
            continue
        best, curve = 0.0, []
        for t in range(k):
            if t < len(attempts):
                best = max(best, attempts[t]["judge"]["score"])
            curve.append(best)
        curves.append(curve)
    at = [sum(curve[t] for curve in curves) / len(curves) for t in range(k)]
    delta = at[k - 1] - at[0]
    return {
        "at": at,
        "delta": delta,
        "egs": (at[1] - at[0]) / delta if delta > 0 else None,
        "lgs": (at[k - 1] - at[k - 2]) / delta if delta > 0 else None,
    }


def test_seqk_numbers_on_a_gauntlet_folder_equal_a_recomputation_from_its_attempts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = tmp_path / "runs"
    assert main(["run", str(MEMORY_QA_SEQK), "--runs-root", str(runs), "--char-limit", "0"]) == 0
    capsys.readouterr()
    [folder] = [path.parent for path in runs.rglob("config.json")]
    [run] = metrics_json(capsys, str(folder))
    expected = recompute_seqk(folder, 3)
    view = run["harness_view"]
    assert view["seq_at"] == pytest.approx(expected["at"])
    assert view["delta"] == pytest.approx(expected["delta"]) and expected["delta"] > 0
    assert view["egs"] == pytest.approx(expected["egs"])
    assert view["lgs"] == pytest.approx(expected["lgs"])
    # The run's own summary.json holds the same view, and retrieval recall beside the curves.
    stored = json.loads((folder / "summary.json").read_text())
    assert stored["harness_view"]["seq_at"] == pytest.approx(expected["at"])
    # And seq_k's own fields, as its summary writer rounds them.
    assert [stored[f"seq@{t}"] for t in (1, 2, 3)] == [round(value, 4) for value in expected["at"]]
    assert stored["delta"] == round(expected["delta"], 4)
    assert (stored["EGS"], stored["LGS"]) == (round(expected["egs"], 3), round(expected["lgs"], 3))
    assert stored["tasks"] == len(list(folder.glob("task-*")))
    assert (
        stored["model"]
        == json.loads(next(folder.rglob("attempt-1.json")).read_text())["actor"]["model"]
    )
    assert stored["figures"]["retrieval_recall"]["mean"] == 1.0
    # At a smaller k too.
    [smaller] = metrics_json(capsys, str(folder), "--k", "2")
    assert smaller["harness_view"]["seq_at"] == pytest.approx(recompute_seqk(folder, 2)["at"])


def test_pass_at_k_attempt_files_carry_the_runs_feedback_mode(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    variant = ROOT / "benchmarks" / "jsonl" / "variants" / "example-passk.yaml"
    assert main(["run", str(variant), "--runs-root", str(tmp_path), "--char-limit", "0"]) == 0
    capsys.readouterr()
    attempts = list(tmp_path.rglob("attempt-*.json"))
    assert attempts
    assert {json.loads(path.read_text())["feedback_mode"] for path in attempts} == {"binary"}
    assert {json.loads(path.read_text())["metric"] for path in attempts} == {"pass@k"}


# A folder written before the contract changed


def to_old_format(folder: Path) -> None:
    """Rewrites a run folder the way Gauntlet wrote it before actor.prompt became the text:
    prompts as message lists (no `messages`), task summaries without best_score, tokens and
    last_updated, config.json without the run's feedback mode."""
    for path in folder.rglob("attempt-*.json"):
        document = json.loads(path.read_text())
        for section in (
            document["actor"],
            *document["judge"]["calls"],
            *document["critic"]["calls"],
        ):
            section["prompt"] = section.pop("messages")
        path.write_text(json.dumps(document))
    for path in folder.glob("task-*/summary.json"):
        summary = json.loads(path.read_text())
        for key in ("best_score", "tokens", "last_updated", "figures"):
            summary.pop(key, None)
        path.write_text(json.dumps(summary))
    config = json.loads((folder / "config.json").read_text())
    config.pop("feedback_mode")
    (folder / "config.json").write_text(json.dumps(config))


def test_a_folder_written_before_the_change_resumes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = yaml.safe_load((ROOT / "benchmarks" / "jsonl" / "variants" / "example.yaml").read_text())
    data.update(benchmark="jsonl", k=2, task_indices=[2, 4])
    variant = tmp_path / "v.yaml"
    variant.write_text(yaml.safe_dump(data))
    runs = tmp_path / "runs"
    assert main(["run", str(variant), "--runs-root", str(runs), "--char-limit", "0"]) == 0
    [folder] = [path.parent for path in runs.rglob("config.json")]
    to_old_format(folder)
    old_attempt = json.loads((folder / "task-2" / "attempt-2.json").read_text())
    assert isinstance(old_attempt["actor"]["prompt"], list)

    # Its run record still matches: the rerun resumes it (nothing left to do).
    capsys.readouterr()
    assert main(["run", str(variant), "--runs-root", str(runs)]) == 0
    assert "0 attempts | 0 solved | 2 resumed done" in capsys.readouterr().err
    # A larger k, allowed to continue: the old attempts are kept as they are, the seq@k
    # history is rebuilt from them, the new attempts follow the contract.
    data["k"] = 3
    variant.write_text(yaml.safe_dump(data))
    assert main(["run", str(variant), "--runs-root", str(runs), "--continue"]) == 0
    capsys.readouterr()
    assert json.loads((folder / "task-2" / "attempt-2.json").read_text()) == old_attempt
    new = json.loads((folder / "task-2" / "attempt-3.json").read_text())
    assert isinstance(new["actor"]["prompt"], str)
    assert (
        "<PreviousAttempt 2>\n" + old_attempt["actor"]["output"] + "\n</PreviousAttempt 2>"
        in new["actor"]["prompt"]
    )
    assert new["actor"]["messages"][0]["content"] == new["actor"]["prompt"]
    summary = json.loads((folder / "task-2" / "summary.json").read_text())
    assert "best_score" in summary and "tokens" in summary
    # The mixed folder reads as one run.
    [run] = metrics_json(capsys, str(folder))
    assert run["curves"]["k"] == 3 and run["attempts"] == sum(
        1 for _ in folder.rglob("attempt-*.json")
    )
    assert main(["inspect", str(folder), "--task-index", "2", "--attempt", "1"]) == 0
    assert "What is the capital of Japan?" in capsys.readouterr().out


def test_a_gauntlet_folder_copied_without_config_json_is_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = tmp_path / "runs"
    assert main(["run", str(MEMORY_QA_SEQK), "--runs-root", str(runs), "--char-limit", "0"]) == 0
    capsys.readouterr()
    [folder] = [path.parent for path in runs.rglob("config.json")]
    [original] = metrics_json(capsys, str(folder))
    copy = tmp_path / "copy" / folder.relative_to(runs)
    shutil.copytree(folder, copy, ignore=shutil.ignore_patterns("config.json"))
    [read] = metrics_json(capsys, str(tmp_path / "copy"))
    assert read["settings_source"] == "inferred"
    assert "k from summary.json" in read["inferred"]
    for key in ("curves", "harness_view", "usage", "figures"):
        assert read[key] == original[key], key
    assert not math.isnan(read["cost_usd"])

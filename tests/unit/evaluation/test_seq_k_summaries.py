"""Run and task summaries as seq_k writes them, and seq_k's folders read with their costs and k.

tests/fixtures/seq_k/run is a run folder seq_k's own `core/results.py` wrote (generate.py
there). Gauntlet's runner, given the same attempts, writes summaries in which a reader of
seq_k's summaries finds every field it reads, with the same values; and Gauntlet reads seq_k's
folder with the costs seq_k priced, and at a larger k where the folder supports one.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from app.evalcli.cli import main
from app.evaluation.runner import MemoryRunStore, RunConfig, run_benchmark
from app.evaluation.types import ModelSpec, TrialRecord
from app.outbound.prices import Price
from tests.fixtures.eval_benchmark import ScriptedClient, make_benchmark

SEQ_K_RUN = Path(__file__).resolve().parents[2] / "fixtures" / "seq_k" / "run"
SEQ_K_TIME_FORMAT = "%Y-%m-%dT%H-%M-%SZ"
TOKEN_FIELDS = ("input_tokens", "cached_tokens", "thinking_tokens", "output_tokens")
# seq_k's price table (core/pricing.py) for the fixture's models, USD per token.
SEQ_K_PRICES = {
    "openai/gpt-4o-mini": Price(
        input_cost_per_token=0.15e-6,
        output_cost_per_token=0.60e-6,
        cache_read_input_token_cost=0.075e-6,
    ),
    "openai/gpt-4o": Price(
        input_cost_per_token=2.50e-6,
        output_cost_per_token=10.00e-6,
        cache_read_input_token_cost=1.25e-6,
    ),
}


def load(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def read_tokens(tokens: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Token counts exactly; the cost to the micro-dollar (seq_k rounds its own to 6 places,
    from its price table; Gauntlet keeps its calls' costs unrounded)."""
    return {
        model: {
            **{name: int(entry[name]) for name in TOKEN_FIELDS},
            "cost_usd": pytest.approx(float(entry["cost_usd"]), abs=1e-6),
        }
        for model, entry in tokens.items()
    }


def seq_k_reader(summary: dict[str, Any]) -> dict[str, Any]:
    """Every field of a run summary.json that seq_k's code and README read, the way they read
    it (a KeyError or a type error here is a field a seq_k tool would not find)."""
    label = "seq" if summary["metric"] == "seq@k" else "pass"
    k = summary["k"]
    assert isinstance(summary["tasks"], int) and isinstance(k, int)
    fields = {
        "metric": summary["metric"],
        "model": summary["model"],
        "feedback_mode": summary["feedback_mode"],
        "tasks": summary["tasks"],
        "k": k,
        "curve": [summary[f"{label}@{t}"] for t in range(1, k + 1)],
        "se": [summary["se"][f"{label}@{t}"] for t in range(1, k + 1)],
        "delta": summary.get("delta"),
        "EGS": summary.get("EGS"),
        "LGS": summary.get("LGS"),
        "tokens": read_tokens(summary["tokens"]),
    }
    datetime.strptime(summary["last_updated"], SEQ_K_TIME_FORMAT)
    datetime.strptime(summary["pricing_last_updated"], "%Y-%m-%d")
    return fields


def seq_k_task_reader(summary: dict[str, Any]) -> dict[str, Any]:
    """Every field of a task summary.json that seq_k writes, read the way seq_k names them."""
    datetime.strptime(summary["last_updated"], SEQ_K_TIME_FORMAT)
    datetime.strptime(summary["pricing_last_updated"], "%Y-%m-%d")
    return {
        "task_id": summary["task_id"],
        "task_index": summary["task_index"],
        "success": summary["success"],
        "best_score": summary["best_score"],
        "attempts": [
            (item["attempt"], item["success"], item["score"]) for item in summary["attempts"]
        ],
        "tokens": read_tokens(summary["tokens"]),
    }


def gauntlet_summaries_of_seq_k_attempts() -> MemoryRunStore:
    """Gauntlet's runner over the fixture's attempts: every task is complete for k=3, so the
    run only writes its summaries, with the writer every run uses."""
    store = MemoryRunStore()
    for task_dir in sorted(SEQ_K_RUN.glob("task-*")):
        index = int(task_dir.name.split("-")[1])
        store.trials[index] = {
            trial.attempt_index: trial
            for trial in (
                TrialRecord.from_dict(load(path)) for path in sorted(task_dir.glob("attempt-*"))
            )
        }
    config = RunConfig(
        benchmark="memory_bench",
        metric="seq@k",
        k=3,
        feedback_mode="raw",
        actor=ModelSpec("openai/gpt-4o-mini"),
        prices=SEQ_K_PRICES,
    )
    client = ScriptedClient()
    asyncio.run(run_benchmark(make_benchmark(count=4), config, store, client))
    assert client.calls == []
    return store


def test_a_seq_k_reader_reads_the_same_fields_from_gauntlets_summaries_as_from_seq_ks() -> None:
    store = gauntlet_summaries_of_seq_k_attempts()
    assert store.run_summary is not None
    ours = json.loads(json.dumps(store.run_summary))
    theirs = load(SEQ_K_RUN / "summary.json")
    assert seq_k_reader(ours) == seq_k_reader(theirs)
    assert seq_k_reader(theirs)["curve"] == [0.3125, 0.6875, 0.875]  # the fixture is not trivial
    # Gauntlet's own figures stay, under names seq_k does not use.
    assert ours["task_status"] == {"total": 4, "done": 4, "partial": 0, "error": 0}
    assert ours["curves"]["seq_at"] == pytest.approx([0.25, 0.5, 0.75])
    assert set(theirs) <= set(ours)

    for index in range(1, 5):
        task_ours = json.loads(json.dumps(store.task_summaries[index]))
        task_theirs = load(SEQ_K_RUN / f"task-{index}" / "summary.json")
        assert seq_k_task_reader(task_ours) == seq_k_task_reader(task_theirs)
        assert set(task_theirs) <= set(task_ours)
        assert task_ours["status"] == "done" and "usage" in task_ours


def metrics_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    assert main(["metrics", *argv, "--json"]) == 0
    [run] = json.loads(capsys.readouterr().out)["runs"]
    assert isinstance(run, dict)
    return run


def test_a_seq_k_folder_is_read_with_the_costs_seq_k_priced(
    capsys: pytest.CaptureFixture[str],
) -> None:
    run = metrics_json(capsys, str(SEQ_K_RUN))
    theirs = load(SEQ_K_RUN / "summary.json")["tokens"]
    assert run["unpriced_models"] == []
    # Per task seq_k rounds each model's cost to the micro-dollar; the run's total is their sum.
    task_costs = [
        entry["cost_usd"]
        for path in sorted(SEQ_K_RUN.glob("task-*/summary.json"))
        for entry in load(path)["tokens"].values()
    ]
    assert run["cost_usd"] == pytest.approx(sum(task_costs), abs=1e-12)
    assert run["cost_usd"] == pytest.approx(
        sum(entry["cost_usd"] for entry in theirs.values()), abs=5e-6
    )
    for model, entry in run["tokens"].items():
        assert entry["cost_usd"] == pytest.approx(theirs[model]["cost_usd"], abs=5e-6)
    # gpt-4o-mini was actor and critic: its cost is shared between the roles, summing to seq_k's.
    usage = run["usage"]
    shared = (
        usage["actor"]["openai/gpt-4o-mini"]["cost_usd"]
        + usage["critic"]["openai/gpt-4o-mini"]["cost_usd"]
    )
    assert shared == pytest.approx(theirs["openai/gpt-4o-mini"]["cost_usd"], abs=5e-6)
    assert main(["metrics", str(SEQ_K_RUN)]) == 0
    assert "cost: $0.00" in capsys.readouterr().out


def test_a_task_summary_of_other_attempts_prices_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "run"
    shutil.copytree(SEQ_K_RUN, folder)
    summary_path = folder / "task-1" / "summary.json"
    summary = load(summary_path)
    summary["tokens"]["openai/gpt-4o"]["input_tokens"] += 1
    summary_path.write_text(json.dumps(summary))
    run = metrics_json(capsys, str(folder))
    assert run["cost_usd"] is None and run["unpriced_models"] == ["openai/gpt-4o"]


def test_a_continued_seq_k_run_copied_without_config_json_reads_at_its_larger_k(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """seq_k rewrites its summary.json only when a task runs: a seq@k run continued from k=3
    to k=5 whose every task had stopped on a success keeps `k: 3` there, and S3 copies have
    no config.json. --k 5 reads it; where a task could still have run, --k 5 is refused."""
    folder = tmp_path / "solved"
    shutil.copytree(SEQ_K_RUN, folder, ignore=shutil.ignore_patterns("task-2"))
    run = metrics_json(capsys, str(folder), "--k", "5")
    assert run["curves"]["k"] == 5 and run["curves"]["tasks_complete"] == 3
    assert run["curves"]["seq_at"] == pytest.approx([1 / 3, 2 / 3, 1.0, 1.0, 1.0])
    assert any("k=5 from --k, above the k=3 inferred" in line for line in run["inferred"])
    assert main(["plot", str(folder), "--k", "5", "--out", str(tmp_path / "c.svg")]) == 0

    assert main(["metrics", str(SEQ_K_RUN), "--k", "5"]) == 2
    error = capsys.readouterr().err
    assert "a larger k needs every task complete for it, and task(s) 2 are not" in error
    # A run whose config.json names its k is read at most at that k.
    (folder / "config.json").write_text(json.dumps({"metric": "seq@k", "k": 3, "model": "m"}))
    assert main(["metrics", str(folder), "--k", "5"]) == 2
    assert "--k must be between 1 and the run's k (3), got 5" in capsys.readouterr().err

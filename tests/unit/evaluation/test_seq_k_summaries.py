"""Run and task summaries as seq_k writes them, and seq_k's folders read with its costs and k.

tests/fixtures/seq_k/run is a run folder seq_k's own `core/results.py` wrote (generate.py
there), with an LLM judge and critic beside the actor. Gauntlet's runner, given the same
attempts, writes summaries that are seq_k's byte for byte, Gauntlet's own keys aside
(tests/fixtures/seq_k/compare.py); and Gauntlet reads seq_k's folder with the costs seq_k
priced, and at a larger k where the folder supports one.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from app.evaluation.commands.cli import main
from app.evaluation.commands.folder import write_json_atomic
from app.evaluation.engine.metrics import UsageTotals, price_lookup, rounded_cost, tokens_by_model
from app.evaluation.engine.runner import MemoryRunStore, RunConfig, run_benchmark
from app.evaluation.engine.types import ModelSpec, TrialRecord
from app.outbound.prices import Price
from tests.fixtures.eval_benchmark import ScriptedClient, make_benchmark
from tests.fixtures.seq_k.compare import compare_file

SEQ_K_RUN = Path(__file__).resolve().parents[2] / "fixtures" / "seq_k" / "run"
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


def test_gauntlets_summaries_of_seq_ks_attempts_are_seq_ks_byte_for_byte(tmp_path: Path) -> None:
    store = gauntlet_summaries_of_seq_k_attempts()
    assert store.run_summary is not None
    ours = tmp_path / "summary.json"
    write_json_atomic(ours, store.run_summary)
    assert compare_file("run_summary", ours, SEQ_K_RUN / "summary.json", "summary.json") == []
    theirs = load(SEQ_K_RUN / "summary.json")
    assert [theirs[f"seq@{t}"] for t in (1, 2, 3)] == [0.3125, 0.6875, 0.875]  # not trivial
    # Two models, listed as seq_k meets them (the actor before the judge), not by name.
    assert list(theirs["tokens"]) == ["openai/gpt-4o-mini", "openai/gpt-4o"]
    # Gauntlet's own figures stay, under names seq_k does not use.
    assert store.run_summary["task_status"] == {"total": 4, "done": 4, "partial": 0, "error": 0}
    assert store.run_summary["curves"]["seq_at"] == pytest.approx([0.25, 0.5, 0.75])

    for index in range(1, 5):
        ours = tmp_path / f"task-{index}" / "summary.json"
        write_json_atomic(ours, store.task_summaries[index])
        theirs_path = SEQ_K_RUN / f"task-{index}" / "summary.json"
        label = f"task-{index}/summary.json"
        assert compare_file("task_summary", ours, theirs_path, label) == []
        assert store.task_summaries[index]["status"] == "done"


def test_a_cost_on_half_a_micro_dollar_rounds_as_seq_ks() -> None:
    """seq_k prices a model's summed tokens with prices per million and rounds to 6 places;
    a sum over calls at prices per token is the same number, but not always the same float,
    and on a half micro-dollar the two can round apart. Gauntlet's `tokens` round seq_k's."""
    mini = SEQ_K_PRICES["openai/gpt-4o-mini"]
    calls = [(1331, 0, 173), (463, 0, 196)]  # 1,794 input and 369 output tokens, two calls
    totals = UsageTotals()
    for input_tokens, cached_tokens, output_tokens in calls:
        totals.add_call(
            {
                "input_tokens": input_tokens,
                "cached_tokens": cached_tokens,
                "output_tokens": output_tokens,
                "cost_usd": mini.cost(
                    input_tokens=input_tokens,
                    cached_tokens=cached_tokens,
                    output_tokens=output_tokens,
                ),
            }
        )
    # seq_k's core/pricing.py, by hand: (uncached * 0.15 + cached * 0.075 + output * 0.60) / 1e6
    seq_k = round((1794 * 0.15 + 0 * 0.075 + 369 * 0.60) / 1_000_000, 6)
    assert seq_k == 0.000491  # 0.0004905 exactly: a tie, which seq_k's floats round up
    assert totals.cost_usd is not None and round(totals.cost_usd, 6) == 0.00049
    assert rounded_cost("openai/gpt-4o-mini", totals, {"openai/gpt-4o-mini": mini}.get) == seq_k
    # A price that did not give the recorded cost (the map changed since) prices nothing anew.
    dearer = Price(input_cost_per_token=1e-6, output_cost_per_token=2e-6)
    assert rounded_cost("openai/gpt-4o-mini", totals, {"openai/gpt-4o-mini": dearer}.get) == (
        round(totals.cost_usd, 6)
    )
    usage = {"actor": {"openai/gpt-4o-mini": totals}}
    # litellm's map prices gpt-4o-mini as seq_k's table does.
    listed = tokens_by_model(usage, price_of=price_lookup())
    assert listed["openai/gpt-4o-mini"]["cost_usd"] == seq_k


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
    # seq_k prices each model over the whole run and rounds that: not the sum of its rounded
    # task costs, which is a micro-dollar or two off.
    assert run["tokens"] == theirs
    task_costs = [
        entry["cost_usd"]
        for path in sorted(SEQ_K_RUN.glob("task-*/summary.json"))
        for entry in load(path)["tokens"].values()
    ]
    whole = sum(entry["cost_usd"] for entry in theirs.values())
    assert round(sum(task_costs), 6) != round(whole, 6)
    assert run["cost_usd"] == pytest.approx(whole, abs=1e-12)
    # gpt-4o-mini was actor and critic: its cost is shared between the roles, summing to seq_k's.
    usage = run["usage"]
    shared = (
        usage["actor"]["openai/gpt-4o-mini"]["cost_usd"]
        + usage["critic"]["openai/gpt-4o-mini"]["cost_usd"]
    )
    assert shared == pytest.approx(theirs["openai/gpt-4o-mini"]["cost_usd"], abs=1e-12)
    assert main(["metrics", str(SEQ_K_RUN)]) == 0
    assert "cost: $0.00" in capsys.readouterr().out


def test_a_summary_of_other_attempts_prices_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "run"
    shutil.copytree(SEQ_K_RUN, folder)
    summary_path = folder / "task-1" / "summary.json"
    summary = load(summary_path)
    summary["tokens"]["openai/gpt-4o"]["input_tokens"] += 1
    summary_path.write_text(json.dumps(summary))
    # The run's summary still counts these attempts: it prices the run.
    run = metrics_json(capsys, str(folder))
    assert (
        run["tokens"]["openai/gpt-4o"]
        == load(SEQ_K_RUN / "summary.json")["tokens"]["openai/gpt-4o"]
    )
    # Neither it nor task 1's does any more: gpt-4o's cost is unknown.
    run_path = folder / "summary.json"
    document = load(run_path)
    document["tokens"]["openai/gpt-4o"]["output_tokens"] += 1
    run_path.write_text(json.dumps(document))
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

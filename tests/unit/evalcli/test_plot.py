from __future__ import annotations

import argparse
import asyncio
import json
import os
from pathlib import Path

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from app.evaluation.commands import plot
from app.evaluation.commands.folder import RunFolderStore, run_folder_for
from app.evaluation.engine.benchmark import Benchmark
from app.evaluation.engine.llm import LLMClient
from app.evaluation.engine.runner import RunConfig, run_benchmark
from app.evaluation.engine.types import ModelSpec

ACTOR = ModelSpec("offline/solver-sim", temperature=0.8)


@pytest.fixture(scope="module")
def runs_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two run folders made by the engine: pass@k and seq@k on four bundled ARC tasks."""
    root = tmp_path_factory.mktemp("runs")
    benchmark = Benchmark.load("arcagi2")
    for metric, mode in (("pass@k", "binary"), ("seq@k", "cell_match")):
        config = RunConfig("arcagi2", metric, 3, mode, ACTOR, max_tasks=4)  # type: ignore[arg-type]
        folder = run_folder_for(root, benchmark, config)
        asyncio.run(run_benchmark(benchmark, config, RunFolderStore(folder), LLMClient()))
    return root


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="gauntlet eval")
    commands = parser.add_subparsers(dest="eval_command", required=True)
    plot.add_parser(commands)
    return parser.parse_args(["plot", *argv])


def folders(root: Path) -> list[Path]:
    return sorted(path.parent for path in root.rglob("config.json"))


@pytest.mark.parametrize("suffix", [".png", ".svg"])
def test_plot_writes_one_chart_of_both_runs(
    runs_root: Path, tmp_path: Path, suffix: str, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "charts" / f"curves{suffix}"
    args = parse(*(str(folder) for folder in folders(runs_root)), "--out", str(out))
    assert args.handler(args) == 0
    assert str(out) in capsys.readouterr().out
    data = out.read_bytes()
    if suffix == ".png":
        assert data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) > 10_000
    else:
        text = data.decode("utf-8")
        assert text.lstrip().startswith("<?xml") and "<svg" in text
        # Text stays text in the SVG: the legend names each run.
        assert "arcagi2-sample · pass@k · offline/solver-sim T=0.8" in text
        assert "arcagi2-sample · seq@k · offline/solver-sim T=0.8 · cell_match" in text


def test_a_parent_folder_plots_every_run_below_it(runs_root: Path, tmp_path: Path) -> None:
    curves = plot.collect_curves([runs_root, *folders(runs_root)])
    assert [curve.metric for curve in curves] == ["pass@k", "seq@k"]
    out = plot.plot([runs_root], tmp_path / "all.svg", title="ARC sample")
    assert "ARC sample" in out.read_text(encoding="utf-8")


def test_the_curves_are_the_metrics_the_runner_reported(runs_root: Path) -> None:
    for folder in folders(runs_root):
        curve = plot.load_curve(folder)
        reported = json.loads((folder / "summary.json").read_text())["curves"]
        name = "pass" if curve.metric == "pass@k" else "seq"
        assert curve.values == reported[f"{name}_at"]
        assert curve.stderrs == reported[f"{name}_at_stderr"]
        assert curve.t == [1, 2, 3] and curve.tasks_complete == 4
        shorter = plot.load_curve(folder, k=2)
        assert shorter.t == [1, 2]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--out", "chart.pdf"], "must end in .png or .svg"),
        (["--k", "9"], "between 1 and the run's k"),
    ],
)
def test_bad_arguments_are_one_error_line(
    runs_root: Path, extra: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    args = parse(str(runs_root), *extra)
    assert args.handler(args) == 2
    assert message in capsys.readouterr().err


def test_paths_without_runs_are_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = parse(str(tmp_path / "absent"))
    assert args.handler(args) == 2
    assert "no such folder" in capsys.readouterr().err
    args = parse(str(tmp_path))
    assert args.handler(args) == 2
    assert "no run folders" in capsys.readouterr().err


def test_labels_name_slice_metric_actor_and_feedback() -> None:
    record = {
        "slice": "memory_qa-standard",
        "settings": {
            "metric": "seq@k",
            "feedback_mode": "socratic",
            "actor": {"model": "openai/gpt-4o", "temperature": None},
            "critic": {"model": "offline/echo"},
        },
    }
    assert plot.run_label(record) == (
        "memory_qa-standard · seq@k · openai/gpt-4o · socratic (offline/echo)"
    )

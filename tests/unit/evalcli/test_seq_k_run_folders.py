"""Run folders both ways against seq_k's own runs (tests/fixtures/seq_k/arcagi2/runs): given
the same model answers, Gauntlet writes what seq_k wrote, byte for byte, Gauntlet's own keys
aside (tests/fixtures/seq_k/compare.py says how it compares); and Gauntlet reads seq_k's folders
with seq_k's numbers. The model is the fixture's deterministic one (arc_model.py), answered
in process as the fake server answered seq_k."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from app.evaluation.commands.cli import main
from app.evaluation.commands.folder import RunFolderStore, run_folder_for
from app.evaluation.commands.variant import load_yaml, parse_variant, run_config_from_variant
from app.evaluation.engine.benchmark import Benchmark
from app.evaluation.engine.runner import RunConfig, run_benchmark
from app.evaluation.engine.types import CallRecord, Message, ModelSpec
from app.outbound.prices import bundled_prices
from app.outbound.providers import bundled_catalog
from tests.fixtures.seq_k.arc_model import ArcModel
from tests.fixtures.seq_k.compare import compare_folders

REPOSITORY = Path(__file__).resolve().parents[3]
FIXTURE = REPOSITORY / "tests" / "fixtures" / "seq_k" / "arcagi2"
SEQ_K_RUNS = FIXTURE / "runs"
VARIANTS = sorted((FIXTURE / "variants").glob("*.yaml"))
SEQ_K_FOLDERS = sorted(path.parent for path in SEQ_K_RUNS.rglob("config.json"))
# What the runner adds to seq_k's run summary before and after its figures.
SEQ_K_RUN_HEADER = ("metric", "model", "feedback_mode", "pricing_last_updated", "last_updated")


class ArcClient:
    """The fixture's model in process, recorded and priced as the direct transport records
    and prices a call to an OpenAI-compatible server (litellm's price of the model id)."""

    def __init__(self) -> None:
        self.model = ArcModel()
        self.calls = 0

    async def complete(self, spec: ModelSpec, messages: list[Message]) -> CallRecord:
        self.calls += 1
        reply, usage = self.model.answer(str(messages[-1]["content"]))
        price = bundled_prices().price_of(spec.model, bundled_catalog())
        assert price is not None
        tokens = {
            "input_tokens": usage["prompt_tokens"],
            "cached_tokens": usage["cached_tokens"],
            "thinking_tokens": usage["reasoning_tokens"],
            "output_tokens": usage["completion_tokens"],
        }
        return CallRecord(
            model=spec.model,
            prompt=list(messages),
            output=reply,
            cost_usd=price.cost(**tokens),
            **tokens,
        )


def variant_config(path: Path) -> RunConfig:
    variant = parse_variant(load_yaml(path), source=str(path))
    return run_config_from_variant(variant, benchmark="arcagi2", prices={}, allow_continue=False)


def run_variant(path: Path, runs_root: Path) -> Path:
    benchmark = Benchmark.load("arcagi2")
    config = variant_config(path)
    folder = run_folder_for(runs_root, benchmark, config)
    client = ArcClient()
    result = asyncio.run(run_benchmark(benchmark, config, RunFolderStore(folder), client))
    assert result.status == "complete" and client.calls > 0
    return folder


@pytest.fixture
def at_the_root(monkeypatch: pytest.MonkeyPatch) -> None:
    # The variants name their data folder from the repository's root, as seq_k ran them.
    monkeypatch.chdir(REPOSITORY)


def test_the_fixture_holds_seq_ks_three_runs() -> None:
    assert [path.name for path in VARIANTS] == [
        "passk.yaml",
        "seqk_binary.yaml",
        "seqk_cell_match.yaml",
    ]
    assert [folder.relative_to(SEQ_K_RUNS).as_posix() for folder in SEQ_K_FOLDERS] == [
        "arcagi2-evaluation/passk/openai__gpt-4o-mini/deterministic/binary",
        "arcagi2-evaluation/seqk/openai__gpt-4o-mini/deterministic/binary",
        "arcagi2-evaluation/seqk/openai__gpt-4o-mini/deterministic/cell_match",
    ]


@pytest.mark.usefixtures("at_the_root")
@pytest.mark.parametrize("variant", VARIANTS, ids=lambda path: path.stem)
def test_gauntlet_writes_the_run_folder_seq_k_wrote(variant: Path, tmp_path: Path) -> None:
    runs_root = tmp_path / "runs"
    folder = run_variant(variant, runs_root)
    theirs = SEQ_K_RUNS / folder.relative_to(runs_root)
    assert theirs.is_dir(), f"seq_k wrote no {theirs.relative_to(SEQ_K_RUNS)}"
    assert compare_folders(folder, theirs) == []


def metrics_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    assert main(["metrics", *argv, "--json"]) == 0
    [run] = json.loads(capsys.readouterr().out)["runs"]
    assert isinstance(run, dict)
    return run


@pytest.mark.parametrize(
    "folder", SEQ_K_FOLDERS, ids=lambda path: "-".join(path.relative_to(SEQ_K_RUNS).parts[1::3])
)
def test_gauntlet_reads_seq_ks_numbers_from_its_folders(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    theirs = json.loads((folder / "summary.json").read_text(encoding="utf-8"))
    run = metrics_json(capsys, str(folder))
    figures = {key: value for key, value in theirs.items() if key not in SEQ_K_RUN_HEADER}
    assert {key: run[key] for key in figures} == figures
    # Every task of seq_k's runs is complete for its k: done, none partial.
    assert run["task_status"] == {"total": 3, "done": 3, "partial": 0, "error": 0}
    assert run["unpriced_models"] == []
    assert run["cost_usd"] == theirs["tokens"]["openai/gpt-4o-mini"]["cost_usd"]
    assert main(["inspect", str(folder), "--task-index", "2"]) == 0
    assert capsys.readouterr().out.startswith("task 2 (aa11): done, ")

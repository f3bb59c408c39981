from __future__ import annotations

import io
import json
import os
from pathlib import Path
from typing import Any

import pytest
import yaml

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from app.cli import build_parser
from app.evaluation.commands.cli import main
from app.evaluation.commands.report import Console
from app.evaluation.engine.benchmark import Task
from app.evaluation.engine.metrics import TaskOutcome, TaskStats
from app.evaluation.engine.runner import RunEvent
from app.evaluation.engine.types import ActorSection, JudgeSection, TrialRecord

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "benchmarks" / "jsonl" / "variants" / "example.yaml"
FOLDER = Path("jsonl-example") / "seqk" / "offline__echo" / "offline__judge" / "hint"


def write_variant(tmp_path: Path, name: str, **changes: Any) -> Path:
    data = yaml.safe_load(EXAMPLE.read_text())
    data["benchmark"] = "jsonl"
    data.update(changes)
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data))
    return path


def eval_main(*argv: str) -> int:
    return main(list(argv))


@pytest.fixture
def finished_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    runs = tmp_path / "runs"
    assert eval_main("run", str(EXAMPLE), "--runs-root", str(runs), "--char-limit", "80") == 0
    out, err = capsys.readouterr()
    assert "--- task 1 (capital-france) attempt 1: pass, score 1.00 ---" in out
    assert "seq@t" in out and "0.300 ± 0.153" in out
    assert "[########################] 10/10 tasks" in err
    return runs / FOLDER


def test_run_writes_the_run_folder_and_a_rerun_resumes_without_calls(
    finished_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert (finished_run / "config.json").is_file()
    assert len(list(finished_run.glob("task-*/attempt-*.json"))) == 24
    assert eval_main("run", str(EXAMPLE), "--runs-root", str(tmp_path / "runs")) == 0
    out, err = capsys.readouterr()
    assert "--- task" not in out
    assert "0 attempts" in err and "10 resumed done" in err
    assert len(list(finished_run.glob("task-*/attempt-*.json"))) == 24


def test_run_prints_prompts_up_to_the_char_limit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    variant = write_variant(tmp_path, "v.yaml", console_char_limit=20, task_indices=[2], k=2)
    assert eval_main("run", str(variant), "--runs-root", str(tmp_path / "runs")) == 0
    out = capsys.readouterr().out
    assert "What is the capital \n... [" in out
    assert out.count("--- task 2 (capital-japan)") == 2


def test_other_settings_are_refused_and_continue_extends(
    finished_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = str(tmp_path / "runs")
    hotter = write_variant(tmp_path, "hot.yaml", temperature=0.9)
    assert eval_main("run", str(hotter), "--runs-root", runs) == 2
    assert "actor.temperature: null -> 0.9" in capsys.readouterr().err

    longer = write_variant(tmp_path, "k4.yaml", k=4)
    assert eval_main("run", str(longer), "--runs-root", runs) == 2
    assert "continue: true" in capsys.readouterr().err
    assert eval_main("run", str(longer), "--runs-root", runs, "--continue") == 0
    # 7 unsolved tasks get their 4th attempt.
    assert len(list(finished_run.glob("task-*/attempt-*.json"))) == 24 + 7


def test_bad_variants_are_reported_with_the_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    typo = write_variant(tmp_path, "typo.yaml", feedbak_mode="raw")
    assert eval_main("run", str(typo)) == 2
    assert "feedbak_mode" in capsys.readouterr().err
    negative = write_variant(tmp_path, "neg.yaml", k=0)
    assert eval_main("run", str(negative)) == 2
    assert "k:" in capsys.readouterr().err
    loose = tmp_path / "loose.yaml"
    loose.write_text("metric: pass@k\nk: 1\nmodel: offline/echo\n")
    assert eval_main("run", str(loose)) == 2
    assert "`benchmark:` key" in capsys.readouterr().err
    # The research harness's mode names that this benchmark lacks are refused, listing the
    # modes it has.
    for mode in ("critic", "retry_diagnostics"):
        unknown = write_variant(tmp_path, f"{mode}.yaml", feedback_mode=mode)
        assert eval_main("run", str(unknown), "--runs-root", str(tmp_path / "runs")) == 2
        err = capsys.readouterr().err
        assert f"unknown feedback mode {mode!r} for benchmark jsonl" in err
        assert "known: binary, compact, directive, hint, judge, raw, socratic" in err
    assert not (tmp_path / "runs").exists()


def test_variant_defaults_judge_to_the_model_and_critic_to_the_judge(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The original harness's defaults: no judge_model means the actor's model judges; no
    critic_model means the judge criticises (so an LLM-critic mode runs without naming one)."""
    runs = tmp_path / "runs"
    variant = write_variant(tmp_path, "socratic.yaml", feedback_mode="socratic", task_indices=[4])
    data = yaml.safe_load(variant.read_text())
    del data["judge_model"]
    variant.write_text(yaml.safe_dump(data))
    assert eval_main("run", str(variant), "--runs-root", str(runs)) == 0
    capsys.readouterr()
    # Verifier level: the judge (the actor's model); feedback level: the critic (the judge).
    folder = runs / "jsonl-example" / "seqk" / "offline__echo" / "offline__echo" / "offline__echo"
    settings = json.loads((folder / "config.json").read_text())["settings"]
    assert settings["judge"]["model"] == settings["critic"]["model"] == "offline/echo"
    first = json.loads((folder / "task-4" / "attempt-1.json").read_text())
    assert first["critic"]["model"] == "offline/echo"
    assert first["critic"]["calls"][0]["model"] == "offline/echo"


def test_metrics_table_json_and_k(finished_run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert eval_main("metrics", str(finished_run.parents[3]), "--k", "2") == 0
    out = capsys.readouterr().out
    assert "seq@k, k=2: 10 tasks complete" in out
    assert "gain seq@2 - seq@1: 0.000 ± 0.000" in out
    assert "offline/echo" in out and "offline/judge" in out

    assert eval_main("metrics", str(finished_run), "--json") == 0
    document = json.loads(capsys.readouterr().out)
    (run,) = document["runs"]
    assert run["curves"]["seq_at"] == [0.3, 0.3, 0.3]
    assert run["usage"]["actor"]["offline/echo"]["calls"] == 24
    assert run["cost_usd"] == 0.0
    assert run["task_status"]["done"] == 10

    assert eval_main("metrics", str(finished_run), "--k", "4") == 2
    assert "between 1 and the run's k (3)" in capsys.readouterr().err


def test_metrics_prices_override(
    finished_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    prices = tmp_path / "prices.yaml"
    prices.write_text("offline/echo: {input_cost_per_token: 0.001, output_cost_per_token: 0.002}\n")
    assert eval_main("metrics", str(finished_run), "--json", "--prices", str(prices)) == 0
    run = json.loads(capsys.readouterr().out)["runs"][0]
    echo = run["usage"]["actor"]["offline/echo"]
    expected = echo["input_tokens"] * 0.001 + echo["output_tokens"] * 0.002
    assert echo["cost_usd"] == pytest.approx(expected)


def test_inspect_a_task_and_an_attempt(
    finished_run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert eval_main("inspect", str(finished_run), "--task-index", "2") == 0
    out = capsys.readouterr().out
    assert "task 2 (capital-japan): done, 3 attempts" in out
    assert "Hint: It was called Edo until 1868." in out

    assert eval_main("inspect", str(finished_run), "--task-index", "2", "--attempt", "2") == 0
    out = capsys.readouterr().out
    assert "This is attempt 2 of 3." in out
    assert "details (private):" in out and "Tokyo" in out

    assert (
        eval_main("inspect", str(finished_run), "--task-index", "2", "--attempt", "1", "--json")
        == 0
    )
    assert json.loads(capsys.readouterr().out)["attempt_index"] == 1
    assert eval_main("inspect", str(finished_run), "--task-index", "99") == 2
    assert "no task 99" in capsys.readouterr().err


def test_gauntlet_has_the_eval_commands() -> None:
    args = build_parser().parse_args(["eval", "metrics", "runs", "--k", "3"])
    assert (args.command, args.eval_command, args.k) == ("eval", "metrics", 3)


def test_console_without_a_terminal_prints_lines_and_clips_prompts() -> None:
    out, err = io.StringIO(), io.StringIO()
    console = Console(total=2, char_limit=5, out=out, err=err, interactive=False)
    task = Task(task_id="a", canonical_index=1, prompt="p")
    stats = TaskStats(outcome=TaskOutcome(task_index=1, task_id="a"))
    trial = TrialRecord(
        attempt_index=1,
        actor=ActorSection(
            model="m", prompt=[{"role": "user", "content": "0123456789"}], output=""
        ),
        judge=JudgeSection(model=None, success=False, score=0.25),
    )
    console.handle(RunEvent(kind="trial", task=task, stats=stats, trial=trial))
    console.handle(RunEvent(kind="task_error", task=task, stats=stats, error="boom"))
    console.close()
    assert out.getvalue() == (
        "--- task 1 (a) attempt 1: fail, score 0.25 ---\n01234\n... [5 more characters]\n"
    )
    lines = err.getvalue().splitlines()
    assert "task 1 (a) failed: boom" in lines
    assert lines[-1].startswith("[############------------] 1/2 tasks | 1 attempts")
    assert "\r" not in err.getvalue()


@pytest.mark.parametrize(
    ("environment", "dotenv"),
    [
        ({}, None),
        ({"GAUNTLET_ALLOWED_API_BASES": '["http://127.0.0.1:8000/v1"]'}, None),
        ({"gauntlet_allowed_api_bases": '[{"url": "http://a:1/v1", "api_key_env": "K"}]'}, None),
        ({}, "GAUNTLET_ALLOWED_API_BASES='[\"http://from-dotenv:1/v1\"]'\n"),
        (
            {"GAUNTLET_ALLOWED_API_BASES": '["http://from-env:1/v1"]'},
            "GAUNTLET_ALLOWED_API_BASES='[\"http://from-dotenv:1/v1\"]'\n",
        ),
    ],
)
def test_the_cli_reads_the_allowed_bases_as_the_settings_do(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    environment: dict[str, str],
    dotenv: str | None,
) -> None:
    from app.evaluation.commands.cli import allowed_api_bases_setting
    from app.kit.config import Settings

    for name in list(os.environ):
        if name.lower() == "gauntlet_allowed_api_bases":
            monkeypatch.delenv(name)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    env_file = tmp_path / ".env"
    if dotenv is not None:
        env_file.write_text(dotenv)
    expected = Settings(_env_file=env_file).allowed_api_bases  # type: ignore[call-arg]
    assert allowed_api_bases_setting(env_file=env_file) == expected


def test_a_malformed_allowed_bases_setting_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    variant = write_variant(tmp_path, "v.yaml")
    monkeypatch.setenv("GAUNTLET_ALLOWED_API_BASES", "[not json")
    assert eval_main("run", str(variant), "--runs-root", str(tmp_path / "runs")) == 2
    assert "GAUNTLET_ALLOWED_API_BASES is not a JSON list" in capsys.readouterr().err
    monkeypatch.setenv("GAUNTLET_ALLOWED_API_BASES", '["ftp://x/v1"]')
    assert eval_main("run", str(variant), "--runs-root", str(tmp_path / "runs")) == 2
    assert "GAUNTLET_ALLOWED_API_BASES: entry 0" in capsys.readouterr().err


def test_ctrl_c_after_the_run_finished_exits_130_without_a_trace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import app.evaluation.commands.cli as cli

    def interrupted(*_: Any, **__: Any) -> str:
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "format_summary", interrupted)
    runs = tmp_path / "runs"
    assert eval_main("run", str(EXAMPLE), "--runs-root", str(runs)) == 130
    assert "the run had finished and its results are saved" in capsys.readouterr().err
    assert len(list((runs / FOLDER).glob("task-*/attempt-*.json"))) == 24
    monkeypatch.undo()
    # Nothing is left to do: the same command finds every task done.
    assert eval_main("run", str(EXAMPLE), "--runs-root", str(runs)) == 0
    assert "10 resumed done" in capsys.readouterr().err

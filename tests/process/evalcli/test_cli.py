"""`gauntlet eval` as a command in a process of its own: Ctrl-C stops a run cleanly and a rerun
repeats no finished call, and `metrics` and `inspect` never import litellm (the commands' logic
in process is tests/unit/evalcli/test_cli.py)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import yaml

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from tests.fixtures.fake_openai import Behaviour, FakeOpenAIServer
from tests.unit.evalcli import test_cli as in_process

ROOT = Path(__file__).resolve().parents[3]

# Longer than any test may take (pytest-timeout stops a test at 300 s); the server's stop wakes
# a held call at once.
HELD_CALL_S = 600

# A run folder the command writes in this process, as the commands' own tests make it.
finished_run = in_process.finished_run


def test_metrics_and_inspect_never_import_litellm(finished_run: Path) -> None:
    script = (
        "import sys\n"
        "from app.cli import main\n"
        "for argv in (['eval', 'metrics', sys.argv[1]],\n"
        "             ['eval', 'inspect', sys.argv[1], '--task-index', '1', '--attempt', '1']):\n"
        "    try:\n"
        "        main(argv)\n"
        "    except SystemExit as done:\n"
        "        assert done.code == 0, done.code\n"
        "print('litellm' in sys.modules)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script, str(finished_run)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().endswith("False")


def test_ctrl_c_stops_cleanly_and_a_rerun_repeats_no_finished_call(tmp_path: Path) -> None:
    rows = [{"id": f"r{i}", "prompt": f"Say {i}", "answer": "never"} for i in range(1, 7)]
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in rows))
    with FakeOpenAIServer(default=Behaviour.slow(0.3, text="no")) as server:
        # Three calls are answered, every later one is held until the server stops: the run
        # is still going when Ctrl-C comes, however long the test takes to send it (a run
        # left to finish on its own would end with status 0 before a late signal).
        held = Behaviour.slow(HELD_CALL_S, text="no")
        server.enqueue(*[Behaviour.ok(text="no")] * 3, *[held] * 9)
        variant = tmp_path / "slow.yaml"
        variant.write_text(
            yaml.safe_dump(
                {
                    "benchmark": "jsonl",
                    "metric": "pass@k",
                    "k": 2,
                    "model": {
                        "model": "openai/fake-model",
                        "api_base": server.base_url,
                        # Longer than a held call: no held call times out and is retried.
                        "timeout_s": HELD_CALL_S * 2,
                    },
                    "options": {"path": str(data)},
                    "concurrency": 2,
                    "console_char_limit": 0,
                }
            )
        )
        command = [
            sys.executable,
            "-m",
            "app.cli",
            "eval",
            "run",
            str(variant),
            "--runs-root",
            str(tmp_path / "runs"),
        ]
        env = {
            **os.environ,
            "OPENAI_API_KEY": "sk-test-dummy",
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        }
        with _sigint_at_its_default_in_children():
            process = subprocess.Popen(
                command,
                cwd=ROOT,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        runs = tmp_path / "runs"
        deadline = time.monotonic() + 60
        while len(list(runs.rglob("attempt-*.json"))) < 3:
            assert process.poll() is None, process.communicate()
            assert time.monotonic() < deadline
            time.sleep(0.02)
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=30)
        assert process.returncode == 130, err
        assert "run the same command to resume" in err
        (folder,) = {path.parent.parent for path in runs.rglob("attempt-*.json")}
        saved = len(list(folder.glob("task-*/attempt-*.json")))
        assert saved == 3
        assert json.loads((folder / "summary.json").read_text())["status"] == "stopped"

        server.reset()
        rerun = subprocess.run(
            command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
        )
        assert rerun.returncode == 0, rerun.stderr
        assert len(list(folder.glob("task-*/attempt-*.json"))) == 12
        assert server.request_count == 12 - saved


@contextlib.contextmanager
def _sigint_at_its_default_in_children() -> Iterator[None]:
    """Processes started inside get SIGINT at its default, as from a terminal, whoever started
    the tests. A test runner started as a background job (`pytest &` in a script) ignores
    SIGINT, and an ignored signal stays ignored across exec: the CLI would never see the
    Ctrl-C. A caught one is reset to the default, so SIGINT is caught here meanwhile."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)

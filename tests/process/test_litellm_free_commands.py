"""Commands that make no litellm call never import litellm (it takes seconds to import).

Each command runs in a fresh interpreter, exactly as `gauntlet` runs it (`app.cli.main` with
the command's arguments), and reports afterwards whether `litellm` is in `sys.modules`:
`gauntlet --help`, `migrate`, `seed`, `serve` (started until `/healthz` answers, then
stopped), and `gauntlet eval run` on the direct transport (an `openai-compatible/` model behind
a base URL) followed by `eval metrics`, `inspect`, `plot` and `upload` of the folder it wrote.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.fixtures.fake_openai import Behaviour, FakeOpenAIServer

ROOT = Path(__file__).resolve().parents[2]
MARKER = "LITELLM-IMPORTED:"
# Also reported: what else would slow these commands' start (the openai SDK: ~0.5 s; HTTP
# client libraries: 0.1-0.2 s; pydantic and the settings: ~0.1 s).
HEAVY = ("openai", "aiohttp", "httpx", "pydantic", "app.kit.config")

# Runs `app.cli.main` once per argument list (JSON in argv[1]); a command's SystemExit is its
# exit code. The last line says whether litellm was imported.
PROBE = f"""
import json, sys
from app.cli import main
codes = []
for argv in json.loads(sys.argv[1]):
    try:
        main(argv)
        codes.append(0)
    except SystemExit as done:
        codes.append(done.code if isinstance(done.code, int) else (0 if done.code is None else 1))
loaded = sorted(name for name in {HEAVY!r} if name in sys.modules)
report = {{"codes": codes, "litellm": "litellm" in sys.modules, "loaded": loaded}}
print("{MARKER}", json.dumps(report))
"""

# `gauntlet serve` until /healthz answers 200, then SIGINT, as a terminal's Ctrl-C would.
SERVE_PROBE = f"""
import json, os, signal, sys, threading, time, urllib.request
from app.cli import main
port = int(sys.argv[1])
health = {{}}

def watch():
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{{port}}/healthz", timeout=2) as answer:
                health["status"] = answer.status
                break
        except Exception:
            time.sleep(0.05)
    os.kill(os.getpid(), signal.SIGINT)

threading.Thread(target=watch, daemon=True).start()
try:
    main(["serve", "--port", str(port)])
except (SystemExit, KeyboardInterrupt):
    pass
loaded = sorted(name for name in {HEAVY!r} if name in sys.modules)
report = {{"health": health.get("status"), "litellm": "litellm" in sys.modules, "loaded": loaded}}
print("{MARKER}", json.dumps(report))
"""


def _environment(data_dir: Path) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("GAUNTLET_")}
    env.update(
        GAUNTLET_DATA_DIR=str(data_dir),
        LITELLM_LOCAL_MODEL_COST_MAP="True",
        AWS_ACCESS_KEY_ID="testing",
        AWS_SECRET_ACCESS_KEY="testing",
        AWS_DEFAULT_REGION="us-east-1",
    )
    env.pop("AWS_PROFILE", None)
    return env


def _report(stdout: str) -> dict[str, Any]:
    lines = [line for line in stdout.splitlines() if line.startswith(MARKER)]
    assert lines, stdout[-2000:]
    result: dict[str, Any] = json.loads(lines[-1].removeprefix(MARKER))
    return result


def run_commands(*commands: list[str], data_dir: Path) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(list(commands))],
        cwd=ROOT,
        env=_environment(data_dir),
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = _report(done.stdout)
    report["stdout"], report["stderr"] = done.stdout, done.stderr
    return report


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_gauntlet_help_does_not_import_litellm(tmp_path: Path) -> None:
    report = run_commands(["--help"], ["eval", "--help"], data_dir=tmp_path / "data")
    assert report["codes"] == [0, 0]
    assert "eval" in report["stdout"]
    assert report["litellm"] is False


def test_migrate_and_seed_do_not_import_litellm(tmp_path: Path) -> None:
    report = run_commands(["migrate"], ["seed"], data_dir=tmp_path / "data")
    assert report["codes"] == [0, 0]
    assert "demo tenant 'demo'" in report["stdout"]
    assert report["litellm"] is False


def test_serve_starts_and_answers_health_without_importing_litellm(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    assert run_commands(["migrate"], data_dir=data_dir)["codes"] == [0]
    done = subprocess.run(
        [sys.executable, "-c", SERVE_PROBE, str(free_port())],
        cwd=ROOT,
        env=_environment(data_dir),
        capture_output=True,
        text=True,
        timeout=120,
    )
    report = _report(done.stdout)
    assert report["health"] == 200, done.stderr[-3000:]
    assert report["litellm"] is False
    assert "openai" not in report["loaded"] and "aiohttp" not in report["loaded"]


# The eval commands, on a run made through the direct transport


@pytest.fixture(scope="module")
def direct_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[str, Any]]]:
    """`gauntlet eval run` of an `openai-compatible/` model behind a base URL: the run folder
    and the probe's report."""
    root = tmp_path_factory.mktemp("direct-run")
    # The fake model answers the first grid of the prompt: wrong for these puzzles.
    server = FakeOpenAIServer(default=Behaviour.ok(text="[[1, 2], [3, 4]]", cached_tokens=0))
    with server:
        variant = root / "direct.yaml"
        variant.write_text(
            yaml.safe_dump(
                {
                    "benchmark": "arcagi2",
                    "metric": "seq@k",
                    "k": 2,
                    "feedback_mode": "cell_match",
                    "model": {"model": "openai-compatible/fake", "api_base": server.base_url},
                    "max_tasks": 3,
                    "prices": {
                        "openai-compatible/fake": {
                            "input_cost_per_token": 0.001,
                            "output_cost_per_token": 0.002,
                        }
                    },
                }
            )
        )
        report = run_commands(
            ["eval", "run", str(variant), "--runs-root", str(root / "runs")],
            data_dir=root / "data",
        )
        report["requests"] = server.request_count
        report["served_models"] = sorted({str(body.get("model")) for body in server.requests})
    [folder] = [path.parent for path in (root / "runs").rglob("config.json")]
    yield folder, report


def test_a_run_on_the_direct_transport_never_imports_litellm(
    direct_run: tuple[Path, dict[str, Any]],
) -> None:
    folder, report = direct_run
    assert report["codes"] == [0], report["stderr"][-3000:]
    assert report["litellm"] is False
    assert report["loaded"] == []  # the run's start-up is the interpreter's and its own
    # Three tasks, two attempts each, every one an HTTP call to the server, named without
    # the prefix; the record holds the four token fields and the cost from `prices:`.
    assert report["requests"] == 6 and report["served_models"] == ["fake"]
    assert folder.parts[-3:] == ("openai-compatible__fake", "deterministic", "cell_match")
    attempt = json.loads((folder / "task-1" / "attempt-1.json").read_text())
    actor = attempt["actor"]
    assert actor["model"] == "openai-compatible/fake"
    assert (actor["input_tokens"], actor["cached_tokens"]) == (11, 0)
    assert (actor["thinking_tokens"], actor["output_tokens"]) == (2, 7)
    assert actor["cost_usd"] == pytest.approx(11 * 0.001 + 7 * 0.002)


def test_metrics_inspect_plot_and_upload_do_not_import_litellm(
    direct_run: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    from moto.server import ThreadedMotoServer

    folder, _ = direct_run
    port = free_port()
    s3 = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    s3.start()
    try:
        import boto3

        endpoint = f"http://127.0.0.1:{port}"
        boto3.client(
            "s3",
            endpoint_url=endpoint,
            region_name="us-east-1",
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
        ).create_bucket(Bucket="runs")
        report = run_commands(
            ["eval", "metrics", str(folder), "--json"],
            ["eval", "inspect", str(folder), "--task-index", "1", "--attempt", "2"],
            ["eval", "plot", str(folder), "--out", str(tmp_path / "chart.svg")],
            ["eval", "upload", str(folder), "--bucket", "runs", "--endpoint-url", endpoint],
            data_dir=tmp_path / "data",
        )
    finally:
        s3.stop()
    assert report["codes"] == [0, 0, 0, 0], report["stderr"][-3000:]
    assert (tmp_path / "chart.svg").is_file()
    assert "attempt 2, seq@k" in report["stdout"]
    assert report["litellm"] is False

"""Fair timing: an attempt's `elapsed_ms` holds its model calls only, and a process's first call
is timed like its later ones (litellm loads its provider modules lazily on a process's first
call: the CLI and the workers make untimed calls before any attempt).

No timing assertion: what the timed span holds is compared structurally. A probe wraps what
`LLMClient` times (`litellm.acompletion`, or the offline models' in-process answer) and records
how many modules were imported during each call. Loading modules is what a cold first call
does; a warm one imports nothing, like every later call. The offline models answer in the
process; sent through litellm instead (`litellm` path), they stand for any litellm model.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

PROBE = r"""
import asyncio, json, sys
from app.evaluation.engine import llm
from app.evaluation.engine.types import ModelSpec

mode, path = sys.argv[1], sys.argv[2]
litellm = llm.load_litellm()
if mode == "worker":
    # What a Celery worker does: the main process's worker_init hook, then (after the fork)
    # each pool process's worker_process_init hook, before either takes work.
    from celery import signals
    import app.attempt.tasks  # connects the hooks
    from app.attempt import runner
    signals.worker_init.send(sender=None)
    signals.worker_process_init.send(sender=None)
    run = runner.run_on_process_loop
elif mode == "cli":
    llm.warm_up()
    run = asyncio.run
else:
    run = asyncio.run

imported_during_call = []

def probing(original):
    async def probe(*arguments, **keywords):
        before = len(sys.modules)
        try:
            return await original(*arguments, **keywords)
        finally:
            imported_during_call.append(len(sys.modules) - before)
    return probe

if path == "litellm":
    llm.is_offline = lambda model: False  # the offline models as litellm calls them
    litellm.acompletion = probing(litellm.acompletion)
else:
    llm._offline_answer = probing(llm._offline_answer)
client = llm.LLMClient()
for model in ("offline/echo", "offline/judge", "offline/echo"):
    record = run(client.complete(ModelSpec(model=model), [{"role": "user", "content": "hi"}]))
    assert record.output
print(json.dumps(imported_during_call))
"""


def imports_per_call(mode: str, tmp_path: Path, path: str = "litellm") -> list[int]:
    env = {
        **os.environ,
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "GAUNTLET_DATA_DIR": str(tmp_path / "data"),
    }
    done = subprocess.run(
        [sys.executable, "-c", PROBE, mode, path],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    counts: list[int] = json.loads(done.stdout.strip().splitlines()[-1])
    return counts


def test_a_cold_process_loads_modules_inside_its_first_timed_call(tmp_path: Path) -> None:
    # The control: without a warm-up, the first call's timed span holds litellm's lazy imports.
    first, *later = imports_per_call("cold", tmp_path)
    assert first > 0
    assert later == [0, 0]


@pytest.mark.parametrize("path", ["litellm", "in-process"])
@pytest.mark.parametrize("mode", ["cli", "worker"])
def test_after_the_warm_up_the_first_call_is_timed_like_the_later_ones(
    mode: str, path: str, tmp_path: Path
) -> None:
    assert imports_per_call(mode, tmp_path, path) == [0, 0, 0]


def test_the_worker_hooks_warm_up_before_the_pool_takes_work() -> None:
    from celery import signals

    import app.attempt.tasks as tasks

    parent = [receiver() for _, receiver in signals.worker_init.receivers]
    child = [receiver() for _, receiver in signals.worker_process_init.receivers]
    assert tasks._load_litellm_before_forking in parent
    assert tasks._warm_up_pool_process in child


def test_a_pool_process_skips_its_warm_up_when_the_main_process_had_none(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Without the main process's warm-up a pool process's call would load every module itself,
    seconds that Celery's start-up timeout does not allow; it leaves the cold call to its first
    attempt rather than be killed and restarted."""
    from app.attempt import runner
    from app.evaluation.engine import llm

    calls: list[str] = []

    async def spy() -> bool:
        calls.append("warm-up")
        return True

    monkeypatch.setattr(runner, "warm_up_calls", spy)
    monkeypatch.setattr(llm, "_warmed_up", False)
    assert runner.warm_up_process() is False and calls == []
    monkeypatch.setattr(llm, "_warmed_up", True)
    assert runner.warm_up_process() is True and calls == ["warm-up"]


def test_a_worker_with_its_warm_up_off_neither_imports_litellm_nor_calls(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`GAUNTLET_WORKER_WARM_UP=false`: the worker's hook returns at once, so its pool
    processes skip their warm-up too (they warm up only after the main process did)."""
    import app.attempt.tasks as tasks

    warmed: list[str] = []
    monkeypatch.setattr(tasks, "warm_up", lambda: warmed.append("warm-up") or True)
    monkeypatch.setattr(tasks._settings, "worker_warm_up", False)
    tasks._load_litellm_before_forking()
    assert warmed == []
    monkeypatch.setattr(tasks._settings, "worker_warm_up", True)
    tasks._load_litellm_before_forking()
    assert warmed == ["warm-up"]

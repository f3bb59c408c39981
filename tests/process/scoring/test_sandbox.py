"""The scorer sandbox: every way a plugin can misbehave ends as `score=None` plus a reason, and
the pool keeps serving afterwards."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

import app.scoring.sandbox.launch as launch_module
import app.scoring.sandbox.pool as sandbox_module
from app.scoring.sandbox.launch import SandboxUnavailable
from app.scoring.sandbox.pool import (
    SandboxSettings,
    ScoreOutcome,
    ScorerError,
    ScorerSandbox,
    describe_isolation,
    get_sandbox,
)
from tests.fixtures.processes import processes_named, unique_comm

WEIGHTED = "scorers.weighted:WeightedScorer"
CTX = {"tenant_id": "t1", "challenge_id": "c1", "participant_id": "p1", "timeout_ms": 5000}
GOOD_METRICS = {"succeeded": True, "rating": 8, "elapsed_ms": 5000, "tokens_total": 1000}
HEAVY_PACKAGES = {"litellm", "fastapi", "sqlalchemy", "celery", "pydantic", "app"}


@pytest.fixture(scope="module")
def sandbox() -> Iterator[ScorerSandbox]:
    with ScorerSandbox(pool_size=2) as shared:
        yield shared


def run(
    sandbox: ScorerSandbox,
    scorer: str,
    config: dict[str, Any] | None = None,
    *,
    metrics: dict[str, Any] | None = None,
    timeout_ms: int = 5000,
) -> ScoreOutcome:
    return sandbox.score(f"scorers.testing:{scorer}", metrics or {}, config or {}, CTX, timeout_ms)


def assert_pool_works(sandbox: ScorerSandbox) -> None:
    for _ in range(3):  # more calls than children, so every child is exercised
        outcome = sandbox.score(WEIGHTED, GOOD_METRICS, {}, CTX, 5000)
        assert outcome == ScoreOutcome(score=165.0, details=outcome.details, error=None)


def echo_process(sandbox: ScorerSandbox) -> str:
    """Which scorer process served the call (pids repeat across PID namespaces)."""
    outcome = run(sandbox, "EchoScorer")
    assert outcome.details is not None, outcome.error
    token: str = outcome.details["process"]
    return token


def test_weighted_scorer_through_the_sandbox(sandbox: ScorerSandbox) -> None:
    outcome = sandbox.score(WEIGHTED, GOOD_METRICS, {}, CTX, 5000)
    assert outcome.error is None
    assert outcome.score == 165.0
    assert outcome.details is not None
    assert outcome.details["token_term"] == 10.0


def test_the_seed_names_load_the_same_scorer(sandbox: ScorerSandbox) -> None:
    """`services.scorers.` is the seed's name for scorers/: same code, same score."""
    outcome = sandbox.score("services.scorers.weighted:WeightedScorer", GOOD_METRICS, {}, CTX, 5000)
    assert outcome.error is None and outcome.score == 165.0
    sandbox.check("services.scorers.weighted:WeightedScorer")
    for outside in ("services.os:system", "services.scorers_evil:Scorer"):
        with pytest.raises(ScorerError, match="outside the allowed modules"):
            sandbox.check(outside)


def test_weighted_scorer_config_error_is_reported(sandbox: ScorerSandbox) -> None:
    outcome = sandbox.score(WEIGHTED, GOOD_METRICS, {"bonus": 1}, CTX, 5000)
    assert outcome.score is None
    assert outcome.error is not None
    assert outcome.error.startswith("scorer raised ValueError: unknown config key 'bonus'")


@pytest.mark.parametrize(
    ("scorer", "config", "reason"),
    [
        ("RaisingScorer", {}, "scorer raised ValueError: this scorer always fails"),
        ("CrashingScorer", {}, "scorer process died (signal 11, SIGSEGV)"),
        ("CrashingScorer", {"how": "abort"}, "scorer process died (signal 6, SIGABRT)"),
        ("ExitingScorer", {}, "scorer process exited with status 3"),
        ("HugeOutputScorer", {}, "result too large"),
        ("NaNScorer", {}, "score is not a finite number: nan"),
        ("InfScorer", {}, "score is not a finite number: inf"),
        ("StringScorer", {}, "score is not a number: 'high'"),
        ("BoolScorer", {}, "score is not a number: True"),
        ("MissingKeyScorer", {}, "scorer result has no 'score'"),
        ("NotADictScorer", {}, "scorer returned array, expected an object"),
        ("NotSerializableScorer", {}, "result is not JSON-serializable"),
        ("MemoryHogScorer", {}, "scorer raised MemoryError"),
        ("NoScoreMethod", {}, "cannot load scorer: scorers.testing:NoScoreMethod has no callable"),
        ("Missing", {}, "cannot load scorer: 'scorers.testing' has no class 'Missing'"),
    ],
)
def test_misbehaviour_becomes_a_reason_and_the_pool_survives(
    sandbox: ScorerSandbox, scorer: str, config: dict[str, Any], reason: str
) -> None:
    outcome = run(sandbox, scorer, config)
    assert outcome.score is None
    assert outcome.details is None
    assert outcome.error is not None
    assert outcome.error.startswith(reason), outcome.error
    assert_pool_works(sandbox)


@pytest.mark.parametrize("scorer", ["HangingScorer", "SleepingScorer"])
def test_hung_scorer_is_killed_at_the_deadline(sandbox: ScorerSandbox, scorer: str) -> None:
    comm = unique_comm()
    started = time.monotonic()
    outcome = run(sandbox, scorer, {"comm": comm}, timeout_ms=300)
    waited = time.monotonic() - started

    assert outcome == ScoreOutcome(score=None, details=None, error="timed out after 300 ms")
    assert waited >= 0.3  # never before its deadline (how soon after is for bench/)
    assert processes_named(comm) == []
    assert_pool_works(sandbox)


def test_printing_does_not_corrupt_the_protocol(sandbox: ScorerSandbox) -> None:
    outcome = run(sandbox, "PrintingScorer")
    assert outcome == ScoreOutcome(score=7.0, details=None, error=None)


def test_negative_score_is_clamped_and_the_raw_value_kept(sandbox: ScorerSandbox) -> None:
    outcome = run(sandbox, "NegativeScorer", {"score": -12.5})
    assert outcome == ScoreOutcome(
        score=0.0, details={"note": "below zero", "raw_score": -12.5}, error=None
    )


def test_details_that_are_not_an_object_are_dropped(sandbox: ScorerSandbox) -> None:
    assert run(sandbox, "DetailsNotADictScorer") == ScoreOutcome(2.5, None, None)


def test_scorer_receives_metrics_config_and_context(sandbox: ScorerSandbox) -> None:
    metrics = {"succeeded": False, "rating": 2.5, "metric_at": [0.5], "unknown_metric": 1}
    outcome = run(sandbox, "EchoScorer", {"score": 3, "x": "ü"}, metrics=metrics, timeout_ms=1234)
    assert outcome.score == 3.0
    assert outcome.details is not None
    received = outcome.details
    assert received["metrics"]["rating"] == 2.5
    assert received["metrics"]["metric_at"] == [0.5]
    assert "unknown_metric" not in received["metrics"]
    assert received["config"] == {"score": 3, "x": "ü"}
    # The scorer learns the timeout it really runs under, whatever the caller's ctx said.
    assert received["ctx"] == {**CTX, "timeout_ms": 1234}


def test_check_accepts_scorers_that_load_even_when_their_score_raises(
    sandbox: ScorerSandbox,
) -> None:
    """The check loads the class and finds `score`; what `score` does is the call's affair: a
    scorer accepted at registration whose score raises is scored as an error, not refused."""
    sandbox.check(WEIGHTED)
    sandbox.check("scorers.testing:RaisingScorer")
    raised = sandbox.score("scorers.testing:RaisingScorer", GOOD_METRICS, {}, CTX, 5000)
    assert raised.score is None and raised.error
    assert sandbox.score(WEIGHTED, GOOD_METRICS, {}, CTX, 5000).score is not None


@pytest.mark.parametrize(
    ("entrypoint", "reason"),
    [
        ("scorers.weighted", "malformed entrypoint"),
        ("scorers.weighted:", "malformed entrypoint"),
        (":WeightedScorer", "malformed entrypoint"),
        ("scorers..weighted:WeightedScorer", "malformed entrypoint"),
        ("scorers.weighted:Weighted Scorer", "malformed entrypoint"),
        ("scorers.weighted:WeightedScorer:extra", "malformed entrypoint"),
        ("os:system", "outside the allowed modules"),
        ("app.main:X", "outside the allowed modules"),
        ("scorers_evil.module:X", "outside the allowed modules"),
        ("scorers.does_not_exist:X", "cannot load scorer: cannot import 'scorers.does_not_exist'"),
        ("scorers.weighted:Nope", "cannot load scorer: 'scorers.weighted' has no class 'Nope'"),
        ("scorers.weighted:validate_config", "cannot load scorer: 'scorers.weighted' has no class"),
        ("scorers.testing:NoScoreMethod", "cannot load scorer: scorers.testing:NoScoreMethod"),
    ],
)
def test_check_refuses(sandbox: ScorerSandbox, entrypoint: str, reason: str) -> None:
    with pytest.raises(ScorerError) as refused:
        sandbox.check(entrypoint)
    assert reason in refused.value.reason


def test_disallowed_entrypoint_is_never_imported() -> None:
    with ScorerSandbox(pool_size=1, allowed_modules=("scorers.weighted",)) as narrow:
        with pytest.raises(ScorerError, match="outside the allowed modules"):
            narrow.check("scorers.testing:EchoScorer")
        outcome = narrow.score("scorers.testing:EchoScorer", {}, {}, CTX, 5000)
        assert outcome.score is None
        assert outcome.error is not None
        assert "outside the allowed modules" in outcome.error
        assert "scorers.testing" not in narrow._child_modules()
        narrow.check(WEIGHTED)


def test_child_environment_holds_no_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GAUNTLET_ADMIN_TOKEN", "admin-secret")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    monkeypatch.setenv("GAUNTLET_DATABASE_URL", "postgresql://user:pw@db/gauntlet")
    with ScorerSandbox(pool_size=1) as fresh:
        outcome = fresh.score("scorers.testing:EnvSnoopScorer", {}, {}, CTX, 5000)
    assert outcome.details is not None, outcome.error
    visible = set(outcome.details["env"])
    assert "PATH" in visible
    # LC_CTYPE is what Python itself sets when it coerces a C locale (PEP 538); PWD is set by
    # bubblewrap's --chdir.
    assert visible <= {
        "PATH",
        "LANG",
        "HOME",
        "PWD",
        "PYTHONPATH",
        "PYTHONHASHSEED",
        "PYTHONDONTWRITEBYTECODE",
        "LC_CTYPE",
    }


def test_child_loads_no_heavy_framework() -> None:
    with ScorerSandbox(pool_size=1) as single:
        assert single.score(WEIGHTED, GOOD_METRICS, {}, CTX, 5000).score == 165.0
        modules = single._child_modules(tenant=CTX["tenant_id"])
    assert "scorers.weighted" in modules  # the same child served the call
    loaded_packages = {name.split(".")[0] for name in modules}
    assert loaded_packages.isdisjoint(HEAVY_PACKAGES), loaded_packages & HEAVY_PACKAGES


def test_resource_limits_are_in_force(tmp_path: Path) -> None:
    with ScorerSandbox(
        pool_size=1,
        memory_bytes=300 * 2**20,
        file_size_bytes=4096,
        max_processes=20,
        max_open_files=40,
    ) as limited:
        limits = limited.score("scorers.testing:LimitsScorer", {}, {}, CTX, 5000).details
        assert limits == {
            "as": [300 * 2**20, 300 * 2**20],
            "cpu": [30, 32],
            "core": [0, 0],
            "fsize": [4096, 4096],
            "nproc": [20, 20],
            "nofile": [40, 40],
        }
        # The sandbox's /tmp is its own: what it writes there never reaches the host's.
        target = f"/tmp/{tmp_path.name}-out.bin"
        small = {"path": target, "bytes": 1000}
        assert limited.score("scorers.testing:FileWritingScorer", {}, small, CTX, 5000).score == 1
        big = {"path": target, "bytes": 10_000}
        outcome = limited.score("scorers.testing:FileWritingScorer", {}, big, CTX, 5000)
        assert outcome.error is not None
        assert outcome.error.startswith("scorer raised OSError: [Errno 27] File too large")
        assert not Path(target).exists()


def test_cpu_limit_kills_a_spinning_scorer_and_says_so() -> None:
    with ScorerSandbox(pool_size=1, cpu_seconds=1) as limited:
        outcome = limited.score("scorers.testing:HangingScorer", {}, {}, CTX, 30_000)
        assert outcome.score is None
        assert outcome.error == "scorer process exceeded its CPU time limit (signal 24, SIGXCPU)"
        assert limited.score(WEIGHTED, GOOD_METRICS, {}, CTX, 5000).score == 165.0


def test_memory_error_retires_the_child() -> None:
    with ScorerSandbox(pool_size=1) as single:
        before = echo_process(single)
        error = single.score("scorers.testing:MemoryHogScorer", {}, {}, CTX, 5000).error
        assert error is not None
        assert error.startswith("scorer raised MemoryError")
        assert echo_process(single) != before


def test_children_are_recycled_after_max_calls() -> None:
    with ScorerSandbox(pool_size=1, max_calls_per_child=2) as recycling:
        pids = [echo_process(recycling) for _ in range(5)]
    assert pids[0] == pids[1]
    assert pids[2] == pids[3] != pids[1]
    assert pids[4] != pids[3]


def test_child_that_died_while_idle_is_not_blamed_on_the_next_call() -> None:
    with ScorerSandbox(pool_size=1) as single:
        before = echo_process(single)
        (victim,) = single._children
        # Killing the sandbox's init ends the sandbox, as the OOM killer or an operator might.
        assert victim.init_pid is not None
        os.kill(victim.init_pid, signal.SIGKILL)
        deadline = time.monotonic() + 5
        while not victim.has_exited() and time.monotonic() < deadline:
            time.sleep(0.005)
        assert victim.has_exited()
        assert single.score(WEIGHTED, GOOD_METRICS, {}, CTX, 5000).score == 165.0
        assert echo_process(single) != before


def test_concurrent_calls_from_threads_get_their_own_answers(sandbox: ScorerSandbox) -> None:
    def echo(number: int) -> tuple[int, ScoreOutcome]:
        return number, run(sandbox, "EchoScorer", {"score": number})

    def hang(_: int) -> ScoreOutcome:
        return run(sandbox, "SleepingScorer", timeout_ms=200)

    with ThreadPoolExecutor(max_workers=6) as executor:
        hung = [executor.submit(hang, index) for index in range(4)]
        echoed = list(executor.map(echo, range(60)))

    for number, outcome in echoed:
        assert outcome.error is None
        assert outcome.score == float(number)
        assert outcome.details is not None
        assert outcome.details["config"] == {"score": number}
    for future in hung:
        assert future.result().error == "timed out after 200 ms"
    assert_pool_works(sandbox)


def test_closed_sandbox_refuses_calls_and_its_children_are_gone() -> None:
    single = ScorerSandbox(pool_size=1)
    echo_process(single)
    (child,) = single._children
    outer_pid, init_pid = child.process.pid, child.init_pid
    single.close()
    single.close()  # idempotent
    for pid in (outer_pid, init_pid):
        assert pid is not None
        assert not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text()
    with pytest.raises(RuntimeError, match="closed"):
        single.score(WEIGHTED, GOOD_METRICS, {}, CTX, 5000)


def test_close_during_a_call_ends_that_call_with_a_reason() -> None:
    single = ScorerSandbox(pool_size=1)
    results: list[ScoreOutcome] = []
    caller = threading.Thread(
        target=lambda: results.append(run(single, "SleepingScorer", timeout_ms=20_000))
    )
    caller.start()
    time.sleep(0.3)
    single.close()
    caller.join(timeout=10)
    assert not caller.is_alive()
    assert results == [ScoreOutcome(None, None, "scorer sandbox was closed during the call")]


def test_sandbox_that_cannot_start_fails_loudly(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(launch_module, "CHILD_SCRIPT", tmp_path / "missing.py")
    # bubblewrap is probed with a real sandbox before the pool starts.
    with pytest.raises(SandboxUnavailable, match="test sandbox failed"):
        ScorerSandbox(pool_size=2)


def test_get_sandbox_is_shared_and_configured_by_its_first_caller(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sandbox_module, "_shared_sandbox", None)
    settings = SandboxSettings(allowed_modules=("scorers.testing",), pool_size=1)
    shared = get_sandbox(settings)
    try:
        assert get_sandbox(SandboxSettings()) is shared
        assert isinstance(shared, ScorerSandbox)
        assert shared._pool_size == 1
        assert shared.isolation == "bubblewrap"
        shared.check("scorers.testing:EchoScorer")
        with pytest.raises(ScorerError, match="outside the allowed modules"):
            shared.check(WEIGHTED)
    finally:
        shared.close()


def test_the_start_up_line_says_bubblewrap_isolates_here() -> None:
    level, message = describe_isolation(SandboxSettings(isolation="bubblewrap"))
    assert level == "info"
    assert message.startswith("scorer sandbox: bubblewrap")
    assert "network" in message and "read-only" in message

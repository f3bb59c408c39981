"""What the bubblewrap sandbox isolates, shown with the hostile scorers of
tests/fixtures/hostile_scorers: each attack runs in a real sandbox and gets nothing."""

from __future__ import annotations

import os
import socket
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.scoring.sandbox.launch import NAMESPACED_UID, PROJECT_ROOT, SANDBOX_UIDS
from app.scoring.sandbox.pool import ScoreOutcome, ScorerError, ScorerSandbox
from tests.fixtures.processes import processes_named, unique_comm

HOSTILE = "tests.fixtures.hostile_scorers"
WEIGHTED = "scorers.weighted:WeightedScorer"
GOOD_METRICS = {"succeeded": True, "rating": 8, "elapsed_ms": 5000, "tokens_total": 1000}
SECRET = "sk-canary-" + os.urandom(8).hex()


def ctx(tenant: str = "tenant-a") -> dict[str, Any]:
    return {"tenant_id": tenant, "challenge_id": "c1", "participant_id": "p1", "timeout_ms": 5000}


@pytest.fixture(scope="module")
def sandbox() -> Iterator[ScorerSandbox]:
    # A secret in the parent's environment, as the worker's database URL and keys are.
    os.environ["GAUNTLET_TEST_CANARY"] = SECRET
    try:
        with ScorerSandbox(pool_size=2, allowed_modules=("scorers.", f"{HOSTILE}.")) as shared:
            yield shared
    finally:
        del os.environ["GAUNTLET_TEST_CANARY"]


def run(
    sandbox: ScorerSandbox,
    scorer: str,
    config: dict[str, Any] | None = None,
    *,
    tenant: str = "tenant-a",
    timeout_ms: int = 10_000,
) -> ScoreOutcome:
    return sandbox.score(f"{HOSTILE}.{scorer}", {}, config or {}, ctx(tenant), timeout_ms)


def details_of(outcome: ScoreOutcome) -> dict[str, Any]:
    assert outcome.error is None, outcome.error
    assert outcome.details is not None
    return outcome.details


def test_the_sandbox_is_bubblewrap(sandbox: ScorerSandbox) -> None:
    # Fails, never skips, where bubblewrap is missing: `make test` installs it.
    assert sandbox.isolation == "bubblewrap"
    assert sandbox.weaker_because is None


def test_scorer_runs_unprivileged_in_its_own_namespaces(sandbox: ScorerSandbox) -> None:
    identity = details_of(run(sandbox, "escape:Identity", {"project_root": str(PROJECT_ROOT)}))
    expected_uids = SANDBOX_UIDS if os.geteuid() == 0 else range(NAMESPACED_UID, NAMESPACED_UID + 1)
    assert identity["uid"] in expected_uids and identity["euid"] == identity["uid"]
    assert identity["gid"] == identity["uid"] and identity["groups"] == []
    assert int(identity["capabilities"], 16) == 0
    assert identity["no_new_privileges"] == "1"
    # Its own PID namespace: bubblewrap's init and the scorer, nothing of the host.
    assert identity["visible_pids"] == [1, identity["pid"]]
    assert identity["hostname"] == "scorer"
    # Only what it needs is mounted: no data dir, no .env, no service code.
    assert "etc" in identity["root"] and "home" not in identity["root"]
    assert set(identity["project"]) <= {".venv", "scorers", "tests", "workers"}
    assert "app" not in identity["project"] and ".env" not in identity["project"]


def test_no_environment_holds_a_secret(sandbox: ScorerSandbox) -> None:
    details = details_of(run(sandbox, "theft:EnvironThief", {"pids": [os.getpid(), 1]}))
    assert SECRET not in str(details)
    assert "GAUNTLET_TEST_CANARY" not in str(details)
    loot = details["loot"]
    assert loot["pid 1"].startswith("refused") or "GAUNTLET" not in loot["pid 1"]
    assert details["visible_pids"] == [1, 2]


def test_files_of_the_service_are_out_of_reach(sandbox: ScorerSandbox, tmp_path: Path) -> None:
    canary = tmp_path / "secret_key"
    canary.write_text(SECRET)
    details = details_of(
        run(
            sandbox,
            "theft:FileThief",
            {"paths": [str(canary), str(PROJECT_ROOT / ".env")], "folders": [str(tmp_path)]},
        )
    )
    assert SECRET not in str(details)
    assert details["read"][str(canary)].startswith("refused")
    assert details["listed"][str(tmp_path)].startswith("refused")
    assert details["read"]["/etc/shadow"].startswith("refused")


def test_no_network_at_all(sandbox: ScorerSandbox) -> None:
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]
        details = details_of(run(sandbox, "escape:NetworkProbe", {"hosts": [["127.0.0.1", port]]}))
    assert details, "the probe tried nothing"
    for target, result in details.items():
        assert result.startswith("refused"), (target, result)


def test_files_land_only_in_a_small_private_tmp(sandbox: ScorerSandbox, tmp_path: Path) -> None:
    targets = [
        str(tmp_path / "dropped"),
        str(PROJECT_ROOT / "scorers" / "dropped.py"),
        str(PROJECT_ROOT / "dropped"),
        "/etc/dropped",
    ]
    outcome = run(sandbox, "escape:FileWriter", {"paths": targets})
    details = details_of(outcome)
    for target in targets:
        assert details[target].startswith("refused"), (target, details[target])
        assert not Path(target).exists()
    # 16 MiB of /tmp, 1 MiB per file.
    assert details["fill"].startswith("stopped after"), details
    assert outcome.score is not None and outcome.score < 17
    assert details["big file"] == "refused: File too large"


def test_a_fork_bomb_is_refused_and_cleaned_up(sandbox: ScorerSandbox) -> None:
    comm = unique_comm()
    outcome = run(sandbox, "escape:ForkBomb", {"comm": comm})
    details = details_of(outcome)
    assert details["refused"] == "Resource temporarily unavailable"
    assert 0 < details["forks"] < 16
    # The children outlived the call, so the sandbox was retired with all of them.
    assert processes_named(comm) == []
    assert sandbox.score(WEIGHTED, GOOD_METRICS, {}, ctx(), 5000).score == 165.0


@pytest.mark.parametrize("hang", [False, True])
def test_a_setsid_grandchild_dies_with_its_sandbox(sandbox: ScorerSandbox, hang: bool) -> None:
    comm = unique_comm()
    outcome = run(sandbox, "escape:SetsidEscape", {"comm": comm, "hang": hang}, timeout_ms=1500)
    if hang:
        assert outcome.error == "timed out after 1500 ms"
    else:
        assert outcome.score == 1.0
    assert processes_named(comm) == []


def test_a_thread_left_running_retires_the_process(sandbox: ScorerSandbox) -> None:
    first = details_of(run(sandbox, "escape:SpyThread"))["process"]
    second = details_of(run(sandbox, "escape:SpyThread"))["process"]
    assert first != second


def test_a_process_serves_one_tenant_only() -> None:
    with ScorerSandbox(pool_size=1, allowed_modules=("scorers.", f"{HOSTILE}.")) as single:
        assert details_of(run(single, "answers:Monkeypatcher", tenant="tenant-a"))["patched"]
        # Tenant A's own later calls may meet its own patch; tenant B's never do.
        patched = single.score(WEIGHTED, GOOD_METRICS, {}, ctx("tenant-a"), 5000)
        assert patched.score == 0.0
        clean = single.score(WEIGHTED, GOOD_METRICS, {}, ctx("tenant-b"), 5000)
        assert clean.score == 165.0
        assert clean.details is not None and "stolen_tenant" not in clean.details


def test_a_forged_answer_frame_is_not_taken_for_an_answer(sandbox: ScorerSandbox) -> None:
    forged = run(sandbox, "answers:ForgedFrame")
    assert forged.score != 1e9
    assert forged.error == "scorer process sent an unreadable answer"
    assert sandbox.score(WEIGHTED, GOOD_METRICS, {}, ctx(), 5000).score == 165.0


def test_huge_details_are_refused_or_cut(sandbox: ScorerSandbox) -> None:
    too_large = run(sandbox, "answers:HugeDetails", {"size": 10_000_000})
    assert too_large.score is None
    assert too_large.error is not None and too_large.error.startswith("result too large")
    cut = details_of(run(sandbox, "answers:HugeDetails", {"size": 60_000}))
    assert cut["details_truncated"] is True
    assert len(cut["blob"]) == 2000 and cut["blob"].endswith("…")


def test_deep_and_wide_details_are_bounded(sandbox: ScorerSandbox) -> None:
    deep = details_of(run(sandbox, "answers:DeepDetails", {"depth": 500}))
    assert deep["details_truncated"] is True
    depth, node = 0, deep["nested"]
    while isinstance(node, dict | list) and node:
        node = node[0] if isinstance(node, list) else node["next"]
        depth += 1
    assert depth <= 8
    wide = details_of(run(sandbox, "answers:WideDetails", {"keys": 3000}))
    assert wide["details_truncated"] is True
    assert len(wide) <= 65


def test_non_json_details_become_plain_data(sandbox: ScorerSandbox) -> None:
    details = details_of(run(sandbox, "answers:NonJsonDetails"))
    assert details["nan"] == "NaN" and details["inf"] == "Infinity"
    assert details["-inf"] == "-Infinity"
    assert details["huge"] == str(10**40)
    assert details["surrogate"] == "\ud800 alone"  # the storage boundary escapes it
    assert details["sneaky"] == "NaN"  # the encoder saw a float; nothing else got through
    assert details["nested"] == ["NaN", {"deeper": "Infinity"}]
    unserializable = run(sandbox, "answers:NonJsonDetails", {"unserializable": True})
    assert unserializable.score is None
    assert unserializable.error is not None
    assert "not JSON-serializable" in unserializable.error


def test_an_attack_at_import_time_gets_nothing_and_leaves_nothing(
    sandbox: ScorerSandbox,
) -> None:
    # Importing the module here would run the attack in the test process: only the sandbox may.
    with pytest.raises(ScorerError) as refused:
        sandbox.check(f"{HOSTILE}.at_import:Anything")
    reason = refused.value.reason
    assert reason.startswith(f"cannot load scorer: cannot import '{HOSTILE}.at_import'")
    assert "loot" in reason and "refused" in reason
    assert SECRET not in reason and "GAUNTLET_TEST_CANARY" not in reason
    assert processes_named("gt-importspawn") == []
    assert f"{HOSTILE}.at_import" not in sys.modules

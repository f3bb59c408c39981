"""The event bench (bench/event.py) in its smoke mode: the production layout of
docker-compose.yml started from this checkout, a short crowd of participants (prompt attempts,
red-blue entries, status polls, board reads, hostile requests), then every invariant the bench
checks from the database and from its record of the requests. Timings are the bench's to
print; this test asserts only that the invariants were checked and held."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, Stack

pytestmark = pytest.mark.integration

# Each family of invariants the bench must report (a bench that checked less would pass).
EXPECTED = (
    "the backlog drained",
    "every hostile request answered 4xx",
    "no 5xx and no unanswered request outside a killed API's down time",
    "legitimate requests refused only by participant limits",
    "every accepted attempt ended (completed, or error with a reason)",
    "every defense settled, attack paired and match ended (errors with a reason)",
    "attempts: every 202 stored once, nothing stored that no request sent",
    "redblue_defenses: every 202 stored once, nothing stored that no request sent",
    "redblue_attacks: every 202 stored once, nothing stored that no request sent",
    "trials unique: 3 per completed attempt, none twice",
    "no (attack, defense) pair twice, no participant against themself",
)


def test_a_smoke_event_holds_every_invariant(stack: Stack, tmp_path: Path) -> None:
    report_path = tmp_path / "report.json"
    # The bench's services take their settings from the Compose file and the bench only.
    env = {k: v for k, v in os.environ.items() if not k.startswith("GAUNTLET_")}
    result = subprocess.run(
        [
            sys.executable,
            str(ROOT / "bench" / "event.py"),
            "--smoke",
            "--pg-admin-url",
            stack.admin_url,
            "--redis-url",
            stack.broker_url,
            "--report",
            str(report_path),
            "--keep-logs",
            str(tmp_path / "logs"),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=280,
    )
    # On failure: the bench's own report (which invariant broke, and how), then its errors;
    # the services' logs are in tmp_path/logs.
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-3000:]
    report = json.loads(report_path.read_text())
    invariants = {entry["name"]: entry for entry in report["invariants"]}
    assert not [entry for entry in invariants.values() if not entry["held"]]
    missing = [name for name in EXPECTED if name not in invariants]
    assert not missing, missing
    names = list(invariants)
    # Two tenants: two prompt leaderboards each, one red-blue competition each.
    assert sum(name.startswith("leaderboard of ") for name in names) == 4, names
    assert sum(name.startswith("standings of ") for name in names) == 2, names
    assert sum(name.startswith("ratings of ") for name in names) == 2, names
    # The invariants were about real work: attempts ran, matches were judged, hostile
    # requests were sent.
    counts = report["counts"]
    assert counts["attempts completed"] > 0 and counts["matches completed"] > 0, counts
    assert counts["defenses active"] > 0 and counts["leaderboard rows"] > 0, counts
    hostile = report["hostile_answers"]  # kind → {status: count}
    assert len(hostile) == 13, hostile
    assert all(400 <= int(status) < 500 for answers in hostile.values() for status in answers)

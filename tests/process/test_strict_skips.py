"""Under `make test` and in CI a test that cannot run fails; elsewhere it may skip."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

CASES = """
import pytest

def test_runs():
    pass

def test_skips():
    pytest.skip("Chromium is not installed")

@pytest.fixture
def service():
    pytest.skip("no PostgreSQL")

def test_needs_a_service(service):
    pass

@pytest.mark.xfail(reason="a known bug", strict=True)
def test_known_bug():
    assert False
"""


def run_cases(tmp_path: Path, **settings: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "test_cases.py").write_text(CASES)
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "GAUNTLET_TEST_STRICT")}
    env.update(settings, PYTHONPATH=str(ROOT))
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "tests.strict", "-p", "no:randomly", "-q",
         "-p", "no:cacheprovider", "--rootdir", str(tmp_path), str(tmp_path)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )  # fmt: skip


def test_skips_fail_when_strict(tmp_path: Path) -> None:
    for settings in ({"GAUNTLET_TEST_STRICT": "1"}, {"CI": "true"}):
        result = run_cases(tmp_path, **settings)
        assert result.returncode == 1, result.stdout
        summary = result.stdout.strip().splitlines()[-1]
        assert "1 failed, 1 passed, 1 xfailed, 1 error" in summary, result.stdout
        assert "Chromium is not installed" in result.stdout
        assert "no PostgreSQL" in result.stdout


def test_skips_are_skips_otherwise(tmp_path: Path) -> None:
    for settings in ({}, {"CI": "false"}):
        result = run_cases(tmp_path, **settings)
        assert result.returncode == 0, result.stdout
        assert "1 passed, 2 skipped, 1 xfailed" in result.stdout

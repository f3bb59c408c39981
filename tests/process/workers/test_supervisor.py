"""`gauntlet run`'s supervisor: a child that ends is started again, with a line saying how it
ended; one that keeps dying at once waits longer each time; after `stop` nothing restarts."""

from __future__ import annotations

import logging
import signal
import sys
import time
from collections.abc import Callable

import pytest

from workers import supervisor
from workers.supervisor import Supervisor, describe_exit

SLEEPER = [sys.executable, "-c", "import time; time.sleep(60)"]


def _until(what: str, check: Callable[[], bool], timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.01)


def test_a_killed_child_is_started_again_with_a_log_line(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(supervisor, "RESTART_DELAY_S", 0.02)
    caplog.set_level(logging.WARNING, logger="gauntlet.supervisor")
    watched = Supervisor(SLEEPER)
    watched.start()
    try:
        first = watched.process
        assert first is not None
        first.send_signal(signal.SIGKILL)
        _until("a new child", lambda: watched.restarts == 1)
        second = watched.process
        assert second is not None and second.pid != first.pid and second.poll() is None
        assert f"the worker (pid {first.pid}) killed by SIGKILL" in caplog.text
        assert f"the worker started again (pid {second.pid})" in caplog.text
    finally:
        watched.stop(timeout=5)
    assert second.poll() == -signal.SIGTERM
    time.sleep(0.1)
    assert watched.restarts == 1, "a stopped supervisor started its child again"


def test_a_child_that_keeps_dying_at_once_waits_longer_each_time(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(supervisor, "RESTART_DELAY_S", 0.02)
    monkeypatch.setattr(supervisor, "MAX_RESTART_DELAY_S", 0.08)
    caplog.set_level(logging.WARNING, logger="gauntlet.supervisor")
    watched = Supervisor([sys.executable, "-c", "raise SystemExit(3)"])
    watched.start()
    try:
        _until("four restarts", lambda: watched.restarts >= 4)
    finally:
        watched.stop()
    waits = [
        float(line.rsplit(" in ", 1)[1].split(" ")[0])
        for line in caplog.messages
        if "exited with status 3" in line
    ]
    assert waits[:4] == [0.02, 0.04, 0.08, 0.08]


def test_exits_are_described_by_signal_name_or_status() -> None:
    assert describe_exit(-9) == "killed by SIGKILL"
    assert describe_exit(1) == "exited with status 1"
    assert describe_exit(-200) == "killed by signal 200"

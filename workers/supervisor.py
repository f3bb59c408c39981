"""`gauntlet run`'s worker, kept running: started again within seconds whenever it exits.

The embedded mode is one command; its worker is a child process. A worker that dies (killed,
out of memory, a bug) is started again after `RESTART_DELAY_S`, with a log line saying how it
ended; one that keeps dying right after its start waits longer each time (up to
`MAX_RESTART_DELAY_S`), so a broken set-up logs a line every half minute instead of spinning.
Work the dead worker held is not lost: its leases lapse and the periodic sweep hands it to the
new one (docs/capacity.md, "When a worker dies").
"""

from __future__ import annotations

import ctypes
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence

log = logging.getLogger("gauntlet.supervisor")

RESTART_DELAY_S = 1.0
MAX_RESTART_DELAY_S = 30.0
# A worker that ran this long before it ended was healthy: the next restart waits the least.
HEALTHY_AFTER_S = 30.0


_PR_SET_PDEATHSIG = 1  # prctl(2)


def end_with_parent(signal_number: int) -> None:
    """Asks the kernel to send this process `signal_number` when its parent ends (Linux; a
    no-op elsewhere). A parent that ends while this asks is noticed (its pid changes); one
    gone before this process read it is not (its parent is then init, or a container's
    first process, which may well be a living `gauntlet run`)."""
    if not sys.platform.startswith("linux"):
        return
    parent = os.getppid()
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_PDEATHSIG, signal_number, 0, 0, 0) != 0:
        log.warning("could not tie this process to its parent: errno %d", ctypes.get_errno())
        return
    if os.getppid() != parent:
        os.kill(os.getpid(), signal_number)


def describe_exit(code: int) -> str:
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exited with status {code}"


class Supervisor:
    """One child process, started again each time it ends until `stop`."""

    def __init__(self, command: Sequence[str], name: str = "worker") -> None:
        self.command, self.name = list(command), name
        self.process: subprocess.Popen[bytes] | None = None
        self.restarts = 0
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._watcher: threading.Thread | None = None

    def start(self) -> None:
        self._spawn()
        self._watcher = threading.Thread(target=self._watch, name=f"{self.name}-supervisor")
        self._watcher.daemon = True
        self._watcher.start()

    def _spawn(self) -> None:
        with self._lock:
            if not self._stopping.is_set():
                self.process = subprocess.Popen(self.command)

    def _watch(self) -> None:
        # Halved before its first use: the first quick death waits RESTART_DELAY_S.
        delay = RESTART_DELAY_S / 2
        while not self._stopping.is_set():
            process = self.process
            assert process is not None
            started = time.monotonic()
            code = process.wait()
            if self._stopping.is_set():
                return
            ran = time.monotonic() - started
            quick = ran < HEALTHY_AFTER_S
            delay = min(delay * 2, MAX_RESTART_DELAY_S) if quick else RESTART_DELAY_S
            log.warning(
                "the %s (pid %d) %s after %.0f s; starting a new one in %g s",
                self.name,
                process.pid,
                describe_exit(code),
                ran,
                delay,
            )
            if self._stopping.wait(delay):
                return
            self._spawn()
            started_again = self.process
            if started_again is None or started_again is process:
                return  # stopped meanwhile
            self.restarts += 1
            log.warning("the %s started again (pid %d)", self.name, started_again.pid)

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM (a warm shutdown: running tasks finish), SIGKILL after `timeout`."""
        with self._lock:
            self._stopping.set()
            process = self.process
        if process is None or process.poll() is not None:
            return
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

"""The embedded mode (`make run`, i.e. `gauntlet run`) as a process the tests start: SQLite and
the filesystem broker in a data dir of the test's own, no PostgreSQL, no Redis."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

from tests import http
from tests.conftest import ROOT

ADMIN_TOKEN = "embedded-token"


class Embedded:
    """One `gauntlet run` process; `start` returns what it printed once it answers."""

    def __init__(
        self,
        data_dir: Path,
        port: int,
        log: Path,
        settings: dict[str, str] | None = None,
        command: list[str] | None = None,
        cwd: Path = ROOT,
    ) -> None:
        """`command` starts it (default: `gauntlet run --port PORT`) in `cwd` (the project's
        folder); `PORT` is set for it."""
        self.cwd = cwd
        self.data_dir, self.port, self.log = data_dir, port, log
        self.settings = settings or {}
        self.command = command or [sys.executable, "-m", "app.cli", "run", "--port", str(port)]
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> str:
        # A shell of its own: no settings of the tests, nor the `make test` that runs them.
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith("GAUNTLET_") and k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")
        }
        env.update(GAUNTLET_DATA_DIR=str(self.data_dir), GAUNTLET_ADMIN_TOKEN=ADMIN_TOKEN)
        env.update(PORT=str(self.port))
        env.update(self.settings)
        offset = self.log.stat().st_size if self.log.exists() else 0
        self.process = subprocess.Popen(
            self.command,
            cwd=self.cwd,
            env=env,
            stdout=self.log.open("ab"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        # Only a bound on waiting (healthy within seconds on a quiet machine; minutes when the
        # machine is shared), not a timing check.
        deadline = time.monotonic() + 180
        while True:
            try:
                if http.get(f"{self.base}/healthz", timeout=1).status_code == 200:
                    return self.log.read_bytes()[offset:].decode(errors="replace")
            except httpx.HTTPError:
                pass
            if self.process.poll() is not None or time.monotonic() > deadline:
                # A start that failed leaves nothing running: no fixture will stop it.
                self.stop()
                raise AssertionError(self.log.read_text(errors="replace")[-3000:])
            time.sleep(0.2)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGINT)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()

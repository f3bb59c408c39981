"""`make run` from a fresh clone to a healthy service, timed.

Clones this repository's committed HEAD into a temporary folder, runs `make run` there on a
free port, and prints the seconds from the start of `make run` until `/healthz` answers 200
(the API listens and reaches its database) and until it says `"status": "ok"` (the worker is
up and its heartbeat seen). `--cold` gives uv an empty cache and pip no cache, as on a machine
that never installed the project; otherwise uv's usual cache is used. The clone and everything
it started are removed at the end; nothing is timed out but the run itself (5 minutes).

    .venv/bin/python bench/make_run_fresh.py [--cold] [--repeat 2]
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import common

LIMIT_S = 300.0


def one_run(cold: bool) -> tuple[float, float]:
    folder = Path(tempfile.mkdtemp(prefix="gauntlet-fresh-"))
    clone = folder / "gauntlet"
    subprocess.run(["git", "clone", "-q", str(common.ROOT), str(clone)], check=True)
    port = common.free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GAUNTLET_", "VIRTUAL_ENV"))}
    env["PORT"] = str(port)
    if cold:
        env["UV_CACHE_DIR"] = str(folder / "uv-cache")
        env["PIP_NO_CACHE_DIR"] = "1"
    log = (folder / "run.log").open("wb")
    started = time.monotonic()
    process = subprocess.Popen(
        ["make", "run"],
        cwd=clone,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    listening: float | None = None
    try:
        while time.monotonic() - started < LIMIT_S:
            if process.poll() is not None:
                raise RuntimeError((folder / "run.log").read_text(errors="replace")[-3000:])
            try:
                response = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1)
            except httpx.HTTPError:
                response = None
            if response is not None and response.status_code == 200:
                listening = listening or time.monotonic() - started
                if response.json()["status"] == "ok":
                    return listening, time.monotonic() - started
            time.sleep(0.1)
        raise RuntimeError(f"not healthy within {LIMIT_S} s")
    finally:
        with_group(process, signal.SIGINT, wait=20)
        log.close()
        shutil.rmtree(folder, ignore_errors=True)


def with_group(process: subprocess.Popen[bytes], number: int, wait: float) -> None:
    try:
        os.killpg(process.pid, number)
        process.wait(timeout=wait)
    except ProcessLookupError:
        return
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cold", action="store_true", help="empty uv cache, no pip cache")
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    common.print_machine_info("make_run_fresh", sys.argv)
    print(f"   caches: {'cold (empty uv cache, PIP_NO_CACHE_DIR=1)' if args.cold else 'warm'}")
    for repetition in range(1, args.repeat + 1):
        listening, healthy = one_run(args.cold)
        print(
            f"   run {repetition}: /healthz 200 after {listening:.1f} s, "
            f'"status": "ok" (worker seen) after {healthy:.1f} s'
        )
    common.print_end_load()


if __name__ == "__main__":
    main()

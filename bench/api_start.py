"""API process start-up: from the spawn of `gauntlet serve` until `/healthz` answers 200, and its
resident memory, for this checkout and for an earlier one, alternating, in one run.

Each start: a fresh SQLite data folder migrated beforehand (embedded mode), `python -m app.cli
serve --port P` with that checkout's own interpreter, `/healthz` polled every 5 ms. Printed per
start: seconds to the first 200, resident memory (VmRSS) then and `--settle` seconds later (an
API that loads something in the background after start-up, as the earlier code loaded litellm,
has grown by then), and whether that checkout's packages have compiled bytecode (without it
every start compiles each module it imports; the image compiles at build time, see the
Dockerfile).

    .venv/bin/python bench/api_start.py --before /tmp/gauntlet-before [--repeat 3] [--settle 10]

where /tmp/gauntlet-before is e.g. `git worktree add /tmp/gauntlet-before 31ebda3` with a
`.venv` of its own holding the same package versions (bench/README.md says how it was made).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import common

POLL_S = 0.005
LIMIT_S = 60.0


def resident_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for process {pid}")


def has_bytecode(checkout: Path) -> bool:
    found = list((checkout / ".venv" / "lib").glob("python3*/site-packages/sqlalchemy/__pycache__"))
    return bool(found) and any(found[0].iterdir())


def one_start(checkout: Path, settle_s: float) -> tuple[float, float, float]:
    python = str(checkout / ".venv" / "bin" / "python")
    with tempfile.TemporaryDirectory(prefix="gauntlet-api-start-") as data:
        env = {key: value for key, value in os.environ.items() if not key.startswith("GAUNTLET_")}
        env.update(GAUNTLET_DATA_DIR=data, LITELLM_LOCAL_MODEL_COST_MAP="True")
        subprocess.run(
            [python, "-m", "app.cli", "migrate"], cwd=checkout, env=env, check=True,
            capture_output=True,
        )  # fmt: skip
        port = common.free_port()
        started = time.perf_counter()
        process = subprocess.Popen(
            [python, "-m", "app.cli", "serve", "--port", str(port)],
            cwd=checkout,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            while True:
                if time.perf_counter() - started > LIMIT_S or process.poll() is not None:
                    raise RuntimeError(f"{checkout}: the API did not answer /healthz")
                try:
                    with urllib.request.urlopen(
                        f"http://127.0.0.1:{port}/healthz", timeout=1
                    ) as answer:
                        if answer.status == 200:
                            break
                except OSError:
                    time.sleep(POLL_S)
            healthy_s = time.perf_counter() - started
            at_healthy = resident_mib(process.pid)
            time.sleep(settle_s)
            settled = resident_mib(process.pid)
        finally:
            process.terminate()
            process.wait(timeout=30)
    return healthy_s, at_healthy, settled


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", type=Path, required=True, help="the earlier checkout")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--settle", type=float, default=10.0)
    args = parser.parse_args()
    checkouts = {"before": args.before.resolve(), "now": common.ROOT}

    common.print_machine_info("API start-up and memory")
    for name, checkout in checkouts.items():
        print(f"   {name}: {checkout} (compiled bytecode: {has_bytecode(checkout)})")
    print(f"{'checkout':8} {'healthy s':>9} {'RSS MiB':>8} {f'+{args.settle:g} s MiB':>10}")
    results: dict[str, list[tuple[float, float, float]]] = {name: [] for name in checkouts}
    for _ in range(args.repeat):
        for name, checkout in checkouts.items():
            row = one_start(checkout, args.settle)
            results[name].append(row)
            print(f"{name:8} {row[0]:>9.3f} {row[1]:>8.1f} {row[2]:>10.1f}", flush=True)
    medians = {
        name: [statistics.median(row[column] for row in rows) for column in range(3)]
        for name, rows in results.items()
    }
    for name, (healthy, at_healthy, settled) in medians.items():
        print(
            f"median {name}: healthy in {healthy:.3f} s, {at_healthy:.1f} MiB at healthy, "
            f"{settled:.1f} MiB after {args.settle:g} s"
        )
    before, now = medians["before"][2], medians["now"][2]
    print(f"resident memory after {args.settle:g} s: {(1 - now / before) * 100:.0f} % lower now")
    common.print_end_load()


if __name__ == "__main__":
    main()

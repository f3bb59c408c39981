"""Where a command's CPU goes, by kind of process: every process on the machine sampled from
/proc while the command runs (the test suite by default), its CPU time attributed to a kind
by its command line.

Processes the command starts and PostgreSQL's and Redis's servers are counted alike, which
`time` (reaped children only) does not do. A process that starts and ends between two
samples is missed, and so is the last part of one that ends: the figures are a lower bound.

Usage: .venv/bin/python bench/suite_cpu.py [--every 2] [-- COMMAND ...]
(default command: the suite as `make test` runs it, without lint and types)
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SUITE = [str(ROOT / ".venv/bin/pytest"), "-n", "2", "--dist", "loadfile", "-q"]
TICKS = os.sysconf("SC_CLK_TCK")

# (what the command line contains, the kind it is counted as), first match wins.
KINDS = [
    ("postgres", "postgresql"),
    ("redis-server", "redis"),
    ("chrom", "chromium"),
    ("exec(eval(sys.stdin", "test process"),
    ("pytest", "pytest (controller)"),
    ("worker", "worker"),
    (" beat", "beat"),
    (" serve", "api (gauntlet serve)"),
    (" run", "gauntlet run"),
    ("scorer_child", "scorer sandbox"),
    ("playwright", "playwright driver"),
    ("python", "other python"),
]


def kind_of(command: str) -> str:
    if not command:
        return "kernel"
    for part, kind in KINDS:
        if part in command:
            return kind
    return command.split()[0].rsplit("/", 1)[-1]


def snapshot() -> dict[tuple[str, str], tuple[int, str]]:
    """(pid, start time) -> (CPU ticks so far, command line) of every process."""
    found: dict[tuple[str, str], tuple[int, str]] = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
            command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()
        ticks = int(fields[11]) + int(fields[12])  # utime, stime
        found[(pid, fields[19])] = (ticks, command.decode(errors="replace").strip())
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--every", type=float, default=2.0, help="seconds between samples")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- then the command")
    args = parser.parse_args()
    command = [part for part in args.command if part != "--"] or SUITE
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "GAUNTLET_TEST_STRICT": "1"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as the Makefile runs it

    spent: Counter[str] = Counter()
    before = snapshot()
    started = time.monotonic()
    process = subprocess.Popen(command, cwd=ROOT, env=env)
    while process.poll() is None:
        time.sleep(args.every)
        now = snapshot()
        for key, (ticks, line) in now.items():
            spent[kind_of(line)] += ticks - before.get(key, (0, line))[0]
        before = now
    wall = time.monotonic() - started
    total = sum(spent.values()) / TICKS
    print(f"\n{' '.join(command)}: exit {process.returncode}, {wall:.0f} s wall")
    print(f"CPU sampled: {total:.0f} s ({total / wall:.2f} cores on average)")
    for kind, ticks in spent.most_common():
        seconds = ticks / TICKS
        if seconds >= 1:
            print(f"  {seconds:8.1f} s  {100 * seconds / total:5.1f} %  {kind}")
    print(f"load average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    sys.exit(process.returncode)


if __name__ == "__main__":
    main()

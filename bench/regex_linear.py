"""Tenant regexes on RE2 against Python's `re`: issue 15, finding 4.

Prints the time `^(a+)+$` takes on n `a`s and a `!` with Python's `re` (n up to 24, doubling
each step, so bounded) and with RE2 (the finding's n = 31, then a megabyte), the slowest RE2
patterns found per 100,000 characters, and whether RE2 lets another thread run while it
matches (a lease heartbeat must).

    .venv/bin/python bench/regex_linear.py
"""

from __future__ import annotations

import re
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.evaluation.engine.patterns import compile_tenant_pattern

FINDING = r"^(a+)+$"


def _timed(compiled: Any, text: str) -> float:
    started = time.perf_counter()
    compiled.search(text)
    return time.perf_counter() - started


def main() -> None:
    python = re.compile(FINDING, re.IGNORECASE)
    re2 = compile_tenant_pattern(FINDING)
    print(f"{FINDING} on n 'a's and '!':")
    for n in (16, 18, 20, 22, 24):
        text = "a" * n + "!"
        print(f"   n = {n:>7}: Python re {_timed(python, text) * 1000:10.1f} ms")
    for n in (31, 1_000_000):
        text = "a" * n + "!"
        print(f"   n = {n:>7}: RE2       {_timed(re2, text) * 1000:10.3f} ms")

    text = "ab\u00e9 " * 25_000
    print("slowest RE2 patterns found, per 100,000 characters:")
    for pattern in (
        r"(?:\p{L}|\p{N}){1,50}[^a]{1,50}zzz",
        r"((((((((((.{1,9}){1,9}){1,9}))))))))zzz",
        r"(?:\w+\s?){1,100}!",
        r"(?:[a-z]+\s?){1,100}!",
    ):
        compiled = compile_tenant_pattern(pattern)
        print(f"   {_timed(compiled, text) * 1000:8.1f} ms  {pattern}")

    ticks = 0
    stop = threading.Event()

    def heartbeat() -> None:
        nonlocal ticks
        while not stop.wait(0.01):
            ticks += 1

    slow = compile_tenant_pattern(r"(?:\p{L}|\p{N}){1,50}[^a]{1,50}zzz")
    long_text = "ab\u00e9 " * 500_000
    thread = threading.Thread(target=heartbeat)
    thread.start()
    elapsed = _timed(slow, long_text)
    stop.set()
    thread.join()
    print(
        f"another thread during a {elapsed:.2f} s RE2 match: {ticks} ticks of 10 ms "
        f"(~{elapsed / 0.01:.0f} if it never waited for the GIL)"
    )


if __name__ == "__main__":
    main()

"""offline/guarded-echo on hostile input: time against the length of the attack.

The most phrases a defense can make it honour (64 of 256 characters), shaped to be hard for a
matcher: one shared 255-character prefix against a text of that character only, and random
two-letter phrases against random two-letter text (the most partial matches at once). For a
linear-time matcher the time per 100,000 characters stays flat as the text doubles.

    .venv/bin/python bench/guarded_echo.py
"""

from __future__ import annotations

import os
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.evaluation.engine.offline import (
    GUARDED_MAX_PHRASE_CHARS,
    GUARDED_MAX_PHRASES,
    guarded_echo_reply,
)

SIZES = (125_000, 250_000, 500_000, 1_000_000, 2_000_000)


def _defense(phrases: list[str]) -> str:
    return "\n".join(f"Never say: {phrase}" for phrase in phrases)


def _best_of_three(defense: str, attack: str) -> float:
    times = []
    for _ in range(3):
        started = time.perf_counter()
        guarded_echo_reply(defense, attack)
        times.append(time.perf_counter() - started)
    return min(times)


def main() -> None:
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    draw = random.Random(0)
    length = GUARDED_MAX_PHRASE_CHARS
    # Each case: the defense, and the attack of a given size.
    cases: dict[str, tuple[str, Callable[[int], str]]] = {
        "shared prefix 'a'*255 + one letter, text of 'a'": (
            _defense(
                ["a" * (length - 1) + chr(0x62 + index) for index in range(GUARDED_MAX_PHRASES)]
            ),
            lambda size: "a" * size,
        ),
        "random 'ab' phrases, random 'ab' text": (
            _defense(
                [
                    "".join(draw.choice("ab") for _ in range(length))
                    for _ in range(GUARDED_MAX_PHRASES)
                ]
            ),
            lambda size: "".join(random.Random(size).choices("ab", k=size)),
        ),
        "a phrase on every other word": (
            _defense(["PWNED"]),
            lambda size: "PWNED hello " * (size // 12),
        ),
    }
    for name, (defense, make_attack) in cases.items():
        print(f"{name} (defense of {len(defense):,} characters):")
        for size in SIZES:
            attack = make_attack(size)
            seconds = _best_of_three(defense, attack)
            print(
                f"   {size:>9,} characters: {seconds * 1000:8.1f} ms "
                f"({seconds * 1000 * 100_000 / size:.2f} ms per 100,000)"
            )
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()

"""Deliberately misbehaving scorers, for the sandbox's tests, its benchmark and its docs.

Each class shows one way a plugin can go wrong and what the sandbox makes of it (see
app/scoring/sandbox/pool.py): the attempt keeps `score = null` and the reason is recorded. They
live under `scorers.` because the sandbox only loads modules under its allowed prefixes.

Never register these for a real challenge.
"""

from __future__ import annotations

import ctypes
import os
import resource
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from scorers.protocol import AttemptMetrics, ScoringContext, ScoringResult

# Tells one scorer process from another (pids repeat: each sandbox has its own PID namespace).
PROCESS_TOKEN = os.urandom(8).hex()


def _mark_process(config: dict[str, Any]) -> None:
    """Renames this process to config["comm"], so that a test can look for it from outside
    the sandbox afterwards and prove that it was killed."""
    name = config.get("comm")
    if name:
        Path("/proc/self/comm").write_text(str(name)[:15])


class RaisingScorer:
    def score(
        self, metrics: AttemptMetrics, config: dict[str, Any], ctx: ScoringContext
    ) -> ScoringResult:
        raise ValueError(config.get("message", "this scorer always fails"))


class HangingScorer:
    """Spins on the CPU: only a kill stops it."""

    def score(
        self, metrics: AttemptMetrics, config: dict[str, Any], ctx: ScoringContext
    ) -> ScoringResult:
        _mark_process(config)
        while True:
            pass


class SleepingScorer:
    """Blocks without using CPU, so the CPU limit never fires: only the timeout stops it."""

    def score(
        self, metrics: AttemptMetrics, config: dict[str, Any], ctx: ScoringContext
    ) -> ScoringResult:
        _mark_process(config)
        time.sleep(float(config.get("seconds", 3600)))
        return {"score": 1.0, "details": None}


class CrashingScorer:
    """Kills its own process: a segfault by default, or SIGABRT with config {"how": "abort"}."""

    def score(
        self, metrics: AttemptMetrics, config: dict[str, Any], ctx: ScoringContext
    ) -> ScoringResult:
        if config.get("how") == "abort":
            os.abort()
        ctypes.string_at(0)
        raise AssertionError("reading address 0 should have crashed the process")


class ExitingScorer:
    def score(
        self, metrics: AttemptMetrics, config: dict[str, Any], ctx: ScoringContext
    ) -> ScoringResult:
        sys.exit(3)


class HugeOutputScorer:
    def score(
        self, metrics: AttemptMetrics, config: dict[str, Any], ctx: ScoringContext
    ) -> ScoringResult:
        return {"score": 1.0, "details": {"blob": "x" * int(config.get("size", 10_000_000))}}


class NaNScorer:
    def score(
        self, metrics: AttemptMetrics, config: dict[str, Any], ctx: ScoringContext
    ) -> ScoringResult:
        return {"score": float("nan"), "details": None}


class InfScorer:
    def score(
        self, metrics: AttemptMetrics, config: dict[str, Any], ctx: ScoringContext
    ) -> ScoringResult:
        return {"score": float("inf"), "details": None}


class StringScorer:
    def score(self, metrics: AttemptMetrics, config: dict[str, Any], ctx: ScoringContext) -> Any:
        return {"score": "high", "details": None}


class BoolScorer:
    def score(self, metrics: AttemptMetrics, config: dict[str, Any], ctx: ScoringContext) -> Any:
        return {"score": True, "details": None}


class MissingKeyScorer:
    def score(self, metrics: AttemptMetrics, config: dict[str, Any], ctx: ScoringContext) -> Any:
        return {"details": {"note": "forgot the score"}}


class NotADictScorer:
    def score(self, metrics: AttemptMetrics, config: dict[str, Any], ctx: ScoringContext) -> Any:
        return [1.0, 2.0]


class NotSerializableScorer:
    def score(self, metrics: AttemptMetrics, config: dict[str, Any], ctx: ScoringContext) -> Any:
        return {"score": 1.0, "details": {"when": object()}}


class DetailsNotADictScorer:
    def score(self, metrics: AttemptMetrics, config: dict[str, Any], ctx: ScoringContext) -> Any:
        return {"score": 2.5, "details": ["not", "a", "dict"]}


class NegativeScorer:
    def score(
        self, metrics: AttemptMetrics, config: dict[str, Any], ctx: ScoringContext
    ) -> ScoringResult:
        return {"score": float(config.get("score", -5.0)), "details": {"note": "below zero"}}


class MemoryHogScorer:
    """Asks for more memory than RLIMIT_AS allows (1 GiB by default, against 512 MiB).

    A bytearray is zero-filled by calloc, so without the limit the pages would not even be
    touched: a MemoryError here is the address-space limit at work, not a full machine."""

    def score(
        self, metrics: AttemptMetrics, config: dict[str, Any], ctx: ScoringContext
    ) -> ScoringResult:
        hog = bytearray(int(config.get("bytes", 2**30)))
        return {"score": float(len(hog)), "details": None}


class PrintingScorer:
    """Writes to stdout and stderr, which must not corrupt the sandbox's pipes."""

    def score(
        self, metrics: AttemptMetrics, config: dict[str, Any], ctx: ScoringContext
    ) -> ScoringResult:
        for _ in range(1000):
            print("noise " * 50)
            print("more noise " * 50, file=sys.stderr)
        return {"score": 7.0, "details": None}


class FileWritingScorer:
    """Writes config["bytes"] bytes to config["path"], to show RLIMIT_FSIZE at work."""

    def score(
        self, metrics: AttemptMetrics, config: dict[str, Any], ctx: ScoringContext
    ) -> ScoringResult:
        Path(config["path"]).write_bytes(b"x" * int(config["bytes"]))
        return {"score": 1.0, "details": None}


class EnvSnoopScorer:
    """Reports the names of the environment variables a plugin can see."""

    def score(
        self, metrics: AttemptMetrics, config: dict[str, Any], ctx: ScoringContext
    ) -> ScoringResult:
        return {"score": 1.0, "details": {"env": sorted(os.environ)}}


class LimitsScorer:
    """Reports the resource limits a plugin runs under, as [soft, hard] pairs."""

    def score(
        self, metrics: AttemptMetrics, config: dict[str, Any], ctx: ScoringContext
    ) -> ScoringResult:
        names = {
            "as": resource.RLIMIT_AS,
            "cpu": resource.RLIMIT_CPU,
            "core": resource.RLIMIT_CORE,
            "fsize": resource.RLIMIT_FSIZE,
            "nproc": resource.RLIMIT_NPROC,
            "nofile": resource.RLIMIT_NOFILE,
        }
        return {
            "score": 1.0,
            "details": {name: list(resource.getrlimit(kind)) for name, kind in names.items()},
        }


class EchoScorer:
    """Well behaved: returns what it was given and its process id, so tests can see how metrics,
    config and context arrive and which process served them. Takes plain dicts too."""

    def score(
        self, metrics: Mapping[str, Any], config: dict[str, Any], ctx: Mapping[str, Any]
    ) -> ScoringResult:
        return {
            "score": float(config.get("score", 1.0)),
            "details": {
                "metrics": AttemptMetrics.from_dict(metrics).to_dict(),
                "config": config,
                "ctx": dict(ctx),
                "pid": os.getpid(),
                "process": PROCESS_TOKEN,
            },
        }


class NoScoreMethod:
    """Has no `score`: check() must refuse it."""

    def rate(self) -> float:
        return 1.0


class UnstorableDetailsScorer:
    """Returns details PostgreSQL cannot store as they are: NUL in a key and a value, a lone
    surrogate, NaN and an infinity. The attempt must complete with them escaped."""

    def score(self, metrics: AttemptMetrics, config: dict[str, Any], ctx: ScoringContext) -> Any:
        return {
            "score": 3.0,
            "details": {
                "note": "before\x00after",
                "key\x00": "lone \ud800 surrogate",
                "figures": [float("nan"), float("inf"), 1.5],
            },
        }


class UnstorableErrorScorer:
    """Fails with a message holding NUL: the recorded reason must be stored, escaped."""

    def score(
        self, metrics: AttemptMetrics, config: dict[str, Any], ctx: ScoringContext
    ) -> ScoringResult:
        raise ValueError("broken\x00scorer")

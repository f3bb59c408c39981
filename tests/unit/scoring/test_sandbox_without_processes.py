"""The scorer sandbox's rules that need no plugin process: entrypoint names, settings it
refuses, how the parent reads frames, plugin scoring refused without bubblewrap, and the
timeout each call gets (the sandbox with its processes is tests/process/scoring/)."""

from __future__ import annotations

import os
import threading
import time

import pytest

import app.scoring.sandbox.launch as launch_module
import app.scoring.sandbox.pool as sandbox_module
from app.scoring.sandbox.child import HEADER, canonical_entrypoint, encode_frame
from app.scoring.sandbox.pool import (
    RefusedSandbox,
    SandboxRefused,
    SandboxSettings,
    ScorerSandbox,
    _FrameTooLarge,
    _read_frame,
    _Timeout,
    get_sandbox,
    resolve_timeout_ms,
)

WEIGHTED = "scorers.weighted:WeightedScorer"
CTX = {"tenant_id": "t1", "challenge_id": "c1", "participant_id": "p1", "timeout_ms": 5000}
GOOD_METRICS = {"succeeded": True, "rating": 8, "elapsed_ms": 5000, "tokens_total": 1000}


@pytest.mark.parametrize(
    ("given", "canonical"),
    [
        ("services.scorers.custom:MyCustomScorer", "scorers.custom:MyCustomScorer"),
        ("services.scorers.a.b:C", "scorers.a.b:C"),
        ("services.scorers:C", "scorers:C"),
        ("scorers.weighted:WeightedScorer", "scorers.weighted:WeightedScorer"),
        ("services.scorers_evil:C", "services.scorers_evil:C"),
        (
            "services.challenge_scorer_protocol:AttemptMetrics",
            "services.challenge_scorer_protocol:AttemptMetrics",
        ),
        ("acme.services.scorers.x:C", "acme.services.scorers.x:C"),
        ("", ""),
    ],
)
def test_canonical_entrypoint_renames_only_the_seed_scorer_package(
    given: str, canonical: str
) -> None:
    assert canonical_entrypoint(given) == canonical


def test_memory_limit_too_small_for_an_interpreter_is_refused() -> None:
    with pytest.raises(ValueError, match="memory_bytes"):
        ScorerSandbox(pool_size=1, memory_bytes=16 * 2**20)


def test_parent_refuses_an_oversized_frame_from_its_header() -> None:
    read_fd, write_fd = os.pipe()
    try:
        os.write(write_fd, HEADER.pack(10_000_000) + b"x" * 100)
        with pytest.raises(_FrameTooLarge):
            _read_frame(read_fd, bytearray(), time.monotonic() + 5, 65536)
    finally:
        os.close(read_fd)
        os.close(write_fd)


def test_parent_assembles_a_frame_from_partial_reads_and_keeps_the_rest() -> None:
    read_fd, write_fd = os.pipe()
    frames = encode_frame({"n": 1, "text": "é" * 50}) + encode_frame({"n": 2})

    def trickle() -> None:
        for index in range(0, len(frames), 7):
            os.write(write_fd, frames[index : index + 7])
            time.sleep(0.001)

    writer = threading.Thread(target=trickle)
    writer.start()
    buffer = bytearray()
    try:
        first = _read_frame(read_fd, buffer, time.monotonic() + 5, 65536)
        second = _read_frame(read_fd, buffer, time.monotonic() + 5, 65536)
        assert first == encode_frame({"n": 1, "text": "é" * 50})[HEADER.size :]
        assert second == b'{"n":2}'
        assert buffer == bytearray()
        with pytest.raises(_Timeout):
            _read_frame(read_fd, buffer, time.monotonic() + 0.05, 65536)
    finally:
        writer.join()
        os.close(read_fd)
        os.close(write_fd)


def test_get_sandbox_refuses_plugin_scoring_when_bubblewrap_is_required_but_missing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sandbox_module, "_shared_sandbox", None)
    monkeypatch.setattr(launch_module.shutil, "which", lambda name: None)
    launch_module.choose_launcher.cache_clear()
    try:
        refused = get_sandbox(SandboxSettings(isolation="bubblewrap"))
        assert isinstance(refused, RefusedSandbox)
        outcome = refused.score(WEIGHTED, GOOD_METRICS, {}, CTX, 5000)
        assert outcome.score is None
        assert outcome.error is not None
        assert "plugin scoring is refused" in outcome.error
        assert "bubblewrap (bwrap) is not installed" in outcome.error
        assert "GAUNTLET_SCORER_SANDBOX=process" in outcome.error
        with pytest.raises(SandboxRefused, match="refused"):
            refused.check(WEIGHTED)
    finally:
        launch_module.choose_launcher.cache_clear()


@pytest.mark.parametrize(
    ("requested", "cap", "expected"),
    [
        (None, 30_000, 5000),
        (None, 1000, 1000),
        (0, 1000, 1),
        (-5, 1000, 1),
        (99_999, 30_000, 30_000),
        (250, 30_000, 250),
    ],
)
def test_resolve_timeout_ms(requested: int | None, cap: int, expected: int) -> None:
    assert resolve_timeout_ms(requested, cap) == expected


def test_resolve_timeout_ms_refuses_a_cap_below_one() -> None:
    with pytest.raises(ValueError, match="cap"):
        resolve_timeout_ms(100, 0)

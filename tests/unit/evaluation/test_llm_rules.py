"""LLMClient's own rules, checked without a call: its settings are validated and plain
errors are classified (the calls themselves, over both transports against a loopback server,
are tests/process/evaluation/test_llm.py)."""

from __future__ import annotations

import pytest

from app.evaluation.engine.llm import LLMClient, is_transient
from app.evaluation.engine.types import RetryPolicy


def test_the_output_ceiling_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_output_chars"):
        LLMClient(max_output_chars=0)


def test_invalid_caps_are_rejected() -> None:
    with pytest.raises(ValueError):
        LLMClient(global_concurrency=0)
    with pytest.raises(ValueError):
        LLMClient(retry=RetryPolicy(max_attempts=0))


def test_plain_errors_are_classified() -> None:
    assert is_transient(TimeoutError())
    assert is_transient(ConnectionResetError())
    assert not is_transient(ValueError("bug"))

"""Feedback modes: what a failed seq@k trial tells the next attempt.

Each mode turns a `VerifierResult` into text the actor will read, so a mode only ever uses the
public parts of the result (`raw_eval_output`, the judge's `feedback`), never `details`.

`FEEDBACK_MODES` are the modes that need nothing but the result. The LLM-critic modes
(`CRITIC_FEEDBACK_MODES`, app.evaluation.engine.critic) also need a critic model, so they are known
modes only where one is configured: `validate_feedback_mode(mode, critic_model=...)`.
Benchmarks add modes of their own (app.evaluation.engine.benchmark).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from app.evaluation.engine.types import VerifierResult

FeedbackFunction = Callable[[VerifierResult], str]

BINARY_FEEDBACK: Final = "Incorrect."
COMPACT_LIMIT_CHARS: Final = 300
TRUNCATION_MARKER: Final = " [...]"


def binary(result: VerifierResult) -> str:
    return BINARY_FEEDBACK


def raw(result: VerifierResult) -> str:
    return result.raw_eval_output


def compact(result: VerifierResult) -> str:
    """The raw output, cut to its first `COMPACT_LIMIT_CHARS` characters, marked when cut."""
    text = result.raw_eval_output.strip()
    if len(text) <= COMPACT_LIMIT_CHARS:
        return text
    return text[:COMPACT_LIMIT_CHARS].rstrip() + TRUNCATION_MARKER


def judge(result: VerifierResult) -> str:
    """The judge's own words when there are any, else the raw output."""
    if result.feedback and result.feedback.strip():
        return result.feedback
    return result.raw_eval_output


FEEDBACK_FUNCTIONS: Final[dict[str, FeedbackFunction]] = {
    "binary": binary,
    "raw": raw,
    "compact": compact,
    "judge": judge,
}
FEEDBACK_MODES: Final[frozenset[str]] = frozenset(FEEDBACK_FUNCTIONS)
# Worded in app.evaluation.engine.prompts and run by app.evaluation.engine.critic; listed here so
# every known mode name lives in one module.
CRITIC_FEEDBACK_MODES: Final[frozenset[str]] = frozenset({"socratic", "directive"})
# What each mode tells the next attempt, in people's words (the console's choices).
FEEDBACK_MODE_WORDS: Final[dict[str, str]] = {
    "binary": "Binary: only that the attempt failed",
    "raw": "Raw: the verifier's whole output",
    "compact": f"Compact: the verifier's output, cut to {COMPACT_LIMIT_CHARS} characters",
    "judge": "Judge: the judge's own words (else the verifier's output)",
    "socratic": "Socratic: a critic model asks questions that lead to the mistake",
    "directive": "Directive: a critic model says what to change",
}


def known_feedback_modes(*, critic_model: str | None = None) -> frozenset[str]:
    """The generic modes usable with (or without) a critic model."""
    return (FEEDBACK_MODES | CRITIC_FEEDBACK_MODES) if critic_model else FEEDBACK_MODES


def validate_feedback_mode(mode: str, *, critic_model: str | None = None) -> str:
    """`mode` if it is a known feedback mode; ValueError naming the known ones otherwise."""
    if mode in CRITIC_FEEDBACK_MODES and not critic_model:
        raise ValueError(f"feedback mode {mode!r} calls a critic model: configure critic_model")
    if mode not in known_feedback_modes(critic_model=critic_model):
        known = ", ".join(sorted(FEEDBACK_MODES))
        critic = ", ".join(sorted(CRITIC_FEEDBACK_MODES))
        raise ValueError(
            f"unknown feedback mode {mode!r}; expected one of: {known} "
            f"(with a critic model also: {critic})"
        )
    return mode


def render_feedback(mode: str, result: VerifierResult) -> str:
    """The feedback text for `result` under `mode`."""
    return FEEDBACK_FUNCTIONS[validate_feedback_mode(mode)](result)

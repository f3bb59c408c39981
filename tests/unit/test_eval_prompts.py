"""The seq@k prompt's history (app.evaluation.prompts): the same words as ever, each earlier
output and feedback within its limit, the whole within its budget, the oldest cut first."""

from __future__ import annotations

from app.evaluation.prompts import (
    EARLIER_FEEDBACK_CHARS,
    EARLIER_OUTPUT_CHARS,
    HISTORY_CHARS,
    NO_FEEDBACK,
    bounded_history,
    build_actor_messages,
)
from app.evaluation.types import ActorSection, CriticSection, JudgeSection, TrialRecord
from app.storable import TRUNCATION_MARK


def _trial(index: int, output: str, feedback: str | None = "Incorrect.") -> TrialRecord:
    return TrialRecord(
        attempt_index=index,
        actor=ActorSection(model="offline/echo", prompt=[], output=output),
        judge=JudgeSection(model=None, success=False, score=0.0),
        critic=CriticSection(feedback=feedback),
    )


def test_a_short_history_is_carried_whole_in_the_same_words() -> None:
    history = [_trial(1, "41"), _trial(2, "43", feedback=None)]
    messages = build_actor_messages(
        "What is 6 x 7?", metric="seq@k", attempt_index=3, k=3, history=history
    )
    assert messages == [
        {
            "role": "user",
            "content": "What is 6 x 7?\n\nThis is attempt 3 of 3.\n\n"
            "Attempt 1 output:\n41\n\nFeedback on attempt 1:\nIncorrect.\n\n"
            f"Attempt 2 output:\n43\n\nFeedback on attempt 2:\n{NO_FEEDBACK}",
        }
    ]


def test_each_earlier_output_and_feedback_is_cut_at_its_own_limit() -> None:
    output = "o" * (EARLIER_OUTPUT_CHARS + 123)
    feedback = "f" * (EARLIER_FEEDBACK_CHARS + 7)
    [(number, kept_output, kept_feedback)] = bounded_history([_trial(1, output, feedback)])
    assert number == 1
    assert kept_output == "o" * EARLIER_OUTPUT_CHARS + TRUNCATION_MARK.format(count=123)
    assert kept_feedback == "f" * EARLIER_FEEDBACK_CHARS + TRUNCATION_MARK.format(count=7)


def _kept_text(text: str) -> str:
    return text.split("\n[… truncated")[0]


def test_the_whole_history_is_bounded_and_the_oldest_is_cut_first() -> None:
    history = [_trial(index, chr(ord("a") + index) * 7000) for index in range(1, 20)]
    kept = bounded_history(history)
    assert [number for number, _, _ in kept] == list(range(1, 20))
    texts = [(output, feedback) for _, output, feedback in kept]
    # The newest attempts are whole; the oldest are reduced to the mark.
    assert texts[-1] == ("t" * 7000, "Incorrect.")
    assert texts[0] == (
        TRUNCATION_MARK.format(count=7000),
        TRUNCATION_MARK.format(count=len("Incorrect.")),
    )
    kept_chars = sum(len(_kept_text(output)) + len(_kept_text(fb)) for output, fb in texts)
    assert kept_chars == HISTORY_CHARS
    cut_points = [index for index, (output, _) in enumerate(texts) if "truncated" in output]
    assert cut_points == list(range(cut_points[-1] + 1))  # every cut one is older than any whole


def test_an_echo_s_seq_at_20_prompt_stops_growing() -> None:
    """An echo repeats its prompt, which carries every earlier answer: unbounded, attempt t's
    prompt would be 2^t times the first."""
    task = "p" * 1200
    history: list[TrialRecord] = []
    lengths = []
    for attempt in range(1, 21):
        [message] = build_actor_messages(
            task, metric="seq@k", attempt_index=attempt, k=20, history=history
        )
        lengths.append(len(message["content"]))
        history.append(_trial(attempt, message["content"]))
    headers = 20 * 200  # headers and marks: well under 200 characters per earlier attempt
    assert max(lengths) <= len(task) + HISTORY_CHARS + headers
    # Once the history is full, each attempt adds only the headers and marks of one more.
    assert lengths[-1] - lengths[-2] < 200


def test_a_pass_at_k_prompt_never_carries_history() -> None:
    messages = build_actor_messages(
        "q", metric="pass@k", attempt_index=2, k=3, history=[_trial(1, "x" * 10**6)]
    )
    assert messages == [{"role": "user", "content": "q"}]

"""The seq@k prompt (app.evaluation.prompts): by default seq_k's `build_prompt` text word for
word (checked against what seq_k's own code returned, tests/fixtures/seq_k/prompts.json), the
earlier wording kept as the `gauntlet-2025` style, and in both each earlier output and feedback
within its limit, the whole within its budget, the oldest cut first."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.evaluation.prompts import (
    EARLIER_FEEDBACK_CHARS,
    EARLIER_OUTPUT_CHARS,
    GAUNTLET_2025_STYLE,
    HISTORY_CHARS,
    NO_FEEDBACK,
    PROMPT_STYLE_VERSIONS,
    SEQ_K_STYLE,
    bounded_history,
    build_actor_messages,
)
from app.evaluation.types import ActorSection, CriticSection, JudgeSection, TrialRecord
from app.storable import TRUNCATION_MARK

SEQ_K_PROMPTS = json.loads(
    (Path(__file__).resolve().parents[2] / "fixtures" / "seq_k" / "prompts.json").read_text(
        encoding="utf-8"
    )
)["cases"]


def _trial(index: int, output: str, feedback: str | None = "Incorrect.") -> TrialRecord:
    return TrialRecord(
        attempt_index=index,
        actor=ActorSection(model="offline/echo", prompt=[], output=output),
        judge=JudgeSection(model=None, success=False, score=0.0),
        critic=CriticSection(feedback=feedback),
    )


@pytest.mark.parametrize("case", SEQ_K_PROMPTS, ids=lambda case: f"k{case['k']}-t{case['attempt']}")
def test_the_default_prompt_is_seq_ks_text_exactly(case: dict) -> None:
    history = [
        _trial(number, item["output"], item["feedback"])
        for number, item in enumerate(case["history"], 1)
    ]
    messages = build_actor_messages(
        case["task_prompt"],
        metric="seq@k" if case["seq"] else "pass@k",
        attempt_index=case["attempt"],
        k=case["k"],
        history=history,
    )
    assert messages == [{"role": "user", "content": case["prompt"]}]


def test_the_styles_have_distinct_versions_and_an_unknown_style_is_refused() -> None:
    assert len(set(PROMPT_STYLE_VERSIONS.values())) == len(PROMPT_STYLE_VERSIONS)
    assert PROMPT_STYLE_VERSIONS[GAUNTLET_2025_STYLE] == "2025-01.1"  # what old runs recorded
    with pytest.raises(ValueError, match="unknown prompt style 'seqk'"):
        build_actor_messages(
            "q", metric="seq@k", attempt_index=1, k=2, history=[], prompt_style="seqk"
        )


def test_a_cut_output_keeps_seq_ks_tags_around_its_visible_mark() -> None:
    output = "o" * (EARLIER_OUTPUT_CHARS + 5)
    [message] = build_actor_messages(
        "q", metric="seq@k", attempt_index=2, k=2, history=[_trial(1, output, None)]
    )
    assert message["content"].endswith(
        "<PreviousAttempt 1>\n"
        + "o" * EARLIER_OUTPUT_CHARS
        + TRUNCATION_MARK.format(count=5)
        + "\n</PreviousAttempt 1>"
    )
    assert "<Feedback 1>" not in message["content"]


def test_the_gauntlet_2025_style_keeps_the_earlier_words() -> None:
    history = [_trial(1, "41"), _trial(2, "43", feedback=None)]
    messages = build_actor_messages(
        "What is 6 x 7?",
        metric="seq@k",
        attempt_index=3,
        k=3,
        history=history,
        prompt_style=GAUNTLET_2025_STYLE,
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
    [(number, kept_output, kept_feedback)] = bounded_history(
        [_trial(1, output, feedback)], prompt_style=SEQ_K_STYLE
    )
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

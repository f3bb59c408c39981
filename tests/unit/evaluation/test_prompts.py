"""The seq@k prompt (app.evaluation.engine.prompts): by default seq_k's `build_prompt` text word for
word (checked against what seq_k's own code returned, tests/fixtures/seq_k/prompts.json), with
the history whole as seq_k sends it (an output is cut only where its call's bound cut what was
stored); the earlier wording kept as the `gauntlet-2025` style, with the bounds its runs were
made with: each earlier output and feedback within its limit, the whole within its budget, the
oldest cut first."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from app.evaluation.engine.bounds import capped_output, output_char_cap
from app.evaluation.engine.prompts import (
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
from app.evaluation.engine.storable import TRUNCATION_MARK
from app.evaluation.engine.types import ActorSection, CriticSection, JudgeSection, TrialRecord

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


def test_seq_ks_history_carries_a_long_output_and_feedback_whole() -> None:
    """seq_k sends an earlier output whole: 10,040 characters stay 10,040, where the history
    once kept 8,000 of them (and a feedback 2,000)."""
    output = "o" * 10_040
    feedback = "f" * (EARLIER_FEEDBACK_CHARS + 7)
    [message] = build_actor_messages(
        "q", metric="seq@k", attempt_index=2, k=2, history=[_trial(1, output, feedback)]
    )
    assert message["content"].endswith(
        f"<PreviousAttempt 1>\n{output}\n</PreviousAttempt 1>\n\n"
        f"<Feedback 1>\n{feedback}\n</Feedback 1>"
    )
    assert "truncated" not in message["content"]


def test_seq_ks_history_shows_an_output_as_its_call_stored_it() -> None:
    """What the history may cut is what the call's bound cut (app.evaluation.engine.bounds): the
    stored output, mark included, and nothing more."""
    cap = output_char_cap(16, 200_000)
    stored, cut = capped_output("y" * 50_000, cap)
    assert cut == 50_000 - cap
    [message] = build_actor_messages(
        "q", metric="seq@k", attempt_index=2, k=3, history=[_trial(1, stored, None)]
    )
    assert f"<PreviousAttempt 1>\n{stored}\n</PreviousAttempt 1>" in message["content"]
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


def test_gauntlet_2025_cuts_each_earlier_output_and_feedback_at_its_own_limit() -> None:
    output = "o" * (EARLIER_OUTPUT_CHARS + 123)
    feedback = "f" * (EARLIER_FEEDBACK_CHARS + 7)
    [(number, kept_output, kept_feedback)] = bounded_history([_trial(1, output, feedback)])
    assert number == 1
    assert kept_output == "o" * EARLIER_OUTPUT_CHARS + TRUNCATION_MARK.format(count=123)
    assert kept_feedback == "f" * EARLIER_FEEDBACK_CHARS + TRUNCATION_MARK.format(count=7)


def _kept_text(text: str) -> str:
    return text.split("\n[… truncated")[0]


def test_gauntlet_2025_bounds_the_whole_history_and_cuts_the_oldest_first() -> None:
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


def _echo_lengths(style: str, cap: int) -> list[int]:
    """The prompt lengths of a seq@20 attempt of an echo (it repeats its prompt) whose answers
    are stored within `cap` characters, as a call's bound stores them."""
    task = "p" * 1200
    history: list[TrialRecord] = []
    lengths = []
    for attempt in range(1, 21):
        [message] = build_actor_messages(
            task, metric="seq@k", attempt_index=attempt, k=20, history=history, prompt_style=style
        )
        lengths.append(len(message["content"]))
        stored, _ = capped_output(message["content"], cap)
        history.append(_trial(attempt, stored))
    return lengths


def test_an_echo_s_seq_k_prompt_grows_by_one_stored_answer_an_attempt() -> None:
    """An echo repeats its prompt, which carries every earlier answer: were the answers stored
    whole, attempt t's prompt would be 2^t times the first. Each is stored within its call's
    bound, so once answers reach it a prompt grows by one stored answer and its tags."""
    cap = output_char_cap(256, 200_000)
    lengths = _echo_lengths(SEQ_K_STYLE, cap)
    growth = [after - before for before, after in itertools.pairwise(lengths)]
    mark = len(TRUNCATION_MARK.format(count=10**9))
    overhead = 200  # tags and the feedback of one attempt
    assert max(growth) <= cap + mark + overhead
    assert lengths[-1] <= 1200 + 19 * (cap + mark + overhead)


def test_an_echo_s_gauntlet_2025_prompt_stops_growing() -> None:
    lengths = _echo_lengths(GAUNTLET_2025_STYLE, 10**9)
    headers = 20 * 200  # headers and marks: well under 200 characters per earlier attempt
    assert max(lengths) <= 1200 + HISTORY_CHARS + headers
    # Once the history is full, each attempt adds only the headers and marks of one more.
    assert lengths[-1] - lengths[-2] < 200


def test_a_pass_at_k_prompt_never_carries_history() -> None:
    messages = build_actor_messages(
        "q", metric="pass@k", attempt_index=2, k=3, history=[_trial(1, "x" * 10**6)]
    )
    assert messages == [{"role": "user", "content": "q"}]

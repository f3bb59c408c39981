"""The bounds of one model call (app.evaluation.engine.bounds): what is kept of an answer, how much
of it is read, what a usage may claim, which prompt is too long."""

from __future__ import annotations

import pytest

from app.evaluation.engine.bounds import (
    DEFAULT_MAX_OUTPUT_CHARS,
    MAX_BYTES_PER_TOKEN,
    MIN_OUTPUT_CHARS,
    MIN_RESPONSE_BYTES,
    OUTPUT_CHARS_PER_TOKEN,
    RESPONSE_BYTES_PER_TOKEN,
    TOKENS_PER_MESSAGE,
    TOKENS_PER_REQUEST,
    Usage,
    bounded_usage,
    capped_output,
    input_token_bound,
    output_char_cap,
    output_token_bound,
    prompt_bytes,
    prompt_token_floor,
    response_byte_cap,
)
from app.evaluation.engine.storable import TRUNCATION_MARK
from app.evaluation.engine.types import CallRecord, JudgeSection, Message, TrialRecord

# Output caps


def test_an_answer_is_capped_by_what_the_call_may_produce() -> None:
    assert output_char_cap(None, DEFAULT_MAX_OUTPUT_CHARS) == DEFAULT_MAX_OUTPUT_CHARS
    # 16 tokens could never be 31 MB: a small call keeps the floor, no more.
    assert output_char_cap(16, DEFAULT_MAX_OUTPUT_CHARS) == MIN_OUTPUT_CHARS
    assert output_char_cap(1, DEFAULT_MAX_OUTPUT_CHARS) == MIN_OUTPUT_CHARS
    assert output_char_cap(1000, DEFAULT_MAX_OUTPUT_CHARS) == 1000 * OUTPUT_CHARS_PER_TOKEN
    # The ceiling wins over a generous max_tokens.
    assert output_char_cap(10**9, 5000) == 5000
    assert output_char_cap(None, 5000) == 5000


def test_the_response_bytes_read_follow_max_tokens() -> None:
    assert response_byte_cap(None) is None  # the transport's own maximum
    assert response_byte_cap(16) == MIN_RESPONSE_BYTES
    assert response_byte_cap(100_000) == 100_000 * RESPONSE_BYTES_PER_TOKEN
    # Whatever the limit, an honest answer fits: every token at 16 characters, each escaped
    # in JSON as a \uXXXX sequence.
    for tokens in (1, 16, 256, 4096, 200_000):
        cap = response_byte_cap(tokens)
        assert cap is not None and cap >= tokens * OUTPUT_CHARS_PER_TOKEN * 4


@pytest.mark.parametrize("text", ["", "short", "x" * MIN_OUTPUT_CHARS])
def test_an_answer_within_its_cap_is_kept_whole(text: str) -> None:
    assert capped_output(text, MIN_OUTPUT_CHARS) == (text, 0)


def test_a_cut_answer_keeps_its_start_and_says_how_much_was_cut() -> None:
    text = "a" * 1000 + "b" * 31_455_856
    kept, cut = capped_output(text, 1000)
    assert cut == 31_455_856
    assert kept == "a" * 1000 + "\n[… truncated: 31,455,856 more characters]"
    assert kept == "a" * 1000 + TRUNCATION_MARK.format(count=cut)


def test_unicode_is_cut_by_characters_never_inside_one() -> None:
    text = "😀é" * 3000  # characters of 4 and 2 bytes
    kept, cut = capped_output(text, 1001)
    assert cut == 6000 - 1001
    assert kept.startswith("😀é" * 500 + "😀\n[… truncated")
    kept.encode("utf-8")  # whole characters: still valid text


# Token bounds


def test_the_input_bound_counts_bytes_and_a_small_overhead_per_message() -> None:
    messages: list[Message] = [
        {"role": "system", "content": "Be terse."},
        {"role": "user", "content": "héllo 😀"},
    ]
    size = prompt_bytes(messages)
    assert size == 9 + len("héllo 😀".encode())
    assert input_token_bound(messages, size) == size + 2 * TOKENS_PER_MESSAGE + TOKENS_PER_REQUEST


def test_empty_and_missing_contents_count_nothing() -> None:
    messages: list[Message] = [{"role": "user", "content": ""}, {"role": "assistant"}]
    assert prompt_bytes(messages) == 0
    assert prompt_bytes([]) == 0
    assert input_token_bound([], 0) == TOKENS_PER_REQUEST


def test_a_lone_surrogate_is_counted_not_refused() -> None:
    assert prompt_bytes([{"role": "user", "content": "a\ud800"}]) == 4


def test_the_output_bound_is_max_tokens_else_the_answer_s_size() -> None:
    assert output_token_bound(16, "x" * 31_000_000, "") == 16
    assert output_token_bound(None, "four", "") == 4 + TOKENS_PER_REQUEST
    # Reasoning sent beside the answer counts too (its tokens are within output tokens).
    assert output_token_bound(None, "ok", "é" * 100) == 2 + 200 + TOKENS_PER_REQUEST


def test_a_prompt_s_token_floor_is_well_below_any_tokenizer_s_count() -> None:
    assert prompt_token_floor(0) == 0
    assert prompt_token_floor(8 * 1000) == 1000
    # English averages ~4 bytes per token: the floor is half of that count or less.
    assert prompt_token_floor(4000) <= 4000 // 4 // 2
    assert prompt_token_floor(MAX_BYTES_PER_TOKEN - 1) == 0


def test_a_lying_usage_is_bounded_by_the_request() -> None:
    reported = Usage(
        input_tokens=10**15, cached_tokens=10**15, thinking_tokens=10**15, output_tokens=10**15
    )
    counted = bounded_usage(reported, max_input=500, max_output=16)
    assert counted == Usage(
        input_tokens=500, cached_tokens=500, thinking_tokens=16, output_tokens=16
    )


def test_an_honest_usage_is_kept_as_reported() -> None:
    reported = Usage(input_tokens=120, cached_tokens=100, thinking_tokens=25, output_tokens=40)
    assert bounded_usage(reported, max_input=500, max_output=64) == reported


def test_negative_and_inconsistent_counts_are_made_consistent() -> None:
    reported = Usage(input_tokens=-5, cached_tokens=30, thinking_tokens=-1, output_tokens=10)
    counted = bounded_usage(reported, max_input=500, max_output=64)
    assert counted == Usage(input_tokens=0, cached_tokens=0, thinking_tokens=0, output_tokens=10)
    counted = bounded_usage(
        Usage(input_tokens=10, cached_tokens=30, thinking_tokens=50, output_tokens=20),
        max_input=500,
        max_output=64,
    )
    assert (counted.cached_tokens, counted.thinking_tokens) == (10, 20)


# Records


def test_a_record_writes_its_bounding_fields_only_when_something_was_bounded() -> None:
    plain = CallRecord(model="m", prompt=[], output="o")
    assert "output_truncated_chars" not in plain.to_dict()
    assert "reported_usage" not in plain.to_dict()
    bounded = CallRecord(
        model="m",
        prompt=[],
        output="o" + TRUNCATION_MARK.format(count=5),
        output_tokens=16,
        output_truncated_chars=5,
        reported_usage={"output_tokens": 10**15},
    )
    data = bounded.to_dict()
    assert data["output_truncated_chars"] == 5
    assert data["reported_usage"] == {"output_tokens": 10**15}
    trial = TrialRecord(
        attempt_index=1, actor=bounded, judge=JudgeSection(model=None, success=False, score=0.0)
    )
    assert TrialRecord.from_dict(trial.to_dict()) == trial

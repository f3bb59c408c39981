"""What PostgreSQL cannot store: found with its location (requests), escaped (model output)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from app.evaluation.engine.storable import (
    NON_FINITE_MESSAGE,
    NUL_MESSAGE,
    STORED_VALUE_CHARS,
    SURROGATE_MESSAGE,
    TRUNCATION_MARK,
    bounded_value,
    encodable,
    escape_text,
    escape_value,
    first_problem,
    text_problem,
    truncated,
)


def test_text_problems() -> None:
    assert text_problem("fine, ünïcödé and 😀") is None
    assert text_problem("a\x00b") == NUL_MESSAGE
    assert text_problem("a\ud800") == SURROGATE_MESSAGE
    assert text_problem("\udfff") == SURROGATE_MESSAGE
    # A surrogate pair decoded by Python is one character, valid.
    assert text_problem(json.loads('"\\ud83d\\ude00"')) is None


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ({"a": [1, {"b": "x\x00"}]}, (("a", 1, "b"), NUL_MESSAGE)),
        ({"a": {"k\x00": 1}}, (("a",), f"object keys {NUL_MESSAGE}")),
        ({"x": float("nan")}, (("x",), NON_FINITE_MESSAGE)),
        ([1.0, float("-inf")], ((1,), NON_FINITE_MESSAGE)),
        ({"first": "\x00", "second": "\ud800"}, (("first",), NUL_MESSAGE)),
        ({"fine": [1, 2.5, None, True, "ok", {"k": "v"}]}, None),
    ],
)
def test_first_problem_names_where_it_is(value: Any, expected: Any) -> None:
    assert first_problem(value) == expected


def test_first_problem_and_escape_survive_deep_nesting() -> None:
    root: list[Any] = []
    level = root
    for _ in range(50_000):
        child: list[Any] = []
        level.append(child)
        level = child
    level.append("\x00")
    found = first_problem(root)
    assert found is not None and len(found[0]) == 50_001
    escaped = escape_value(root)
    assert first_problem(escaped) is None


def test_escape_keeps_the_characters_visible() -> None:
    assert escape_text("PW\x00NED \ud800!") == "PW\\u0000NED \\ud800!"
    value = {"out\x00": ["a\x00", float("nan"), float("inf"), -float("inf"), 1.5, 2, None]}
    assert escape_value(value) == {
        "out\\u0000": ["a\\u0000", "NaN", "Infinity", "-Infinity", 1.5, 2, None]
    }
    clean = {"a": ["b", 1.0]}
    assert escape_value(clean) is clean  # nothing to do, nothing copied
    # The result is JSON PostgreSQL takes: no NaN token, no \u0000, no lone surrogate.
    text = json.dumps(escape_value(value), allow_nan=False)
    assert "\\u0000" not in text.replace("\\\\u0000", "")
    text.encode("utf-8")


def test_encodable_escapes_only_what_utf8_cannot_encode() -> None:
    assert encodable("plain") == "plain"
    assert encodable("été \x00") == "été \x00"
    assert encodable("a\ud800b") == "a\\ud800b"


# Size


def _string_chars(value: Any) -> int:
    if isinstance(value, str):
        return len(value)
    if isinstance(value, dict):
        return sum(len(key) + _string_chars(item) for key, item in value.items())
    if isinstance(value, list | tuple):
        return sum(_string_chars(item) for item in value)
    return 0


def test_truncated_keeps_the_start_and_marks_the_rest() -> None:
    assert truncated("", 0) == ""
    assert truncated("abc", 3) == "abc"
    assert truncated("abcdef", 2) == "ab\n[… truncated: 4 more characters]"
    assert truncated("abc", 0) == TRUNCATION_MARK.format(count=3)
    assert truncated("abc", -5) == TRUNCATION_MARK.format(count=3)


def test_a_value_within_its_bound_is_returned_as_it_is() -> None:
    value = {"output": "x" * 100, "calls": [{"model": "m"}], "n": 1}
    assert bounded_value(value, 1000) is value
    assert bounded_value(None, 0) is None
    assert bounded_value({}, 0) == {}
    assert bounded_value(3.5, 0) == 3.5


def test_a_huge_value_loses_its_longest_strings_first() -> None:
    value = {
        "model": "openai/fake-model",
        "prompt": [{"role": "user", "content": "say it"}],
        "output": "x" * 31_456_880,
        "input_tokens": 11,
        "cost_usd": None,
        "success": True,
    }
    bounded = bounded_value(value, 500_000)
    assert _string_chars(bounded) <= 500_000
    assert bounded["output"].startswith("x" * 400_000)
    assert bounded["output"].endswith(" more characters]")
    # Everything else is as it was: short strings, numbers, None, booleans, the order.
    assert {key: item for key, item in bounded.items() if key != "output"} == {
        key: item for key, item in value.items() if key != "output"
    }
    assert list(bounded) == list(value)
    assert len(value["output"]) == 31_456_880  # the original is not changed


def test_several_long_strings_are_cut_to_one_length() -> None:
    value = ["a" * 10_000, ("b" * 3_000,), {"c": "c" * 500}, "d" * 50]
    bounded = bounded_value(value, 6_000)
    assert _string_chars(bounded) <= 6_000
    first, (second,), third, fourth = bounded
    assert third == {"c": "c" * 500} and fourth == "d" * 50  # short enough to stay whole
    assert _kept(first) == "a" * len(_kept(first)) and _kept(second) == "b" * len(_kept(second))
    assert len(_kept(first)) == len(_kept(second)) > 2_000


def _kept(text: str) -> str:
    return text.split("\n[… truncated")[0]


def test_unicode_strings_are_cut_between_characters() -> None:
    bounded = bounded_value({"output": "😀" * 100_000}, 10_000)
    assert _kept(bounded["output"]) == "😀" * len(_kept(bounded["output"]))
    json.dumps(bounded, ensure_ascii=False).encode("utf-8")


def test_keys_are_never_cut() -> None:
    value = {"k" * 50: "v" * 100}
    bounded = bounded_value(value, 40)
    assert list(bounded) == ["k" * 50]
    assert bounded["k" * 50] == TRUNCATION_MARK.format(count=100)


def test_a_deeply_nested_huge_value_is_bounded_without_recursion() -> None:
    root: list[Any] = []
    level = root
    for _ in range(50_000):
        child: list[Any] = []
        level.append(child)
        level = child
    level.append("z" * 100_000)
    bounded = bounded_value(root, 1_000)
    while isinstance(bounded, list) and bounded and isinstance(bounded[0], list):
        bounded = bounded[0]
    assert _kept(bounded[0]) == "z" * len(_kept(bounded[0])) and len(bounded[0]) < 1_100


def test_what_is_stored_is_bounded_whatever_its_size() -> None:
    from sqlalchemy.dialects import postgresql

    from app.kit.db import ProducedJSON

    value = {"output": "\x00" + "y" * (STORED_VALUE_CHARS + 10), "model": "m"}
    stored = ProducedJSON().process_bind_param(value, postgresql.dialect())
    assert _string_chars(stored) <= STORED_VALUE_CHARS
    assert stored["output"].startswith("\\u0000yyy")  # escaped, then bounded
    assert stored["model"] == "m"

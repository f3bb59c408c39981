"""What PostgreSQL cannot store: found with its location (requests), escaped (model output)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from app.storable import (
    NON_FINITE_MESSAGE,
    NUL_MESSAGE,
    SURROGATE_MESSAGE,
    encodable,
    escape_text,
    escape_value,
    first_problem,
    text_problem,
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

"""A plugin's `details` reduced to bounded JSON data (app/scoring/sandbox/details.py)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from app.scoring.sandbox.details import TRUNCATED_KEY, DetailsLimits, bound_details, bound_text

SMALL = DetailsLimits(
    max_bytes=400, max_depth=3, max_keys=4, max_items=3, max_string_chars=10, max_key_chars=5
)


@pytest.mark.parametrize("value", [None, [], "text", 3, 2.5, True])
def test_only_an_object_is_details(value: object) -> None:
    assert bound_details(value) is None


def test_plain_details_pass_unchanged() -> None:
    details = {"why": "ok", "n": 3, "x": 0.5, "ok": True, "none": None, "list": [1, "é", {"a": 1}]}
    assert bound_details(details) == details
    assert bound_details({}) == {}


def test_long_strings_and_keys_are_cut_and_flagged() -> None:
    bounded = bound_details({"a": "x" * 50, "k" * 20: 1}, SMALL)
    assert bounded == {"a": "x" * 9 + "…", "kkkk…": 1, TRUNCATED_KEY: True}


def test_depth_is_capped() -> None:
    nested: Any = "bottom"
    for _ in range(50):
        nested = {"next": nested}
    bounded = bound_details(nested, SMALL)
    assert bounded == {"next": {"next": {"next": {}}}, TRUNCATED_KEY: True}


def test_keys_and_items_are_capped() -> None:
    bounded = bound_details({f"k{i}": list(range(10)) for i in range(10)}, SMALL)
    assert bounded is not None
    assert bounded.pop(TRUNCATED_KEY) is True
    assert list(bounded) == ["k0", "k1", "k2", "k3"]
    assert all(value == [0, 1, 2] for value in bounded.values())


def test_the_total_size_is_capped() -> None:
    limits = DetailsLimits(max_bytes=1000)
    bounded = bound_details({f"key{i}": "v" * 100 for i in range(60)}, limits)
    assert bounded is not None and bounded[TRUNCATED_KEY] is True
    assert len(json.dumps(bounded, ensure_ascii=False, separators=(",", ":")).encode()) <= 1000
    assert 5 <= len(bounded) < 60


def test_escapes_do_not_slip_past_the_size_cap() -> None:
    # Each control character is one character but six bytes once encoded.
    limits = DetailsLimits(max_bytes=200, max_string_chars=1000)
    bounded = bound_details({"a": "\x01" * 150}, limits)
    assert bounded is not None
    assert len(json.dumps(bounded, ensure_ascii=False, separators=(",", ":")).encode()) <= 200


def test_numbers_json_cannot_carry_become_strings() -> None:
    bounded = bound_details(
        {
            "nan": float("nan"),
            "inf": float("inf"),
            "-inf": float("-inf"),
            "big": 10**30,
            "small": -(10**30),
            "safe": 2**53,
            "float": 1e300,
        }
    )
    assert bounded == {
        "nan": "NaN",
        "inf": "Infinity",
        "-inf": "-Infinity",
        "big": str(10**30),
        "small": str(-(10**30)),
        "safe": 2**53,
        "float": 1e300,
    }
    # What comes out is always valid JSON, as PostgreSQL's JSONB needs.
    json.dumps(bounded, allow_nan=False)


def test_lone_surrogates_are_left_to_the_storage_boundary() -> None:
    # app/evaluation/engine/storable.py escapes them visibly where they are stored; replacing them
    # here would hide what the plugin wrote.
    bounded = bound_details({"\udc80key": "a\ud800b", "emoji": "🎯"})
    assert bounded == {"\udc80key": "a\ud800b", "emoji": "🎯"}


def test_keys_that_collide_once_cut_keep_the_first() -> None:
    bounded = bound_details({"abcdefX": 1, "abcdefY": 2}, SMALL)
    assert bounded == {"abcd…": 1, TRUNCATED_KEY: True}


def test_values_that_are_not_json_are_dropped() -> None:
    assert bound_details({"x": object(), "y": b"bytes"}) == {
        "x": None,
        "y": None,
        TRUNCATED_KEY: True,
    }


def test_nul_is_left_to_the_storage_boundary() -> None:
    assert bound_details({"a": "x\x00y"}) == {"a": "x\x00y"}


def test_bound_text() -> None:
    assert bound_text("short", 10) == "short"
    assert bound_text("x" * 20, 10) == "x" * 9 + "…"
    assert bound_text("\ud800", 10) == "\ud800"

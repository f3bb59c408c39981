"""Validation errors in plain words: a pattern says what it allows, an unknown field names the
field it probably meant (or those it could be), a date order names both dates, a JSON text
that does not parse says what was expected and where; the validator's words stay beside."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from app.challenge.schemas import ChallengeCreate, check_closes_at, check_freeze_at
from app.kit.error_words import json_error_words, pattern_words, plain_message
from app.kit.errors import detail_text, error_details, validation_message


class Suite(BaseModel):
    model_config = ConfigDict(extra="forbid")
    categories: list[str] = Field(min_length=1, max_length=2)
    name: str = Field(default="x", pattern=pattern_words(r"^[a-z]+$", "lowercase letters"))
    weight: float = Field(default=1, ge=0, le=2)


def _details(model: type[BaseModel], body: Any) -> list[dict[str, Any]]:
    with pytest.raises(ValidationError) as raised:
        model.model_validate(body)
    return error_details(raised.value.errors(), ["body"], body, model)


def test_a_pattern_says_what_it_allows() -> None:
    [detail] = _details(Suite, {"categories": ["a"], "name": "Not Allowed"})
    assert detail["message"] == "use lowercase letters"
    assert detail["validator_message"] == "String should match pattern '^[a-z]+$'"
    assert detail["msg"] == detail["validator_message"]  # older clients read `msg`
    assert detail["field"] == "name" and detail["loc"] == ["body", "name"]


def test_a_challenges_slug_says_what_a_slug_is() -> None:
    with pytest.raises(ValidationError) as raised:
        ChallengeCreate.model_validate({"slug": "Guard It", "title": "T"})
    [detail] = error_details(raised.value.errors(), ["body"])
    assert detail_text(detail) == (
        "slug: use 1 to 64 lowercase letters, digits and hyphens, starting and ending with a "
        "letter or digit"
    )


def test_a_pattern_without_words_does_not_recite_the_pattern() -> None:
    error = {"type": "string_pattern_mismatch", "msg": "x", "ctx": {"pattern": "^[q]{3}$"}}
    assert plain_message(error) == "does not have the allowed form"


def test_a_misspelt_field_names_the_one_meant_and_is_not_also_missing() -> None:
    details = _details(Suite, {"categries": ["a"]})
    assert [(d["field"], d["message"]) for d in details] == [
        ("categries", "unknown field; did you mean 'categories'?")
    ]


def test_an_unknown_field_like_none_lists_the_fields_there() -> None:
    [detail] = _details(Suite, {"categories": ["a"], "zzz": 1})
    assert detail["message"] == "unknown field; the fields here are categories, name, weight"
    assert detail["validator_message"] == "Extra inputs are not permitted"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"categories": []}, "must not be empty"),
        ({"categories": ["a", "b", "c"]}, "takes at most 2 items (it has 3)"),
        ({"categories": ["a"], "weight": 5}, "must be at most 2"),
        ({"categories": ["a"], "weight": -1}, "must be at least 0"),
        ({"categories": ["a"], "weight": "heavy"}, "must be a number"),
        ({}, "is required"),
        ({"categories": "a"}, "must be a list ([...])"),
    ],
)
def test_common_errors_read_as_what_to_do(body: dict[str, Any], message: str) -> None:
    [detail] = _details(Suite, body)
    assert detail["message"] == message, detail


def test_a_validators_own_words_lose_pydantics_prefix() -> None:
    error = {"type": "value_error", "msg": "Value error, must contain '{prompt}'"}
    assert plain_message(error) == "must contain '{prompt}'"


def test_a_date_order_names_both_dates() -> None:
    opens = datetime(2030, 1, 2, tzinfo=UTC)
    closes = datetime(2030, 1, 1, 12, 30, 15, tzinfo=UTC)
    with pytest.raises(ValueError) as raised:
        check_closes_at(closes, opens)
    assert str(raised.value) == (
        "must be after opens_at: it is 2030-01-01 12:30:15 UTC, and opens_at is 2030-01-02 "
        "00:00 UTC"
    )
    with pytest.raises(ValueError, match=r"before closes_at \(2030-01-01 12:30:15 UTC\)"):
        check_freeze_at(opens, None, closes)
    check_closes_at(opens, None)  # no opening: nothing to compare
    with pytest.raises(ValidationError) as invalid:
        ChallengeCreate.model_validate(
            {"slug": "Bad", "title": "T", "opens_at": opens, "closes_at": closes}
        )
    # With the body's other problems, beside its own field.
    fields = [detail["field"] for detail in error_details(invalid.value.errors(), ["body"])]
    assert fields == ["slug", "closes_at"]


@pytest.mark.parametrize(
    ("text", "words"),
    [
        (
            "",
            "not valid JSON: a value was expected (text in double quotes, a number, true, "
            "false, null, an object {...} or a list [...]) at line 1, character 1",
        ),
        (
            "{'a': 1}",
            "not valid JSON: a field name in double quotes was expected (JSON has no "
            "trailing commas and no single quotes) at line 1, character 2",
        ),
        (
            '{"a": 1,\n "b" 2}',
            "not valid JSON: a colon was expected after the field name at line 2, character 6",
        ),
        ("[1 2]", "not valid JSON: a comma was expected between two items at line 1, character 4"),
        (
            '"open',
            "not valid JSON: a text opened with a double quote is never closed at line 1, "
            "character 1",
        ),
        (
            "{} {}",
            "not valid JSON: there is more after the end of the value at line 1, character 4",
        ),
    ],
)
def test_json_that_does_not_parse_says_what_was_expected_and_where(text: str, words: str) -> None:
    with pytest.raises(json.JSONDecodeError) as raised:
        json.loads(text)
    assert json_error_words(raised.value) == words


def test_a_body_that_is_not_json_is_located_at_its_character_not_a_field() -> None:
    error = {
        "type": "json_invalid",
        "loc": ("body", 7),
        "msg": "JSON decode error",
        "ctx": {"error": "Expecting ',' delimiter"},
    }
    [detail] = error_details([error])
    assert detail["field"] == ""
    assert detail["message"] == (
        "not valid JSON: a comma was expected between two items at character 8"
    )


def test_the_message_lists_the_first_problems_and_how_many_more() -> None:
    details = _details(Suite, {"categories": [], "name": "X", "weight": 9, "a": 1, "b": 2, "c": 3})
    assert len(details) == 6
    message = validation_message(details)
    assert message.endswith("; and 1 more (error.details lists them all)")
    assert message.count(": ") >= 5

"""The original body's flat scoring fields: how they map onto `scoring`, and what is refused."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from app.challenge.flat_scoring import (
    errors_named_as_given,
    given_flat_scoring,
    scoring_from_flat,
)
from app.challenge.schemas import ChallengeCreate, ChallengeUpdate
from app.kit.errors import ValidationFailed

PROMPT_CHALLENGE = {
    "slug": "flat",
    "title": "T",
    "target": {"model": "offline/echo"},
    "verifier": {"type": "contains", "pattern": "x"},
}
STORED = {
    "strategy": "custom",
    "plugin_id": "acme.frugal",
    "config": {"budget": 500},
    "timeout_ms": 2000,
}


@pytest.mark.parametrize(
    ("flat", "expected"),
    [
        (
            {"scoring_plugin_id": "acme.frugal", "scoring_config": {"budget": 1}},
            {"strategy": "custom", "plugin_id": "acme.frugal", "config": {"budget": 1}},
        ),
        (
            {"scoring_strategy": "custom", "scoring_plugin_id": "p", "scoring_entrypoint": "m:C"},
            {"strategy": "custom", "plugin_id": "p", "config": {}},
        ),
        ({"scoring_strategy": "fastest"}, {"strategy": "fastest", "plugin_id": None}),
        ({"scoring_config": {"a": 1}}, {"plugin_id": None, "config": {"a": 1}}),
    ],
)
def test_on_create(flat: dict[str, Any], expected: dict[str, Any]) -> None:
    assert scoring_from_flat(None, flat) == expected


@pytest.mark.parametrize(
    ("flat", "expected"),
    [
        ({"scoring_config": {"budget": 9}}, {**STORED, "config": {"budget": 9}}),
        ({"scoring_entrypoint": "scorers.frugal:FrugalScorer"}, STORED),
        ({"scoring_plugin_id": "acme.frugal"}, STORED),
        ({"scoring_plugin_id": "other"}, {**STORED, "plugin_id": "other", "config": {}}),
        (
            {"scoring_plugin_id": "other", "scoring_config": {"x": 1}},
            {**STORED, "plugin_id": "other", "config": {"x": 1}},
        ),
        (
            {"scoring_strategy": "first"},
            {**STORED, "strategy": "first", "plugin_id": None, "config": {}},
        ),
    ],
)
def test_on_update_only_the_given_fields_change(
    flat: dict[str, Any], expected: dict[str, Any]
) -> None:
    assert scoring_from_flat(STORED, flat) == expected


def test_a_plugin_from_a_non_custom_challenge_makes_it_custom() -> None:
    stored = {"strategy": "first", "plugin_id": None, "config": {}, "timeout_ms": 5000}
    assert scoring_from_flat(stored, {"scoring_plugin_id": "p"}) == {
        **stored,
        "strategy": "custom",
        "plugin_id": "p",
    }


@pytest.mark.parametrize(
    ("stored", "flat", "field", "reason"),
    [
        (None, {"scoring_strategy": "custom"}, "scoring_plugin_id", "is required"),
        (None, {"scoring_entrypoint": "m:C"}, "scoring_plugin_id", "is required"),
        (
            None,
            {"scoring_strategy": "first", "scoring_plugin_id": "p"},
            "scoring_plugin_id",
            "only",
        ),
        (
            STORED,
            {"scoring_strategy": "first", "scoring_entrypoint": "m:C"},
            "scoring_entrypoint",
            "only",
        ),
        (
            {"strategy": "first", "plugin_id": None},
            {"scoring_strategy": "custom"},
            "scoring_plugin_id",
            "is required",
        ),
    ],
)
def test_refusals_name_the_flat_field(
    stored: dict[str, Any] | None, flat: dict[str, Any], field: str, reason: str
) -> None:
    with pytest.raises(ValidationFailed) as caught:
        scoring_from_flat(stored, flat)
    assert caught.value.details[0]["loc"] == ["body", field]
    assert reason in caught.value.message


@pytest.mark.parametrize(
    ("path", "renamed"),
    [
        (["scoring", "plugin_id"], ["body", "scoring_plugin_id"]),
        (["scoring", "strategy"], ["body", "scoring_strategy"]),
        (["scoring", "config", "budget", 0], ["body", "scoring_config", "budget", 0]),
        (["scoring", "timeout_ms"], ["body", "scoring", "timeout_ms"]),
        (["scoring"], ["body", "scoring"]),
        (["target", "model"], ["body", "target", "model"]),
    ],
)
def test_errors_about_mapped_values_name_the_flat_field(
    path: list[Any], renamed: list[Any]
) -> None:
    with pytest.raises(ValidationFailed) as caught, errors_named_as_given({"scoring_config": {}}):
        raise ValidationFailed.at(path, "is wrong")
    assert caught.value.details[0]["loc"] == renamed
    assert caught.value.message == ".".join(str(p) for p in renamed[1:]) + ": is wrong"


def test_errors_keep_their_names_when_the_nested_form_was_used() -> None:
    with pytest.raises(ValidationFailed) as caught, errors_named_as_given({}):
        raise ValidationFailed.at(["scoring", "plugin_id"], "is wrong")
    assert caught.value.details[0]["loc"] == ["body", "scoring", "plugin_id"]


@pytest.mark.parametrize("schema", [ChallengeCreate, ChallengeUpdate])
def test_both_forms_at_once_are_refused_naming_the_conflict(schema: Any) -> None:
    body = {
        **(PROMPT_CHALLENGE if schema is ChallengeCreate else {}),
        "scoring": {"strategy": "first"},
        "scoring_config": {},
        "scoring_strategy": None,  # null: not given, so not named
    }
    with pytest.raises(ValidationError) as caught:
        schema.model_validate(body)
    error = caught.value.errors()[0]
    assert error["type"] == "scoring_forms_conflict"
    assert "'scoring' conflicts with 'scoring_config'" in error["msg"]
    assert "scoring_strategy" not in error["msg"]


def test_flat_fields_are_read_but_never_dumped() -> None:
    body = ChallengeCreate.model_validate(
        {**PROMPT_CHALLENGE, "scoring_plugin_id": "p", "scoring_strategy": None}
    )
    assert given_flat_scoring(body) == {"scoring_plugin_id": "p"}
    assert not {name for name in body.model_dump() if name.startswith("scoring_")}
    update = ChallengeUpdate.model_validate({"scoring_config": {"a": 1}})
    assert given_flat_scoring(update) == {"scoring_config": {"a": 1}}
    assert update.model_dump(exclude_unset=True) == {}

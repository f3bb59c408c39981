"""A validation error names the field as the body wrote it: never the member of a union that
pydantic puts in its path (`verifier.contains.patern` is the body's `verifier.patern`)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import pytest
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from app.kit.errors import as_given, request_error_details, telling_first


class Contains(BaseModel):
    model_config = ConfigDict(extra="forbid")
    type: Literal["contains"] = "contains"
    pattern: str


class Judge(BaseModel):
    model_config = ConfigDict(extra="forbid")
    type: Literal["llm_judge"]
    model: str
    votes: int | str = 1


class Category(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    verifier: Annotated[Contains | Judge, Field(discriminator="type")]


class Config(BaseModel):
    model_config = ConfigDict(extra="forbid")
    verifier: Annotated[Contains | Judge, Field(discriminator="type")]
    categories: list[Category] = []


def _first(body: dict[str, Any]) -> tuple[tuple[str | int, ...], str]:
    with pytest.raises(ValidationError) as raised:
        Config.model_validate(body)
    first = telling_first(raised.value.errors(), body)[0]
    return first["loc"], first["msg"]


def test_a_misspelt_field_of_a_tagged_member_is_named_as_written() -> None:
    body = {"verifier": {"type": "contains", "patern": "PWNED"}}
    assert _first(body) == (("verifier", "patern"), "unknown field; did you mean 'pattern'?")


def test_a_missing_field_of_a_tagged_member_is_named_as_written() -> None:
    loc, message = _first({"verifier": {"type": "llm_judge"}})
    assert (loc, message) == (("verifier", "model"), "Field required")


def test_paths_through_lists_keep_their_indexes() -> None:
    body = {
        "verifier": {"type": "contains", "pattern": "x"},
        "categories": [
            {"name": "a", "verifier": {"type": "contains", "pattern": "x"}},
            {"name": "b", "verifier": {"type": "llm_judge", "modle": "m"}},
        ],
    }
    loc, message = _first(body)
    assert loc == ("categories", 1, "verifier", "modle")
    assert message == "unknown field; did you mean 'model'?"


def test_the_members_of_a_plain_union_are_not_fields() -> None:
    body = {"verifier": {"type": "llm_judge", "model": "m", "votes": [1]}}
    with pytest.raises(ValidationError) as raised:
        Config.model_validate(body)
    locs = {error["loc"] for error in telling_first(raised.value.errors(), body)}
    assert locs == {("verifier", "votes")}


@pytest.mark.parametrize(
    ("loc", "given", "expected"),
    [
        ((), {}, ()),
        (("title",), {}, ("title",)),  # missing at the top
        (("a", "b"), {"a": {"b": 1}}, ("a", "b")),
        (("a", "tag", "b"), {"a": {"b": 1}}, ("a", "b")),
        (("a", 5, "b"), {"a": [1]}, ("a", 5)),  # an index past the end, nothing below it
        (("a", "int"), {"a": "x"}, ("a",)),
        (("a", "b"), {"a": None}, ("a",)),
    ],
)
def test_as_given_walks_the_value(
    loc: tuple[str | int, ...], given: dict[str, Any], expected: tuple[str | int, ...]
) -> None:
    assert as_given(loc, given) == expected


def test_without_the_value_locations_stay_as_pydantic_gave_them() -> None:
    errors = [{"loc": ("verifier", "contains", "x"), "msg": "m", "type": "extra_forbidden"}]
    assert telling_first(errors)[0]["loc"] == ("verifier", "contains", "x")


class Target(BaseModel):
    model_config = ConfigDict(extra="forbid")
    model: str
    system_prompt: str = ""
    temperature: float | None = None


class Sections(BaseModel):
    model_config = ConfigDict(extra="forbid")
    target: Target
    categories: list[Category] = []


@pytest.mark.parametrize(
    ("body", "loc", "meant"),
    [
        (
            {"target": {"model": "m", "system_promt": "x"}},
            ("target", "system_promt"),
            "system_prompt",
        ),
        ({"target": {"model": "m", "temprature": 0}}, ("target", "temprature"), "temperature"),
        (
            {
                "target": {"model": "m"},
                "categories": [
                    {"name": "a", "verifier": {"type": "llm_judge", "model": "m", "vots": 3}}
                ],
            },
            ("categories", 0, "verifier", "vots"),
            "votes",
        ),
    ],
)
def test_knowing_the_model_an_optional_field_misspelt_is_named_with_the_one_meant(
    body: dict[str, Any], loc: tuple[str | int, ...], meant: str
) -> None:
    with pytest.raises(ValidationError) as raised:
        Sections.model_validate(body)
    first = telling_first(raised.value.errors(), body, Sections)[0]
    assert first["loc"] == loc
    assert first["msg"] == f"unknown field; did you mean '{meant}'?"


def test_a_field_already_given_is_not_what_a_misspelling_meant() -> None:
    body = {"target": {"model": "m", "modle": "n"}}
    with pytest.raises(ValidationError) as raised:
        Sections.model_validate(body)
    first = telling_first(raised.value.errors(), body, Sections)[0]
    assert first["msg"] == "Extra inputs are not permitted"


def test_a_field_like_none_of_the_models_keeps_pydantics_words() -> None:
    body = {"target": {"model": "m", "zzz": 1}}
    with pytest.raises(ValidationError) as raised:
        Sections.model_validate(body)
    assert telling_first(raised.value.errors(), body, Sections)[0]["msg"] == (
        "Extra inputs are not permitted"
    )


def test_fields_at_follows_unions_and_lists() -> None:
    from app.kit.errors import fields_at

    assert fields_at(Sections, ()) == {"target", "categories"}
    assert fields_at(Sections, ("target",)) == {"model", "system_prompt", "temperature"}
    assert fields_at(Sections, ("categories", 2, "verifier")) == {
        "type",
        "pattern",
        "model",
        "votes",
    }
    assert fields_at(Sections, ("nowhere", "x")) == set()


def test_a_request_bodys_misspelt_field_at_any_depth_is_named_with_the_one_meant() -> None:
    body = {"target": {"model": "m", "temprature": 0}, "categries": []}
    with pytest.raises(ValidationError) as raised:
        Sections.model_validate(body)
    # As FastAPI reports them: under `body`, beside a query parameter's error.
    errors = [{**error, "loc": ("body", *error["loc"])} for error in raised.value.errors()]
    errors.append({"loc": ("query", "limit"), "msg": "too big", "type": "less_than_equal"})
    details = request_error_details(errors, body, Sections)
    assert [(detail["loc"], detail["msg"]) for detail in details] == [
        (["body", "target", "temprature"], "unknown field; did you mean 'temperature'?"),
        (["body", "categries"], "unknown field; did you mean 'categories'?"),
        (["query", "limit"], "too big"),
    ]


def test_a_union_of_bodies_offers_the_fields_of_each() -> None:
    body = {"patern": "x"}
    errors = [{"loc": ("body", "patern"), "msg": "Extra inputs", "type": "extra_forbidden"}]
    (detail,) = request_error_details(errors, body, Contains | Judge)
    assert detail["msg"] == "unknown field; did you mean 'pattern'?"


@pytest.mark.parametrize("body", ["not json", [1, 2], None])
def test_a_body_that_is_no_object_keeps_its_locations(body: Any) -> None:
    errors = [{"loc": ("body", 3), "msg": "JSON decode error", "type": "json_invalid"}]
    [detail] = request_error_details(errors, body, Sections)
    assert (detail["loc"], detail["msg"], detail["type"]) == (
        ["body", 3],
        "JSON decode error",
        "json_invalid",
    )
    # The position is where parsing stopped, not a field.
    assert detail["field"] == ""
    assert detail["message"] == "not valid JSON at character 4"


def test_beside_the_part_validated_the_bodys_own_fields_may_be_meant() -> None:
    given = {"target": {"model": "m"}, "visibilty": "public"}
    with pytest.raises(ValidationError) as raised:
        Sections.model_validate(given)
    first = telling_first(raised.value.errors(), given, Sections, ["visibility", "title"])[0]
    assert (first["loc"], first["msg"]) == (
        ("visibilty",),
        "unknown field; did you mean 'visibility'?",
    )
    # Only at the top: the body's own fields are not those of its parts.
    nested = {"target": {"model": "m", "visibilty": "public"}}
    with pytest.raises(ValidationError) as raised:
        Sections.model_validate(nested)
    first = telling_first(raised.value.errors(), nested, Sections, ["visibility"])[0]
    assert first["msg"] == "Extra inputs are not permitted"

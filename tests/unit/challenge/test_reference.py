"""The rule that tells a challenge's id from its slug in a reference, and the slugs it keeps
out so that no reference means two challenges."""

from __future__ import annotations

import uuid

import pytest
from pydantic import TypeAdapter, ValidationError

from app.challenge.reference import ChallengeSlug, id_in_reference

ID = uuid.UUID("3f2b8a4e-5c1d-4e6f-9a7b-0c1d2e3f4a5b")
SLUGS = TypeAdapter(ChallengeSlug)


@pytest.mark.parametrize(
    "reference",
    [
        str(ID),
        str(ID).upper(),
        ID.hex,
        f"urn:uuid:{ID}",
        f"{{{ID}}}",
    ],
)
def test_a_reference_that_reads_as_a_uuid_is_an_id(reference: str) -> None:
    assert id_in_reference(reference) == ID


@pytest.mark.parametrize(
    "reference",
    [
        "say-pwned",
        "deadbeef",
        ID.hex[:31],  # one digit short
        ID.hex + "0",  # one digit more
        str(ID)[:-1] + "g",  # not hex
        "3f2b-8a4e-5c1d-4e6f-9a7b-0c1d-2e3f-4a5b",  # 32 hex digits, hyphens elsewhere
        "",
        "日本語",
    ],
)
def test_anything_else_is_a_slug(reference: str) -> None:
    assert id_in_reference(reference) is None


@pytest.mark.parametrize("slug", [str(ID), ID.hex, "0" * 32])
def test_a_slug_that_would_read_as_an_id_is_refused(slug: str) -> None:
    with pytest.raises(ValidationError, match="must not read as a UUID"):
        SLUGS.validate_python(slug)


@pytest.mark.parametrize(
    "slug", ["say-pwned", "3f2b-8a4e-5c1d-4e6f-9a7b-0c1d-2e3f-4a5b", ID.hex[:31], "a" * 64]
)
def test_other_slugs_are_kept(slug: str) -> None:
    assert SLUGS.validate_python(slug) == slug

"""The red_blue kind's pure parts: what readers see, the board's side, the length limits, the
public sections, and refusing attempts."""

from __future__ import annotations

import asyncio
import types
import uuid
from typing import Any

import pytest

from app.attempt import runner
from app.attempt.models import RunPurpose
from app.auth.subjects import SignedInParticipant, TenantAdmin, TenantMember
from app.challenge.challenge_kind import Accepts
from app.evaluation.engine.types import InfrastructureError
from app.kinds.red_blue import KIND
from app.kinds.red_blue.config import text_limit
from app.kinds.red_blue.models import Side
from app.kinds.red_blue.readers import PUBLIC_READER
from app.kinds.red_blue.schemas import OneOffMatch
from app.kinds.red_blue.service import board_side, reader_of
from app.kit.config import get_settings
from app.kit.errors import ValidationFailed

SECTIONS = {
    "target": {"model": "offline/guarded-echo", "api_base": None},
    "judge_suite": {
        "categories": [
            {"name": "pwned", "verifier": {"type": "contains", "pattern": "PWNED"}},
            {"name": "secret", "verifier": {"type": "regex", "pattern": "BAN+ANA"}},
        ]
    },
    "self_test": {"prompt": "Say hello", "verifier": {"type": "contains", "pattern": "hello"}},
}


def test_readers_see_texts_by_who_they_are() -> None:
    tenant, me, other = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    admin = reader_of(TenantAdmin(tenant, uuid.uuid4()))
    member = reader_of(TenantMember(tenant, uuid.uuid4()))
    signed_in = reader_of(SignedInParticipant(tenant, me, "me"))
    assert admin.admin and admin.sees_texts_of(other)
    assert not member.admin and member.sees_texts_of(other)
    assert signed_in.sees_texts_of(me) and signed_in.sees_texts_of(other, me)
    assert not signed_in.sees_texts_of(other) and not signed_in.admin
    assert not PUBLIC_READER.sees_texts_of(me)


@pytest.mark.parametrize("params", [{}, {"side": "green"}, {"side": "RED"}])
def test_the_board_side_is_required_and_named(params: dict[str, str]) -> None:
    with pytest.raises(ValidationFailed) as raised:
        board_side(params)
    assert raised.value.details[0]["loc"] == ["query", "side"]


def test_the_board_side_is_red_or_blue() -> None:
    assert board_side({"side": "red"}) is Side.RED
    assert board_side({"side": "blue", "limit": "5"}) is Side.BLUE


def test_the_length_limit_never_exceeds_the_servers() -> None:
    assert text_limit(None, 1000) == 1000
    assert text_limit(50, 1000) == 50
    assert text_limit(5000, 1000) == 1000


def test_participants_see_no_pattern_and_no_server() -> None:
    config = KIND.parse(SECTIONS)
    shown = KIND.public_sections(config)
    assert shown["judge_suite"] == {
        "categories": [
            {"name": "pwned", "verifier": {"type": "contains"}},
            {"name": "secret", "verifier": {"type": "regex"}},
        ]
    }
    assert shown["self_test"] == {"prompt": "Say hello", "verifier": {"type": "contains"}}
    assert "api_base" not in shown["target"]
    assert "PWNED" not in str(shown) and "hello" not in str(shown["self_test"]["verifier"])


def test_unknown_verifier_and_policy_name_the_field() -> None:
    bad = {**SECTIONS, "pairing": {"policy": "swiss"}}
    with pytest.raises(ValidationFailed, match=r"pairing\.policy"):
        KIND.parse(bad)
    suite = {"categories": [{"name": "x", "verifier": {"type": "telepathy"}}]}
    with pytest.raises(ValidationFailed, match=r"judge_suite\.categories\.0\.verifier"):
        KIND.parse({**SECTIONS, "judge_suite": suite})


def test_an_attempt_that_reaches_a_worker_anyway_ends_in_error_saying_why() -> None:
    # The core refuses every attempt of a kind that takes none; a row written by other means
    # must end as an error with a reason, not as an internal failure.
    job: Any = types.SimpleNamespace(kind="red_blue", purpose=RunPurpose.ENTRY)
    with pytest.raises(InfrastructureError, match="a red_blue challenge takes no attempts"):
        asyncio.run(runner._execute(job, uuid.uuid4(), get_settings()))


def test_red_blue_takes_entries_of_its_own_and_no_attempts() -> None:
    assert KIND.accepts is Accepts.ENTRIES and not KIND.accepts.attempts
    challenge_id = uuid.uuid4()
    hint = KIND.entries_hint(challenge_id)
    assert f"/v1/challenges/{challenge_id}/defenses" in hint
    assert f"/v1/challenges/{challenge_id}/attacks" in hint
    # It implements no attempt method only to refuse it; its run is its unscored runs' (a
    # one-off match of an attack against a defense).
    assert "submission" not in vars(type(KIND))
    assert KIND.unscored_model is OneOffMatch and "run" in vars(type(KIND))

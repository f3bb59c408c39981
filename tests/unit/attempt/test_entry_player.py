"""Whose entry a submission makes: a team member's goes to the team, a team's own name submits
nothing, a participant alone plays as themself."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from app.attempt.repository import SubmissionTarget
from app.attempt.service import Player, entry_player, shown_handle
from app.challenge.config import ChallengeState, LimitsConfig
from app.errors import ValidationFailed

TENANT = uuid.uuid4()


class NoSession:
    """A session no statement may reach: the handle's participant is known already."""

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"the session was used ({name})")


def target(**participant: Any) -> SubmissionTarget:
    return SubmissionTarget(
        challenge_id=uuid.uuid4(),
        kind="prompt",
        limits=LimitsConfig(max_team_size=3),
        state=ChallengeState.LIVE,
        opens_at=None,
        closes_at=None,
        **participant,
    )


def test_a_member_s_entry_is_the_team_s_and_keeps_who_submitted_it() -> None:
    member, team = uuid.uuid4(), uuid.uuid4()
    found = target(participant_id=member, participant_handle="Ann", team_id=team, team_name="squad")
    player = entry_player(NoSession(), TENANT, found, "ann")  # type: ignore[arg-type]
    assert player == Player(team, "squad", member)
    assert shown_handle(found, "ann") == "squad"


def test_a_participant_alone_plays_as_themself() -> None:
    alone = uuid.uuid4()
    found = target(participant_id=alone, participant_handle="Bob")
    player = entry_player(NoSession(), TENANT, found, "bob")  # type: ignore[arg-type]
    assert player == Player(alone, "Bob", None)
    assert shown_handle(found, "bob") == "Bob"


def test_a_team_s_own_name_is_refused_naming_the_field() -> None:
    found = target(
        participant_id=uuid.uuid4(), participant_handle="squad", participant_is_team=True
    )
    with pytest.raises(ValidationFailed) as refused:
        entry_player(NoSession(), TENANT, found, "squad")  # type: ignore[arg-type]
    assert refused.value.details[0]["loc"] == ["body", "participant"]
    assert "squad is a team" in refused.value.message


def test_limits_allow_no_teams_unless_they_say_how_large() -> None:
    assert LimitsConfig().max_team_size is None
    assert LimitsConfig().team_joins_after_first_entry is False
    with pytest.raises(ValueError, match="max_team_size"):
        LimitsConfig(max_team_size=1)

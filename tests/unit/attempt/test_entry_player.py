"""Whose entry a submission makes: a team member's goes to the team, a team's own name submits
nothing, a participant alone plays as themself."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from app.attempt import service
from app.attempt.repository import SubmissionTarget
from app.attempt.service import Player, entry_player, shown_handle
from app.challenge.config import ChallengeState, LimitsConfig
from app.kit.errors import ValidationFailed

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


def member_of(
    monkeypatch: pytest.MonkeyPatch, team_exists: bool, team_of_member: uuid.UUID | None
) -> list[uuid.UUID]:
    """The team's row as the lock finds it, and the member's team once it is held; returns the
    rows locked."""
    locked: list[uuid.UUID] = []

    def lock(session: object, tenant_id: uuid.UUID, participant_id: uuid.UUID) -> bool:
        locked.append(participant_id)
        return team_exists

    def player(
        session: object, tenant_id: uuid.UUID, challenge_id: uuid.UUID, member: uuid.UUID
    ) -> uuid.UUID:
        return team_of_member or member

    monkeypatch.setattr(service, "lock_participant", lock)
    monkeypatch.setattr(service, "player_id", player)
    return locked


def test_a_member_s_entry_is_the_team_s_and_keeps_who_submitted_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    member, team = uuid.uuid4(), uuid.uuid4()
    locked = member_of(monkeypatch, team_exists=True, team_of_member=team)
    found = target(participant_id=member, participant_handle="Ann", team_id=team, team_name="squad")
    player = entry_player(NoSession(), TENANT, found, "ann")  # type: ignore[arg-type]
    assert player == Player(team, "squad", member)
    assert locked == [team]
    assert shown_handle(found, "ann") == "squad"


@pytest.mark.parametrize("team_exists", [True, False])
def test_a_member_who_left_before_the_team_was_held_plays_alone(
    monkeypatch: pytest.MonkeyPatch, team_exists: bool
) -> None:
    member, team = uuid.uuid4(), uuid.uuid4()
    member_of(monkeypatch, team_exists=team_exists, team_of_member=None)
    found = target(participant_id=member, participant_handle="Ann", team_id=team, team_name="squad")
    player = entry_player(NoSession(), TENANT, found, "ann")  # type: ignore[arg-type]
    assert player == Player(member, "Ann", None)


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

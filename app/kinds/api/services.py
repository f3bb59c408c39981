"""What a kind may ask of the core's domains: functions that take a session (or a unit of
work) and the tenant, and answer in the surface's types. A kind reads and changes the core's
rows through these, never through the core's repositories."""

from __future__ import annotations

from app.attempt.service import (
    entry_player,
    find_attempt,
    shown_handle,
    shown_submitter,
    submission_target,
)
from app.attempt.service import runs as attempt_runs
from app.challenge.limits import Left, left_under, refuse_when_none_left
from app.challenge.service import (
    challenge_status,
    config_of,
    get_challenge,
    public_challenge,
    refuse_unless_open,
    sealed_shown,
    to_public_view,
)
from app.competition.service import refuse_unless_accepted
from app.kit.observability.metrics import redblue_recomputed
from app.leaderboard.freeze import Seen, before_board_write, frozen_since, read_as_seen
from app.team.service import member_handles, player_id, players_at, team_of
from app.tenant.quotas import count_entry, give_back_entry
from app.tenant.service import (
    EntryNames,
    as_subject,
    entry_names,
    handle_of,
    handles,
    lock_participant,
    participant_by_handle,
)

__all__ = [
    "EntryNames",
    "Left",
    "Seen",
    "as_subject",
    "attempt_runs",
    "before_board_write",
    "challenge_status",
    "config_of",
    "count_entry",
    "entry_names",
    "entry_player",
    "find_attempt",
    "frozen_since",
    "get_challenge",
    "give_back_entry",
    "handle_of",
    "handles",
    "left_under",
    "lock_participant",
    "member_handles",
    "participant_by_handle",
    "player_id",
    "players_at",
    "public_challenge",
    "read_as_seen",
    "redblue_recomputed",
    "refuse_unless_accepted",
    "refuse_unless_open",
    "refuse_when_none_left",
    "sealed_shown",
    "shown_handle",
    "shown_submitter",
    "submission_target",
    "team_of",
    "to_public_view",
]

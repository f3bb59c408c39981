"""The boards: both sides' leaderboards and the standings, live or as frozen."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import TypeVar

from sqlalchemy.orm import Session

from app.kinds.api import (
    Audience,
    SignedInParticipant,
    TenantKey,
    ValidationFailed,
)
from app.kinds.api.services import (
    Seen,
    get_challenge,
    member_handles,
    read_as_seen,
)
from app.kinds.api.storage import BoardFreeze, Challenge
from app.kinds.red_blue import final_round
from app.kinds.red_blue.models import Side
from app.kinds.red_blue.repository import BoardLine, RedBlueRepository
from app.kinds.red_blue.schemas import (
    BoardItem,
    FinalRoundRead,
    RedBlueLeaderboard,
    Standings,
)
from app.kinds.red_blue.service.access import BOARD_SIDES, _red_blue_challenge

# Boards -------------------------------------------------------------------------------------


def board_side(params: Mapping[str, str]) -> Side:
    """The `side` query parameter of a red_blue leaderboard: required, red or blue."""
    value = params.get("side")
    if value is None or value not in {side.value for side in Side}:
        problem = "is required" if value is None else f"must be {BOARD_SIDES}, not {value!r}"
        raise ValidationFailed(
            f"side: {problem} (a red_blue challenge has a red and a blue leaderboard)",
            details=[{"loc": ["query", "side"], "msg": problem, "type": "value_error"}],
        )
    return Side(value)


def _teams_on(
    session: Session, tenant_id: uuid.UUID, rows: Sequence[tuple[BoardLine, bool]]
) -> Mapping[uuid.UUID, list[str]]:
    """The members of the rows' teams (one query a page)."""
    ids = [line.participant_id for line, _ in rows if line.participant_id is not None]
    return member_handles(session, tenant_id, ids)


def board_item(
    line: BoardLine, tied: bool, teams: Mapping[uuid.UUID, list[str]] | None = None
) -> BoardItem:
    members = (
        None if teams is None or line.participant_id is None else teams.get(line.participant_id)
    )
    return BoardItem(
        rank=line.rank,
        tied=tied,
        participant=line.handle,
        members=members,
        baseline=line.baseline,
        rating=round(line.rating, 1),
        rating_low=None if line.rating_low is None else round(line.rating_low, 1),
        rating_high=None if line.rating_high is None else round(line.rating_high, 1),
        points=line.points,
        matches=line.matches,
        wins=line.wins,
    )


Board = TypeVar("Board", RedBlueLeaderboard, Standings)
T = TypeVar("T")


def _seen(
    session: Session,
    challenge: Challenge,
    audience: Audience,
    read: Callable[[BoardFreeze | None], T],
) -> tuple[Seen[T], FinalRoundRead | None]:
    """A board as the audience sees it (frozen for non-admins in a freeze, which a final
    round keeps past the close until the boards are final), and the final round's state."""
    round_state = final_round.state_of(session, challenge)
    seen = read_as_seen(session, challenge, audience, read, held=final_round.holds(round_state))
    return seen, round_state


def _as_seen(
    session: Session,
    challenge: Challenge,
    audience: Audience,
    read: Callable[[BoardFreeze | None], Board],
) -> Board:
    """A board or the standings as the audience sees them, saying whether frozen, with the
    final round's state. Frozen, the round says its phase but not its count of matches:
    which pairs it plays depends on the entries made after the freeze."""
    seen, round_state = _seen(session, challenge, audience, read)
    if seen.frozen and round_state is not None:
        round_state = round_state.model_copy(update={"matches_played": None, "matches_total": None})
    return seen.board.model_copy(
        update={"frozen": seen.frozen, "frozen_at": seen.frozen_at, "final_round": round_state}
    )


def read_leaderboard(
    session: Session,
    challenge: Challenge,
    side: Side,
    audience: Audience,
    *,
    limit: int,
    offset: int,
) -> RedBlueLeaderboard:
    """A page of one side's board, as the last recompute stored it (for non-admins in a
    freeze: as it stood when the freeze began)."""
    repo = RedBlueRepository(session, challenge.tenant_id)

    def read(snapshot: BoardFreeze | None) -> RedBlueLeaderboard:
        rows, total = board_page_with_ties(
            repo, challenge.id, side, limit=limit, offset=offset, frozen=snapshot is not None
        )
        teams = _teams_on(session, challenge.tenant_id, rows)
        if snapshot is not None:
            computed_at = _figure_time(snapshot, "computed_at")
            intervals_computed_at = _figure_time(snapshot, "intervals_computed_at")
        else:
            board = repo.board(challenge.id)
            computed_at = board.computed_at if board is not None else None
            intervals_computed_at = board.intervals_computed_at if board is not None else None
        return RedBlueLeaderboard(
            challenge_id=challenge.id,
            side=side,
            items=[board_item(line, tied, teams) for line, tied in rows],
            total=total,
            limit=limit,
            offset=offset,
            computed_at=computed_at,
            intervals_computed_at=intervals_computed_at,
        )

    return _as_seen(session, challenge, audience, read)


def board_page_with_ties(
    repo: RedBlueRepository,
    challenge_id: uuid.UUID,
    side: Side,
    *,
    limit: int,
    offset: int,
    frozen: bool = False,
) -> tuple[list[tuple[BoardLine, bool]], int]:
    """A page of one side's board, each row with whether another participant's row shares
    its rank (their intervals overlap: ranks count only the rows entirely above; a baseline
    shares no one's). A shared rank's rows are neighbours in the board's order, but for the
    baselines between them, so the participants' rows just before and after tell (those of
    the page, and the row on either side of it)."""
    start = max(offset - 1, 0)
    lines, total = repo.ratings_page(
        challenge_id, side, limit=limit + 1 + offset - start, offset=start, frozen=frozen
    )
    # The participants' rows' ranks by index, baselines left out.
    ranked = [(index, line.rank) for index, line in enumerate(lines) if not line.baseline]
    place = {index: number for number, (index, _) in enumerate(ranked)}
    first = offset - start
    rows = []
    for index in range(first, min(first + limit, len(lines))):
        line = lines[index]
        number = place.get(index)
        tied = number is not None and any(
            0 <= other < len(ranked) and ranked[other][1] == line.rank
            for other in (number - 1, number + 1)
        )
        rows.append((line, tied))
    return rows, total


def _live_standings(session: Session, challenge: Challenge) -> Standings:
    board = RedBlueRepository(session, challenge.tenant_id).board(challenge.id)
    if board is None:
        return Standings(
            challenge_id=challenge.id,
            red_points=0,
            blue_points=0,
            red_share=None,
            matches=0,
            computed_at=None,
            pending=False,
        )
    total = board.red_points + board.blue_points
    return Standings(
        challenge_id=challenge.id,
        red_points=board.red_points,
        blue_points=board.blue_points,
        red_share=board.red_points / total if total else None,
        matches=board.matches,
        computed_at=board.computed_at,
        pending=board.dirty or board.rated_seq < board.landed_seq,
    )


def _figure_time(snapshot: BoardFreeze, name: str) -> datetime | None:
    """A time the snapshot kept of the board (`copy_to_frozen`)."""
    value = (snapshot.figures or {}).get(name)
    return None if value is None else datetime.fromisoformat(value)


def _frozen_standings(challenge: Challenge, snapshot: BoardFreeze) -> Standings:
    """The standings the snapshot kept (`copy_to_frozen`)."""
    figures = snapshot.figures or {}
    red, blue = int(figures.get("red_points", 0)), int(figures.get("blue_points", 0))
    return Standings(
        challenge_id=challenge.id,
        red_points=red,
        blue_points=blue,
        red_share=red / (red + blue) if red + blue else None,
        matches=int(figures.get("matches", 0)),
        computed_at=_figure_time(snapshot, "computed_at"),
        pending=False,
    )


def _standings(session: Session, challenge: Challenge, audience: Audience) -> Standings:
    """The team standings as the audience sees them (frozen for non-admins in a freeze)."""

    def read(snapshot: BoardFreeze | None) -> Standings:
        if snapshot is None:
            return _live_standings(session, challenge)
        return _frozen_standings(challenge, snapshot)

    standings = _as_seen(session, challenge, audience, read)
    # Frozen without a copy yet (no board written since the freeze): matches may have landed
    # since, which the live board's `pending` would tell.
    return standings.model_copy(update={"pending": False}) if standings.frozen else standings


def read_standings(
    session: Session, subject: TenantKey | SignedInParticipant, challenge_id: uuid.UUID
) -> Standings:
    challenge = _red_blue_challenge(get_challenge(session, subject.tenant_id, challenge_id))
    return _standings(session, challenge, subject.audience)


def challenge_standings(session: Session, challenge: Challenge, audience: Audience) -> Standings:
    """The standings of a challenge its caller may already see (the web pages, which check
    the visitor's access to the challenge first)."""
    return _standings(session, _red_blue_challenge(challenge), audience)

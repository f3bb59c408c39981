"""Leaderboards: the row an attempt would have, and pages of them. The leaderboard knows
attempts only by their metrics and score (`RankedAttempt`), never as rows of another domain."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from sqlalchemy.orm import Session

from app.auth.subjects import Audience
from app.challenge.models import Challenge
from app.leaderboard.freeze import BoardCopy, before_board_write, read_as_seen
from app.leaderboard.models import ENTRY_MEASURES, BoardFreeze, LeaderboardEntry
from app.leaderboard.ranking import PlacedAttempt, RankedAttempt, placed
from app.leaderboard.repository import AnyEntry, LeaderboardRepository, place_of
from app.leaderboard.schemas import Leaderboard, LeaderboardItem
from app.scoring.strategies import Strategy
from app.team.service import member_handles


def offer(session: Session, attempt: RankedAttempt, strategy: Strategy) -> None:
    """Puts the attempt on the leaderboard if it ranks and beats its participant's row."""
    entry = placed(strategy, attempt)
    if entry is not None:
        tenant_id = attempt.tenant_id
        before_board_write(session, tenant_id, attempt.challenge_id, _frozen_copy(tenant_id))
        LeaderboardRepository(session, tenant_id).offer(entry)


def _frozen_copy(tenant_id: uuid.UUID) -> BoardCopy:
    """Copies the leaderboard of a challenge of the tenant into its frozen copy (its snapshot
    keeps nothing besides the rows)."""

    def copy(session: Session, challenge_id: uuid.UUID) -> None:
        LeaderboardRepository(session, tenant_id).copy_to_frozen(challenge_id)

    return copy


def rebuild(
    session: Session,
    tenant_id: uuid.UUID,
    challenge_id: uuid.UUID,
    entries: Sequence[PlacedAttempt],
) -> None:
    """Replaces the leaderboard of the tenant's challenge with these rows (in the caller's
    transaction, so readers see the old leaderboard or the new one, never half of either). In
    a freeze, the frozen board stays what it was."""
    before_board_write(session, tenant_id, challenge_id, _frozen_copy(tenant_id))
    board = LeaderboardRepository(session, tenant_id)
    board.clear(challenge_id)
    for entry in entries:
        board.offer(entry)


def item_of(
    entry: AnyEntry, handle: str, *, rank: int, members: list[str] | None = None
) -> LeaderboardItem:
    return LeaderboardItem(
        rank=rank,
        participant=handle,
        members=members,
        baseline=entry.baseline,
        attempt_id=entry.attempt_id,
        created_at=entry.attempt_created_at,
        score=entry.score,
        **{name: getattr(entry, name) for name in ENTRY_MEASURES},
    )


def read_leaderboard(
    session: Session, challenge: Challenge, audience: Audience, *, limit: int, offset: int
) -> Leaderboard:
    """A page of the leaderboard as the audience sees it (frozen for non-admins in a
    freeze)."""
    board = LeaderboardRepository(session, challenge.tenant_id)

    def read(snapshot: BoardFreeze | None) -> tuple[list[LeaderboardItem], int]:
        frozen = snapshot is not None
        rows, total = board.page(challenge.id, limit=limit, offset=offset, frozen=frozen)
        before = 0
        if rows and offset:
            # The first page has no row before it to ask about.
            place = place_of(rows[0][0])
            before = board.baselines_before(challenge.id, place, frozen=frozen)
        teams = _teams_of(session, challenge.tenant_id, rows)
        return ranked_items(rows, offset - before, teams)[0], total

    seen = read_as_seen(session, challenge, audience, read)
    items, total = seen.board
    return Leaderboard(
        challenge_id=challenge.id,
        strategy=challenge.strategy,
        items=items,
        total=total,
        limit=limit,
        offset=offset,
        frozen=seen.frozen,
        frozen_at=seen.frozen_at,
    )


def _teams_of(
    session: Session, tenant_id: uuid.UUID, rows: Sequence[tuple[AnyEntry, str]]
) -> Mapping[uuid.UUID, list[str]]:
    """The members of the rows' teams (one query a page)."""
    return member_handles(session, tenant_id, [entry.participant_id for entry, _ in rows])


def ranked_items(
    rows: Sequence[tuple[AnyEntry, str]],
    ranked_before: int,
    teams: Mapping[uuid.UUID, list[str]] | None = None,
) -> tuple[list[LeaderboardItem], int]:
    """Rows in the board's order as items, after `ranked_before` participants' rows: each
    participant takes the next rank; a baseline is ranked where it would place (the rank of
    the participant after it) and takes none. A team's row lists its members (`teams`).
    Returns the participants ranked after them."""
    items = []
    teams = teams or {}
    for entry, handle in rows:
        members = teams.get(entry.participant_id)
        if entry.baseline:
            items.append(item_of(entry, handle, rank=ranked_before + 1, members=members))
        else:
            ranked_before += 1
            items.append(item_of(entry, handle, rank=ranked_before, members=members))
    return items, ranked_before


# The participants ranked so far and the place in the order of the last row of a batch: the
# next batch goes on from it.
BoardCursor = tuple[int, float, float, int, uuid.UUID]


def leaderboard_in_order(
    session: Session,
    tenant_id: uuid.UUID,
    challenge_id: uuid.UUID,
    *,
    after: BoardCursor | None,
    limit: int,
) -> tuple[list[LeaderboardItem], BoardCursor | None]:
    """Up to `limit` rows of the live leaderboard after the cursor, best first, ranked as its
    pages are (the exports, for admins), and the cursor of the last."""
    rows = LeaderboardRepository(session, tenant_id).entries_after(
        challenge_id, None if after is None else after[1:], limit
    )
    teams = _teams_of(session, tenant_id, rows)
    items, ranked = ranked_items(rows, 0 if after is None else after[0], teams)
    if not rows:
        return items, None
    return items, (ranked, *place_of(rows[-1][0]))


@dataclass(frozen=True)
class Standing:
    """A participant's row on a leaderboard and its rank."""

    entry: LeaderboardEntry
    rank: int


def standings(
    session: Session,
    tenant_id: uuid.UUID,
    participant_id: uuid.UUID,
    challenge_ids: Sequence[uuid.UUID],
) -> dict[uuid.UUID, Standing]:
    """Where the participant stands on each of these challenges' leaderboards (those they
    are on), by challenge."""
    board = LeaderboardRepository(session, tenant_id)
    entries = board.best_entries(participant_id, challenge_ids)
    return {
        challenge_id: Standing(entry, board.rank_of(entry))
        for challenge_id, entry in entries.items()
    }

"""Exports (tenant keys): a challenge's boards, entries and matches in order, a batch after a
cursor, as the reader sees them."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy.orm import Session

from app.kinds.api import (
    TenantKey,
)
from app.kinds.api.services import (
    entry_names,
    get_challenge,
)
from app.kinds.api.storage import BoardFreeze
from app.kinds.red_blue.models import Attack, Defense, Match, Side
from app.kinds.red_blue.readers import Reader
from app.kinds.red_blue.repository import RedBlueRepository
from app.kinds.red_blue.schemas import (
    AttackRead,
    DefenseRead,
    MatchRead,
    SideBoardItem,
)
from app.kinds.red_blue.service.access import reader_for
from app.kinds.red_blue.service.boards import _seen, _teams_on, board_item, board_page_with_ties
from app.kinds.red_blue.service.entries import attack_view, defense_view
from app.kinds.red_blue.service.matches import _entrant, _named, match_view

# Exports (tenant keys): a challenge's boards, entries and matches in order, a batch after a
# cursor, as the reader sees them ------------------------------------------------------------

CreatedCursor = tuple[datetime, uuid.UUID]
# A side's index in `Side` (red, then blue) and the last position read on it.
BoardCursor = tuple[int, int]
SIDES = tuple(Side)


def _created_cursor(rows: list[Any]) -> CreatedCursor | None:
    return (rows[-1].created_at, rows[-1].id) if rows else None


def _export_reader(session: Session, key: TenantKey, challenge_id: uuid.UUID) -> Reader:
    """What an export shows the key: what its reads by id show it (its admins: all, live)."""
    return reader_for(session, get_challenge(session, key.tenant_id, challenge_id), key)


def defenses_in_order(
    session: Session,
    reader: TenantKey,
    challenge_id: uuid.UUID,
    *,
    after: CreatedCursor | None,
    limit: int,
) -> tuple[list[DefenseRead], CreatedCursor | None]:
    """Up to `limit` defenses after the cursor, oldest first, each as `GET /v1/defenses/{id}`
    answers it (its match counts included)."""
    repo = RedBlueRepository(session, reader.tenant_id)
    view = _export_reader(session, reader, challenge_id)
    rows: list[Defense] = repo.in_created_order(Defense, challenge_id, after, limit, view)
    names = entry_names(session, reader.tenant_id, [_entrant(d) for d in rows])
    counts = repo.match_counts_of(Match.defense_id, [d.id for d in rows], view)
    items = [defense_view(d, names, view, counts[d.id]) for d in rows]
    return items, _created_cursor(rows)


def attacks_in_order(
    session: Session,
    reader: TenantKey,
    challenge_id: uuid.UUID,
    *,
    after: CreatedCursor | None,
    limit: int,
) -> tuple[list[AttackRead], CreatedCursor | None]:
    """Up to `limit` attacks after the cursor, oldest first, each as `GET /v1/attacks/{id}`
    answers it."""
    repo = RedBlueRepository(session, reader.tenant_id)
    view = _export_reader(session, reader, challenge_id)
    rows: list[Attack] = repo.in_created_order(Attack, challenge_id, after, limit, view)
    names = entry_names(session, reader.tenant_id, [_entrant(a) for a in rows])
    counts = repo.match_counts_of(Match.attack_id, [a.id for a in rows], view)
    items = [attack_view(a, names, view, counts[a.id]) for a in rows]
    return items, _created_cursor(rows)


def matches_in_order(
    session: Session,
    reader: TenantKey,
    challenge_id: uuid.UUID,
    *,
    after: CreatedCursor | None,
    limit: int,
) -> tuple[list[MatchRead], CreatedCursor | None]:
    """Up to `limit` matches after the cursor, oldest first, each as `GET /v1/matches/{id}`
    answers the reader (texts and verdicts by `Reader`)."""
    repo = RedBlueRepository(session, reader.tenant_id)
    view = _export_reader(session, reader, challenge_id)
    rows: list[Match] = repo.in_created_order(Match, challenge_id, after, limit, view)
    named = _named(session, reader.tenant_id, rows)
    return [match_view(m, named, view) for m in rows], _created_cursor(rows)


def boards_in_order(
    session: Session,
    reader: TenantKey,
    challenge_id: uuid.UUID,
    *,
    after: BoardCursor | None,
    limit: int,
) -> tuple[list[SideBoardItem], BoardCursor | None]:
    """Up to `limit` rows of the red board, then of the blue one, after the cursor, as
    their pages show them to the key (its admins: live, in a freeze too); and the cursor of
    the last."""
    repo = RedBlueRepository(session, reader.tenant_id)
    challenge = get_challenge(session, reader.tenant_id, challenge_id)

    def read(snapshot: BoardFreeze | None) -> tuple[list[SideBoardItem], BoardCursor | None]:
        side_index, position = after if after is not None else (0, 0)
        items: list[SideBoardItem] = []
        last: BoardCursor | None = None
        while side_index < len(SIDES) and len(items) < limit:
            side = SIDES[side_index]
            lines, _ = board_page_with_ties(
                repo,
                challenge_id,
                side,
                limit=limit - len(items),
                offset=position,
                frozen=snapshot is not None,
            )
            teams = _teams_on(session, reader.tenant_id, lines)
            items.extend(
                SideBoardItem(**dict(board_item(line, tied, teams)), side=side)
                for line, tied in lines
            )
            if lines:
                # A side's positions are 1..n with no gap: the k-th row after p is at p + k.
                position += len(lines)
                last = (side_index, position)
            if len(items) < limit:
                side_index, position = side_index + 1, 0
        return items, last

    return _seen(session, challenge, reader.audience, read)[0].board

"""Board freezes: from a challenge's `freeze_at` until its close, every public board of it (a
leaderboard, a red-blue board and its standings) shows what it showed at `freeze_at`; the
challenge's admins see the live board, and at the close everyone does again.

How: the first write to any of the challenge's boards at or after `freeze_at` first copies
the boards as they stand into their frozen tables (`BoardFreeze` and each board's frozen
copy), in the writer's transaction; later writes change the live board only. Readers in the
freeze take the copy when there is one, else the live board, which no write has changed since
`freeze_at` (the copy is taken before the first such write, in its transaction). So nothing
runs at `freeze_at` itself (no schedule to miss, no worker to be up then), reads never write,
and the frozen board is exactly the one shown at `freeze_at`, whatever kind of board it is
and however it is computed (the red-blue ratings are not derivable from the matches of a
moment without their recompute). A snapshot belongs to one `freeze_at`: moving the freeze
makes it stale, and the next write in the new freeze takes another.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, TypeVar

from sqlalchemy.orm import Session

from app.auth.subjects import Audience
from app.challenge.models import Challenge
from app.kit.db import utcnow
from app.leaderboard.models import BoardFreeze
from app.leaderboard.repository import BoardFreezeRepository

T = TypeVar("T")

# Copies a challenge's live board into its frozen table (replacing what a stale snapshot left
# there) and returns what the board shows besides its rows, kept with the snapshot (or None).
BoardCopy = Callable[[Session, uuid.UUID], dict[str, Any] | None]


def frozen_since(
    challenge: Challenge, now: datetime | None = None, *, held: bool = False
) -> datetime | None:
    """The challenge's `freeze_at` while its public boards are frozen (from then until the
    close, or past it while `held`), else None."""
    return frozen_at(challenge.freeze_at, challenge.closes_at, now or utcnow(), held=held)


def frozen_at(
    freeze_at: datetime | None, closes_at: datetime | None, now: datetime, *, held: bool = False
) -> datetime | None:
    """`held`: the board's kind keeps a freeze that had begun past the close, until its final
    board is ready (a red-blue final round, app/kinds/red_blue/final_round.py)."""
    if freeze_at is None or now < freeze_at:
        return None
    if closes_at is not None and now >= closes_at and not held:
        return None
    return freeze_at


def before_board_write(
    session: Session,
    tenant_id: uuid.UUID,
    challenge_id: uuid.UUID,
    copy: BoardCopy,
    *,
    held: bool = False,
) -> None:
    """Call in the transaction that writes the board of the tenant's challenge, before
    writing: in a freeze (`held`: or past the close, while the kind holds it) whose snapshot
    is not taken yet, takes it (once, whichever writer gets there first: the others wait for
    its commit and find it taken)."""
    now = utcnow()
    freezes = BoardFreezeRepository(session, tenant_id)
    schedule = freezes.schedule(challenge_id)
    if schedule is None:
        return
    freeze_at, closes_at, taken_for = schedule
    if frozen_at(freeze_at, closes_at, now, held=held) is None or taken_for == freeze_at:
        return
    assert freeze_at is not None
    if freezes.claim(challenge_id, freeze_at, now):
        figures = copy(session, challenge_id)
        if figures is not None:
            freezes.keep_figures(challenge_id, figures)


@dataclass(frozen=True)
class Seen(Generic[T]):
    """A board as one reader sees it: `frozen` when it is the board as it stood at
    `frozen_at` (a non-admin in a freeze); `frozen_at` is set in a freeze for every reader (an
    admin's `frozen` is false: the live board)."""

    board: T
    frozen: bool
    frozen_at: datetime | None


def read_as_seen(
    session: Session,
    challenge: Challenge,
    audience: Audience,
    read: Callable[[BoardFreeze | None], T],
    *,
    held: bool = False,
) -> Seen[T]:
    """The board as the audience sees it: `read(snapshot)` reads the frozen copy (with what
    the snapshot keeps besides its rows), `read(None)` the live board. `held`: the kind keeps
    the freeze past the close (`frozen_at`)."""
    frozen_at = frozen_since(challenge, held=held)
    if frozen_at is None or audience is Audience.ADMIN:
        return Seen(read(None), False, frozen_at)
    freezes = BoardFreezeRepository(session, challenge.tenant_id)
    snapshot = freezes.snapshot(challenge.id, frozen_at)
    if snapshot is not None:
        return Seen(read(snapshot), True, frozen_at)
    board = read(None)
    # A writer may have taken the snapshot and then changed the live board while it was read:
    # what was read is the frozen board only if there is still no snapshot afterwards.
    snapshot = freezes.snapshot(challenge.id, frozen_at)
    if snapshot is not None:
        return Seen(read(snapshot), True, frozen_at)
    return Seen(board, True, frozen_at)

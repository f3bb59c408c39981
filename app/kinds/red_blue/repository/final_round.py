"""A final round's state, read for one tenant: where its round stands and whether it keeps a
freeze (app/kinds/red_blue/final_round.py)."""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from app.kinds.api.storage import Challenge
from app.kinds.red_blue.models import Board, FinalRound, Match, MatchStatus
from app.kinds.red_blue.rules.final_round import HOLDS_FREEZE, phase_of


class FinalRoundRepository:
    def __init__(self, session: Session, tenant_id: uuid.UUID) -> None:
        self.session = session
        self.tenant_id = tenant_id

    def round_of(self, challenge_id: uuid.UUID) -> FinalRound | None:
        return self.session.scalar(
            select(FinalRound).where(
                FinalRound.tenant_id == self.tenant_id, FinalRound.challenge_id == challenge_id
            )
        )

    def match_counts(self, challenge_id: uuid.UUID) -> dict[MatchStatus, int]:
        """The challenge's final-round matches (of every round it had) by status
        (`ix_redblue_matches_final_round`)."""
        rows = self.session.execute(
            select(Match.status, func.count())
            .where(
                Match.tenant_id == self.tenant_id,
                Match.challenge_id == challenge_id,
                Match.final_round.is_(True),
            )
            .group_by(Match.status)
        ).tuples()
        return {MatchStatus(status): int(count) for status, count in rows}

    def board_rated_all(self, challenge_id: uuid.UUID) -> bool:
        """The board's ratings and intervals count every match landed on it (or it has
        none)."""
        row = self.session.execute(
            select(Board.dirty, Board.landed_seq, Board.rated_seq, Board.intervals_seq).where(
                Board.tenant_id == self.tenant_id, Board.challenge_id == challenge_id
            )
        ).first()
        if row is None:
            return True
        dirty, landed, rated, intervals = row
        return not dirty and rated >= landed and intervals >= landed

    def holds_freeze(self, challenge_id: uuid.UUID, now: datetime) -> bool:
        """Whether the challenge's final round keeps its freeze past the close now (a board
        write takes the freeze's snapshot then, if none was taken before the close)."""
        row = self.session.execute(
            select(
                Challenge.freeze_at,
                Challenge.closes_at,
                Challenge.kind_sections["final_round"].as_boolean(),
                FinalRound.closes_at,
                FinalRound.played_at,
            )
            .outerjoin(FinalRound, FinalRound.challenge_id == Challenge.id)
            .where(Challenge.tenant_id == self.tenant_id, Challenge.id == challenge_id)
        ).first()
        if row is None:
            return False
        freeze_at, closes_at, enabled, made_for, played_at = row
        if not enabled or freeze_at is None or closes_at is None or now < closes_at:
            return False
        phase = phase_of(
            closed=True,
            made=made_for == closes_at,
            played=played_at is not None,
            rated_all=self.board_rated_all(challenge_id),
        )
        return phase in HOLDS_FREEZE

"""A final round's statements on PostgreSQL and on SQLite (the embedded mode): which closed
challenges are due, the claim that makes a round once per close, its matches inserted in
batches without a pair twice, and what marks it played and holds a freeze."""

from __future__ import annotations

import dataclasses
import uuid
from datetime import datetime, timedelta

import pytest
from sqlalchemy import Engine, func, select
from sqlalchemy.orm import Session

from app.challenge.models import Challenge
from app.kinds.red_blue import cross_tenant
from app.kinds.red_blue.models import Attack, Defense, DefenseStatus, FinalRound, Match
from app.kinds.red_blue.repository import FinalRoundRepository
from app.kit.db import utcnow
from app.tenant.models import Participant, Tenant
from tests.integration.red_blue.test_redblue_match_result import engine  # noqa: F401  (a fixture)

pytestmark = pytest.mark.integration


def _challenge(session: Session, *, final_round: bool, closes_at: datetime) -> Challenge:
    tenant = Tenant(id=uuid.uuid4(), slug=f"t-{uuid.uuid4().hex[:10]}", name="t")
    session.add(tenant)
    session.flush()
    challenge = Challenge(
        id=uuid.uuid4(),
        tenant_id=tenant.id,
        slug="c",
        title="c",
        kind="red_blue",
        kind_sections={"target": {"model": "offline/guarded-echo"}, "final_round": final_round},
        scoring={"strategy": "first"},
        closes_at=closes_at,
        freeze_at=closes_at - timedelta(hours=1),
    )
    session.add(challenge)
    session.flush()
    return challenge


def _entries(session: Session, challenge: Challenge) -> tuple[Attack, Defense]:
    now = utcnow()
    red = Participant(id=uuid.uuid4(), tenant_id=challenge.tenant_id, handle=uuid.uuid4().hex)
    blue = Participant(id=uuid.uuid4(), tenant_id=challenge.tenant_id, handle=uuid.uuid4().hex)
    session.add_all([red, blue])
    session.flush()
    where = {"tenant_id": challenge.tenant_id, "challenge_id": challenge.id}
    attack = Attack(
        id=uuid.uuid4(), participant_id=red.id, prompt="hi", created_at=now, enqueued_at=now
    )
    defense = Defense(
        id=uuid.uuid4(),
        participant_id=blue.id,
        system_prompt="Never say: hi",
        status=DefenseStatus.ACTIVE,
        created_at=now,
        enqueued_at=now,
    )
    for entry in (attack, defense):
        for name, value in where.items():
            setattr(entry, name, value)
    session.add_all([attack, defense])
    session.flush()
    return attack, defense


def _new_match(attack: Attack, defense: Defense, now: datetime) -> cross_tenant.NewMatch:
    return cross_tenant.NewMatch(
        tenant_id=attack.tenant_id,
        challenge_id=attack.challenge_id,
        attack_id=attack.id,
        defense_id=defense.id,
        red_participant_id=attack.participant_id,
        blue_participant_id=defense.participant_id,
        created_at=now,
        final_round=True,
    )


def test_a_round_is_due_once_per_close_and_made_once(engine: Engine) -> None:  # noqa: F811
    now = utcnow()
    with Session(engine) as session:
        closed = _challenge(session, final_round=True, closes_at=now - timedelta(seconds=1))
        without = _challenge(session, final_round=False, closes_at=now - timedelta(seconds=1))
        still_open = _challenge(session, final_round=True, closes_at=now + timedelta(hours=1))
        deleted = _challenge(session, final_round=True, closes_at=now - timedelta(seconds=1))
        deleted.deleted_at = now
        session.flush()
        due = set(cross_tenant.final_rounds_due(session, now, 1000))
        assert closed.id in due
        assert without.id not in due and still_open.id not in due
        assert deleted.id not in due  # its round waits until it is restored

        assert closed.closes_at is not None
        made = cross_tenant.claim_final_round(
            session, closed.tenant_id, closed.id, closed.closes_at, now
        )
        again = cross_tenant.claim_final_round(
            session, closed.tenant_id, closed.id, closed.closes_at, now
        )
        assert (made, again) == (True, False)
        assert closed.id not in set(cross_tenant.final_rounds_due(session, now, 1000))
        # Opened again and closed later: a round for that close.
        later = closed.closes_at + timedelta(minutes=5)
        closed.closes_at = later
        session.flush()
        assert closed.id in set(cross_tenant.final_rounds_due(session, later, 1000))
        assert cross_tenant.claim_final_round(session, closed.tenant_id, closed.id, later, later)
        session.rollback()


def test_matches_go_in_batches_without_a_pair_twice_and_the_round_is_played(
    engine: Engine,  # noqa: F811
) -> None:
    now = utcnow()
    with Session(engine) as session:
        challenge = _challenge(session, final_round=True, closes_at=now - timedelta(seconds=1))
        assert challenge.closes_at is not None
        pairs = [_entries(session, challenge) for _ in range(3)]
        matches = [_new_match(attack, defense, now) for attack, defense in pairs]
        first = cross_tenant.insert_matches_in_batches(session, matches[:2], batch=1)
        assert len(first) == 2
        # The same pairs again (new ids) and one more: only the new pair goes in.
        again = [dataclasses.replace(match, id=uuid.uuid4()) for match in matches]
        assert len(cross_tenant.insert_matches_in_batches(session, again, batch=2)) == 1
        total = session.scalar(
            select(func.count()).select_from(Match).where(Match.challenge_id == challenge.id)
        )
        assert total == 3

        assert cross_tenant.claim_final_round(
            session, challenge.tenant_id, challenge.id, challenge.closes_at, now
        )
        # A freeze had begun: the round keeps it past the close until the boards are final.
        rounds = FinalRoundRepository(session, challenge.tenant_id)
        assert rounds.holds_freeze(challenge.id, now)
        assert rounds.match_counts(challenge.id) == {"queued": 3}
        unplayed = (challenge.id, challenge.tenant_id)
        assert unplayed in cross_tenant.unplayed_final_rounds(session, 1000)
        cross_tenant.mark_final_round_played(session, challenge.id, 3, now)
        played = session.get(FinalRound, challenge.id)
        assert played is not None
        session.refresh(played)
        assert played.played_at is not None and played.matches == 3
        assert unplayed not in cross_tenant.unplayed_final_rounds(session, 1000)
        # No board yet: nothing to rate, so the boards are final and the freeze is let go.
        assert rounds.board_rated_all(challenge.id)
        assert not rounds.holds_freeze(challenge.id, now)
        session.rollback()

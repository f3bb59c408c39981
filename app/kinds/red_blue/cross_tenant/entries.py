"""Worker-side statements on entries, by id from the queue whatever their tenant: a
challenge's row, a defense's self-test claimed under its lease, the entries a pairing reads,
and the locks that make pairings run one at a time."""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.kinds.api import leases
from app.kinds.api.storage import Challenge, take_write_lock
from app.kinds.red_blue.cross_tenant.rows import Entry, _dialect
from app.kinds.red_blue.models import SELF_TEST_LEASES, Attack, Defense, DefenseStatus


def get_challenge(session: Session, challenge_id: uuid.UUID) -> Challenge | None:
    """The challenge, unless it is gone or deleted (its work waits until it is restored)."""
    challenge = session.get(Challenge, challenge_id)
    return None if challenge is None or challenge.deleted_at is not None else challenge


def claim_defense(
    session: Session, defense_id: uuid.UUID, token: uuid.UUID, now: datetime, lease_until: datetime
) -> Defense | None:
    """Takes a pending defense whose self-test nobody holds (or whose holder's lease ran out)
    and reads it back; None when it is not pending or another worker holds it."""
    claimed = leases.claim(
        session,
        SELF_TEST_LEASES,
        [defense_id],
        token,
        now,
        lease_until,
        returning=[Defense],
    )
    return claimed.scalars().one_or_none()


def defense_if_held(session: Session, defense_id: uuid.UUID, token: uuid.UUID) -> Defense | None:
    return leases.lock_held(session, SELF_TEST_LEASES, defense_id, token)


def active_defenses(session: Session, challenge_id: uuid.UUID) -> list[Entry]:
    rows = session.execute(
        select(Defense.id, Defense.participant_id, Defense.created_at).where(
            Defense.challenge_id == challenge_id, Defense.status == DefenseStatus.ACTIVE
        )
    ).tuples()
    return [Entry(*row) for row in rows]


def attacks_of(session: Session, challenge_id: uuid.UUID) -> list[Entry]:
    rows = session.execute(
        select(Attack.id, Attack.participant_id, Attack.created_at).where(
            Attack.challenge_id == challenge_id
        )
    ).tuples()
    return [Entry(*row) for row in rows]


def lock_attack(session: Session, attack_id: uuid.UUID) -> Attack | None:
    """The attack, locked until the transaction ends: its pairings run one at a time (SQLite:
    the database's write lock)."""
    if _dialect(session) == "sqlite":
        take_write_lock(session)
    return session.scalar(select(Attack).where(Attack.id == attack_id).with_for_update())


def lock_defense(session: Session, defense_id: uuid.UUID) -> Defense | None:
    if _dialect(session) == "sqlite":
        take_write_lock(session)
    return session.scalar(select(Defense).where(Defense.id == defense_id).with_for_update())

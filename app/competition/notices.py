"""Notification mails of a challenge's close and of its private board's reveal, sent by a
periodic sweep (`gauntlet.sweep_notices`), since a close comes by its `closes_at` with no
request to hang it on.

Each pass finds, across tenants, the challenges closed within `NOTICE_WINDOW` whose notice of
the event for that close is not recorded, and for each, in a transaction of its own, claims
the notice (an insert on a unique key: challenge, event, close) and queues the mails in the
same transaction (`app.tenant.account_mail.notify`). So each player is mailed once per event
and close: a second sweep, or two running at once, find the notice claimed and send nothing;
a pass killed before its commit leaves neither the notice nor the mails, and the next pass
sends them. A challenge reopened and closed again is a new close, with notices of its own.

`revealed` is for a challenge whose kind has a private board (`CompetitionKind.
private_board_revealed`): a split benchmark challenge's at the close, a red-blue final
round's boards once final. A reveal found with the close in one pass goes in one mail.
A close older than `NOTICE_WINDOW` is not mailed about (nobody wants news that old; the
migration that brought notices recorded every close before it as sent).
"""

from __future__ import annotations

import logging
import uuid
from datetime import datetime, timedelta

from sqlalchemy.orm import Session

from app.challenge.models import Challenge
from app.challenge.registry import kind_as
from app.competition import cross_tenant
from app.competition.competition_kind import CompetitionKind
from app.competition.repository import CompetitionRepository
from app.competition.service import challenge_link, players
from app.kit.db import utcnow
from app.kit.unit_of_work import unit_of_work
from app.tenant import account_mail
from app.tenant.service import get_tenant

log = logging.getLogger(__name__)

SWEEP_NOTICES_TASK = "gauntlet.sweep_notices"
CLOSED = "closed"
REVEALED = "revealed"
NOTICE_WINDOW = timedelta(days=14)
BATCH = 100


def _due(event: str, now: datetime) -> list[tuple[uuid.UUID, datetime]]:
    """(challenge id, close) of every challenge due a notice of the event."""
    found: list[tuple[uuid.UUID, datetime]] = []
    after: tuple[datetime, uuid.UUID] | None = None
    while True:
        with unit_of_work() as work:
            rows = cross_tenant.due_notices(
                work.session, event, now, now - NOTICE_WINDOW, after, BATCH
            )
            batch = [(row.id, row.closes_at) for row in rows if row.closes_at is not None]
        found.extend(batch)
        if len(rows) < BATCH or not batch:
            return found
        after = (batch[-1][1], batch[-1][0])


def _revealed(session: Session, challenge: Challenge, now: datetime) -> bool:
    try:
        return kind_as(challenge.kind, CompetitionKind).private_board_revealed(
            session, challenge, now
        )
    except Exception:
        log.exception("challenge %s: cannot tell whether its board is revealed", challenge.id)
        return False


def _text(challenge: Challenge, tenant_name: str, link: str, events: list[str]) -> tuple[str, str]:
    closed_at = f"{challenge.closes_at:%Y-%m-%d %H:%M} UTC"
    lines = [f"{challenge.title} ({tenant_name})", ""]
    if CLOSED in events:
        lines.append(f"The challenge closed at {closed_at}: it takes no more submissions.")
    if REVEALED in events:
        lines.append("Its private leaderboard is revealed: the final results are on its page.")
    lines += ["", f"The challenge: {link}"]
    if REVEALED in events and CLOSED not in events:
        subject = f"{challenge.title}: the private leaderboard is revealed"
    elif REVEALED in events:
        subject = f"{challenge.title} has closed: the private leaderboard is revealed"
    else:
        subject = f"{challenge.title} has closed"
    return subject, "\n".join(lines)


def notify_challenge(
    challenge_id: uuid.UUID, closes_at: datetime, due: set[str], now: datetime
) -> int:
    """Sends the challenge's notices of the `due` events for this close (a reveal only once
    its kind says so), once each; how many mails were queued (0 when another pass sent
    them, or the challenge changed since it was found)."""
    with unit_of_work() as work:
        session = work.session
        challenge = cross_tenant.challenge_of_any_tenant(session, challenge_id)
        if challenge is None or challenge.closes_at != closes_at or challenge.deleted_at:
            return 0
        repo = CompetitionRepository(session, challenge.tenant_id)
        events = [CLOSED] if CLOSED in due else []
        if REVEALED in due and _revealed(session, challenge, now):
            events.append(REVEALED)
        claimed = [
            (event, notice_id)
            for event in events
            if (notice_id := repo.record_notice(challenge.id, event, closes_at)) is not None
        ]
        if not claimed:
            return 0
        tenant = get_tenant(session, challenge.tenant_id)
        link = challenge_link(tenant.slug, challenge)
        subject, text = _text(challenge, tenant.name, link, [event for event, _ in claimed])
        mailed = account_mail.notify(work, tenant, players(session, challenge), subject, text)
        for _, notice_id in claimed:
            repo.set_notice_mailed(notice_id, mailed)
        return mailed


def sweep() -> dict[str, int]:
    now = utcnow()
    due: dict[tuple[uuid.UUID, datetime], set[str]] = {}
    for event in (CLOSED, REVEALED):
        for found in _due(event, now):
            due.setdefault(found, set()).add(event)
    mailed = 0
    for (challenge_id, closes_at), events in due.items():
        try:
            mailed += notify_challenge(challenge_id, closes_at, events, now)
        except Exception:
            # One challenge's failure does not stop the others' notices; the next pass
            # tries it again (nothing of it was committed).
            log.exception("challenge %s: its notices failed", challenge_id)
    if due:
        log.info("notices: %d challenges, %d mails", len(due), mailed)
    return {"challenges": len(due), "mailed": mailed}

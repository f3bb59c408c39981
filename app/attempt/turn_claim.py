"""A worker's claim in turn (app/attempt/turns.py): the task of a waiting attempt claims the
attempt whose turn it is, across tenants, and sends its own attempt's task again."""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy.orm import Session

from app.attempt import cross_tenant
from app.attempt.cross_tenant import Claimed
from app.attempt.dispatch import RUN_ATTEMPT
from app.kit.unit_of_work import TaskMessage, send_tasks


def claim_in_turn(
    session: Session, asked: uuid.UUID, token: uuid.UUID, now: datetime, until: datetime
) -> Claimed | None:
    """A worker's claim for the task of attempt `asked`: the attempt whose turn it is, if
    `asked` is waiting and another's turn comes first (`asked`'s task is then sent again);
    else `asked`, if it is claimable."""
    if cross_tenant.claimable(session, asked, now):
        chosen = cross_tenant.in_turn(session, now)
        if chosen is not None and chosen != asked:
            claimed = cross_tenant.claim(session, chosen, token, now, until)
            if claimed is not None:
                # `asked` was committed long ago: its task may go before this claim commits.
                send_tasks([TaskMessage(RUN_ATTEMPT, (str(asked),))])
                return claimed
    return cross_tenant.claim(session, asked, token, now, until)

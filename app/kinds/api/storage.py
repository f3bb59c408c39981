"""For a kind's own tables and the queries of its repository: the declarative base and column
types, the SQL helpers every repository shares, sessions outside a request, and the core's
tables a kind's rows refer to and its queries may join (read-only to a kind: it changes them
through `app.kinds.api.services`)."""

from __future__ import annotations

from app.attempt.models import Attempt
from app.challenge.models import Challenge, challenge_not_deleted, challenge_work_runs
from app.kit.db import (
    Base,
    JSONType,
    ProducedJSON,
    ProducedText,
    StrEnumColumn,
    UTCDateTime,
    count_where,
    insert_for,
    lock_some_ids,
    new_id,
    page_where,
    session_scope,
    take_write_lock,
    utcnow,
)
from app.leaderboard.models import BoardFreeze
from app.tenant.models import Participant

__all__ = [
    "Attempt",
    "Base",
    "BoardFreeze",
    "Challenge",
    "JSONType",
    "Participant",
    "ProducedJSON",
    "ProducedText",
    "StrEnumColumn",
    "UTCDateTime",
    "challenge_not_deleted",
    "challenge_work_runs",
    "count_where",
    "insert_for",
    "lock_some_ids",
    "new_id",
    "page_where",
    "session_scope",
    "take_write_lock",
    "utcnow",
]

"""Final submissions and the private board of a split benchmark challenge (docs/boards.md,
"Private parts").

Before the close a participant marks up to `split.final_submissions` of their completed
submissions final. The private board ranks each participant by their best counted submission
on the private part (`kind_metrics.sealed`): the marked ones, or, with none marked, their best
`final_submissions` by the public part. Tenant admins read it at any time; everyone else once
the challenge has closed.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy.orm import Session

from app.kinds.api import (
    SEALED_MEASURES,
    AttemptRead,
    AttemptStatus,
    Audience,
    Conflict,
    Forbidden,
    NotFound,
    RunPurpose,
    SignedInParticipant,
    TenantKey,
    TenantSubject,
    UnitOfWork,
)
from app.kinds.api.error_codes import (
    ATTEMPT_NOT_COMPLETED,
    BASELINE_NOT_FINAL,
    CHALLENGE_CLOSED,
    FINAL_PICKS_EXHAUSTED,
)
from app.kinds.api.services import (
    config_of,
    find_attempt,
    get_challenge,
    handle_of,
    handles,
    lock_participant,
    sealed_shown,
)
from app.kinds.api.storage import Challenge, Participant, utcnow
from app.kinds.benchmark.config import BenchmarkConfig, SplitConfig
from app.kinds.benchmark.repository import BenchmarkRepository
from app.kinds.benchmark.schemas import FinalMarks, PrivateBoard, PrivateBoardItem


def _split_of(challenge: Challenge) -> SplitConfig:
    """The challenge's split, or a 404 for a challenge without a private part."""
    config = config_of(challenge) if challenge.kind == "benchmark" else None
    if not isinstance(config, BenchmarkConfig) or config.split is None:
        raise NotFound("this challenge has no private part")
    return config.split


def mark_final(
    work: UnitOfWork, reader: TenantSubject, attempt_id: uuid.UUID, *, final: bool
) -> FinalMarks:
    """Marks (or unmarks) a completed submission final, before the close: 409 past the
    challenge's number of final submissions, after the close, or for an attempt that did not
    complete; 404 for a challenge without a private part."""
    session = work.session
    attempt = find_attempt(session, reader.tenant_id, attempt_id)
    if attempt is None or attempt.purpose is not RunPurpose.ENTRY:
        raise NotFound("attempt not found")
    if isinstance(reader, SignedInParticipant) and attempt.participant_id != reader.participant_id:
        raise NotFound("attempt not found")
    challenge = get_challenge(session, reader.tenant_id, attempt.challenge_id)
    split = _split_of(challenge)
    if challenge.closes_at is not None and utcnow() >= challenge.closes_at:
        raise Conflict(
            "the challenge has closed: its final submissions are fixed", code=CHALLENGE_CLOSED
        )
    participant_id = attempt.participant_id
    if participant_id is None or attempt.baseline:
        raise Conflict(
            "a baseline is not a participant's submission: it cannot be final",
            code=BASELINE_NOT_FINAL,
        )
    lock_participant(session, reader.tenant_id, participant_id)
    marks = BenchmarkRepository(session, reader.tenant_id)
    marked = marks.marked(challenge.id, participant_id)
    if final and attempt.id not in marked:
        if attempt.status is not AttemptStatus.COMPLETED:
            raise Conflict("only a completed submission can be final", code=ATTEMPT_NOT_COMPLETED)
        if len(marked) >= split.final_submissions:
            raise Conflict(
                f"at most {split.final_submissions} final submissions: unmark one first",
                code=FINAL_PICKS_EXHAUSTED,
            )
        marks.mark(attempt, participant_id)
    elif not final:
        marks.unmark(attempt.id)
    return FinalMarks(
        challenge_id=challenge.id,
        participant=handle_of(session, reader.tenant_id, participant_id),
        attempt_ids=marks.marked(challenge.id, participant_id),
        max_final=split.final_submissions,
    )


@dataclass(frozen=True)
class Entry:
    """A participant's completed submission as the private board weighs it."""

    attempt_id: uuid.UUID
    participant_id: uuid.UUID
    baseline: bool
    created_at: datetime
    public: float | None
    cost: float | None
    private: dict[str, Any]


def _public_order(entry: Entry) -> tuple[float, float, datetime]:
    # The public board's order: the curve at k, then the lower cost, then the earlier.
    public = entry.public if entry.public is not None else float("-inf")
    cost = entry.cost if entry.cost is not None else float("inf")
    return (-public, cost, entry.created_at)


def _private_score(entry: Entry) -> float | None:
    value = entry.private.get("metric_at_k")
    return float(value) if isinstance(value, int | float) else None


def counted(
    entries: Sequence[Entry], marked: set[uuid.UUID], final_submissions: int
) -> tuple[Entry, bool]:
    """A participant's counted submission on the private board, and whether it was marked:
    the best on the private part of their marked ones, or else of their best
    `final_submissions` by the public part (ties: the earlier)."""
    chosen = [entry for entry in entries if entry.attempt_id in marked]
    is_final = bool(chosen)
    if not chosen:
        chosen = sorted(entries, key=_public_order)[:final_submissions]

    def key(entry: Entry) -> tuple[float, datetime]:
        score = _private_score(entry)
        return (-(score if score is not None else float("-inf")), entry.created_at)

    return min(chosen, key=key), is_final


def private_board(
    session: Session,
    challenge: Challenge,
    audience: Audience,
    *,
    limit: int,
    offset: int,
) -> PrivateBoard:
    """The challenge's private board: 403 before the close for everyone but the tenant's
    admins."""
    split = _split_of(challenge)
    if not sealed_shown(challenge.closes_at, audience):
        raise Forbidden("the private board is revealed when the challenge closes")
    tenant_id = challenge.tenant_id
    benchmark = BenchmarkRepository(session, tenant_id)
    rows = benchmark.completed_entries(challenge.id)
    by_participant: dict[uuid.UUID, list[Entry]] = defaultdict(list)
    for attempt_id, participant_id, baseline, created_at, metrics, cost, own in rows:
        assert participant_id is not None
        private = (own or {}).get(SEALED_MEASURES)
        by_participant[participant_id].append(
            Entry(
                attempt_id=attempt_id,
                participant_id=participant_id,
                baseline=baseline,
                created_at=created_at,
                public=metrics.metric_at_k if metrics is not None else None,
                cost=cost,
                private=private if isinstance(private, dict) else {},
            )
        )
    marked = benchmark.marked_at_challenge(challenge.id)
    best = [
        counted(entries, marked, split.final_submissions) for entries in by_participant.values()
    ]
    best.sort(key=lambda pair: (-(_private_score(pair[0]) or float("-inf")), pair[0].created_at))
    participants = [_private_score(entry) for entry, _ in best if not entry.baseline]
    named = handles(session, tenant_id, [entry.participant_id for entry, _ in best])
    items = []
    for entry, is_final in best:
        score = _private_score(entry)
        ahead = sum(
            1 for other in participants if other is not None and (score is None or other > score)
        )
        items.append(
            PrivateBoardItem(
                rank=1 + ahead,
                participant=named.get(entry.participant_id, ""),
                baseline=entry.baseline,
                attempt_id=entry.attempt_id,
                final=is_final,
                private_metric_at_k=score,
                public_metric_at_k=entry.public,
                private_tasks_solved=entry.private.get("tasks_solved"),
                private_tasks_total=entry.private.get("tasks_total"),
            )
        )
    return PrivateBoard(
        items=items[offset : offset + limit], total=len(items), limit=limit, offset=offset
    )


def read_private_board(
    session: Session, reader: TenantKey, challenge_id: uuid.UUID, *, limit: int, offset: int
) -> PrivateBoard:
    challenge = get_challenge(session, reader.tenant_id, challenge_id)
    return private_board(session, challenge, reader.audience, limit=limit, offset=offset)


@dataclass(frozen=True)
class FinalState:
    """What an attempt's page says of its final mark."""

    marked: bool
    marks: int
    max_final: int
    # Before the close, and the attempt completed: it can be marked or unmarked.
    changeable: bool


def final_state(session: Session, challenge: Challenge, attempt: AttemptRead) -> FinalState | None:
    """The attempt's final mark on a split challenge (None on any other challenge)."""
    config = config_of(challenge)
    if not isinstance(config, BenchmarkConfig) or config.split is None:
        return None
    if attempt.participant_id is None or attempt.baseline:
        return None
    marked = BenchmarkRepository(session, challenge.tenant_id).marked(
        challenge.id, attempt.participant_id
    )
    closed = challenge.closes_at is not None and utcnow() >= challenge.closes_at
    return FinalState(
        marked=attempt.id in marked,
        marks=len(marked),
        max_final=config.split.final_submissions,
        changeable=not closed and attempt.status is AttemptStatus.COMPLETED,
    )


def final_marks(
    session: Session, reader: TenantKey, challenge_id: uuid.UUID, participant: Participant
) -> FinalMarks:
    challenge = get_challenge(session, reader.tenant_id, challenge_id)
    split = _split_of(challenge)
    return FinalMarks(
        challenge_id=challenge.id,
        participant=participant.handle,
        attempt_ids=BenchmarkRepository(session, reader.tenant_id).marked(
            challenge.id, participant.id
        ),
        max_final=split.final_submissions,
    )

"""The benchmark kind's statements bound to one tenant: final marks, what the private board
reads of a challenge's completed entries, an attempt's private run and its own measures. The
request path reads and writes through them, as does the worker side once it holds a run of a
known tenant. The worker's claims and held leases and the sweep's reads of private runs cross
tenants: app/kinds/benchmark/cross_tenant.py."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from sqlalchemy import delete, func, select, update
from sqlalchemy.orm import Session

from app.kinds.api import AttemptMetrics, AttemptStatus, RunPurpose
from app.kinds.api.storage import Attempt, Challenge, insert_for, utcnow
from app.kinds.benchmark.models import FinalMark, SealedRun, SealedRunStatus

# A completed entry as the private board reads it: (attempt id, participant id, baseline,
# created_at, metrics, cost, kind_metrics).
EntryRow = tuple[
    uuid.UUID,
    uuid.UUID | None,
    bool,
    datetime,
    AttemptMetrics | None,
    float | None,
    dict[str, Any] | None,
]


class BenchmarkRepository:
    """The benchmark kind's rows of one tenant: every statement is filtered by (or writes)
    `tenant_id`."""

    def __init__(self, session: Session, tenant_id: uuid.UUID) -> None:
        self.session = session
        self.tenant_id = tenant_id

    # Final marks and the private board -------------------------------------------------------

    def marked(self, challenge_id: uuid.UUID, participant_id: uuid.UUID) -> list[uuid.UUID]:
        """The participant's marked attempts at the challenge, oldest mark first."""
        return list(
            self.session.scalars(
                select(FinalMark.attempt_id)
                .where(
                    FinalMark.tenant_id == self.tenant_id,
                    FinalMark.challenge_id == challenge_id,
                    FinalMark.participant_id == participant_id,
                )
                .order_by(FinalMark.marked_at, FinalMark.attempt_id)
            )
        )

    def mark(self, attempt: Attempt, participant_id: uuid.UUID) -> None:
        """Marks the tenant's attempt final (kept if it already is)."""
        self.session.execute(
            insert_for(self.session)(FinalMark)
            .values(
                attempt_id=attempt.id,
                tenant_id=self.tenant_id,
                challenge_id=attempt.challenge_id,
                participant_id=participant_id,
                marked_at=utcnow(),
            )
            .on_conflict_do_nothing(index_elements=["attempt_id"])
        )

    def unmark(self, attempt_id: uuid.UUID) -> None:
        self.session.execute(
            delete(FinalMark).where(
                FinalMark.tenant_id == self.tenant_id, FinalMark.attempt_id == attempt_id
            )
        )

    def marked_at_challenge(self, challenge_id: uuid.UUID) -> set[uuid.UUID]:
        return set(
            self.session.scalars(
                select(FinalMark.attempt_id).where(
                    FinalMark.tenant_id == self.tenant_id, FinalMark.challenge_id == challenge_id
                )
            )
        )

    def completed_entries(self, challenge_id: uuid.UUID) -> Iterable[EntryRow]:
        """The challenge's completed entries with a participant (baselines included)."""
        return self.session.execute(
            select(
                Attempt.id,
                Attempt.participant_id,
                Attempt.baseline,
                Attempt.created_at,
                Attempt.metrics,
                Attempt.cost_usd,
                Attempt.kind_metrics,
            ).where(
                Attempt.tenant_id == self.tenant_id,
                Attempt.challenge_id == challenge_id,
                Attempt.purpose == RunPurpose.ENTRY,
                Attempt.status == AttemptStatus.COMPLETED,
                Attempt.participant_id.is_not(None),
            )
        ).tuples()

    def entry_count(self, challenge_id: uuid.UUID) -> int:
        """How many submissions the challenge has, in any status (practice and test runs not
        counted: they reach no board)."""
        return (
            self.session.scalar(
                select(func.count())
                .select_from(Attempt)
                .where(
                    Attempt.tenant_id == self.tenant_id,
                    Attempt.challenge_id == challenge_id,
                    Attempt.purpose == RunPurpose.ENTRY,
                )
            )
            or 0
        )

    # The private part's runs (`SealedRun`): made when a scored attempt completes, re-run by
    # the tenant's admins; an attempt's own measures hold their results.

    def queue_sealed_run(self, attempt_id: uuid.UUID, challenge_id: uuid.UUID) -> bool:
        """Queues the attempt's private run unless it has one; whether it queued one."""
        now = utcnow()
        inserted = self.session.execute(
            insert_for(self.session)(SealedRun)
            .values(
                id=attempt_id,
                tenant_id=self.tenant_id,
                challenge_id=challenge_id,
                status=SealedRunStatus.QUEUED,
                created_at=now,
                enqueued_at=now,
                run_count=0,
            )
            .on_conflict_do_nothing(index_elements=["id"])
            .returning(SealedRun.id)
        )
        return inserted.first() is not None

    def sealed_run_of(self, attempt_id: uuid.UUID) -> SealedRun | None:
        """The attempt's private run, locked (None: none, or its challenge deleted)."""
        return self.session.scalar(
            select(SealedRun)
            .join(Challenge, Challenge.id == SealedRun.challenge_id)
            .where(
                SealedRun.tenant_id == self.tenant_id,
                SealedRun.id == attempt_id,
                Challenge.deleted_at.is_(None),
            )
            .with_for_update(of=SealedRun)
        )

    def set_own_measures(self, attempt_id: uuid.UUID, name: str, value: dict[str, Any]) -> None:
        """Sets one of the attempt's own measures (`kind_metrics[name]`), keeping the others."""
        this_attempt = (Attempt.tenant_id == self.tenant_id, Attempt.id == attempt_id)
        current = self.session.scalar(
            select(Attempt.kind_metrics).where(*this_attempt).with_for_update()
        )
        self.session.execute(
            update(Attempt)
            .where(*this_attempt)
            .values(kind_metrics={**(current or {}), name: value})
        )

    def own_measures(self, attempt_id: uuid.UUID) -> dict[str, Any] | None:
        return self.session.scalar(
            select(Attempt.kind_metrics).where(
                Attempt.tenant_id == self.tenant_id, Attempt.id == attempt_id
            )
        )

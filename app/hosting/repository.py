"""The platform admin's reads across tenants: what each tenant of a page holds and does, one
grouped query per table for the whole page. Only the platform admin's subject opens them
(`TenantActivityRepository`); everything else reads one tenant, through its domain's
tenant-bound repositories."""

from __future__ import annotations

import uuid
from collections.abc import Collection
from datetime import date, datetime
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from app.attempt.models import Attempt, RunPurpose
from app.auth.subjects import PlatformAdmin
from app.challenge.models import Challenge
from app.tenant.models import Participant, TenantSpend


class TenantActivityRepository:
    """What the tenants hold and do, by tenant, for the platform admin."""

    def __init__(self, session: Session, platform_admin: PlatformAdmin) -> None:
        self.session = session
        self.platform_admin = platform_admin

    def _counts(
        self, column: Any, tenant_ids: Collection[uuid.UUID], *conditions: Any
    ) -> dict[uuid.UUID, int]:
        if not tenant_ids:
            return {}
        rows = self.session.execute(
            select(column, func.count())
            .where(column.in_(list(tenant_ids)), *conditions)
            .group_by(column)
        ).tuples()
        return {tenant_id: int(count) for tenant_id, count in rows}

    def challenge_counts(self, tenant_ids: Collection[uuid.UUID]) -> dict[uuid.UUID, int]:
        """Challenges not deleted, by tenant."""
        return self._counts(Challenge.tenant_id, tenant_ids, Challenge.deleted_at.is_(None))

    def participant_counts(self, tenant_ids: Collection[uuid.UUID]) -> dict[uuid.UUID, int]:
        return self._counts(Participant.tenant_id, tenant_ids)

    def attempt_counts_since(
        self, tenant_ids: Collection[uuid.UUID], since: datetime
    ) -> dict[uuid.UUID, int]:
        """Attempts (entries, not practice or test runs) submitted since `since`, by tenant: a
        range of the (tenant_id, created_at) index each."""
        return self._counts(
            Attempt.tenant_id,
            tenant_ids,
            Attempt.created_at >= since,
            Attempt.purpose == RunPurpose.ENTRY,
        )

    def spend_on(self, tenant_ids: Collection[uuid.UUID], day: date) -> dict[uuid.UUID, float]:
        if not tenant_ids:
            return {}
        rows = self.session.execute(
            select(TenantSpend.tenant_id, TenantSpend.spent_usd).where(
                TenantSpend.tenant_id.in_(list(tenant_ids)), TenantSpend.day == day
            )
        ).tuples()
        return {tenant_id: float(spent) for tenant_id, spent in rows}

    def organizers(self, tenant_ids: Collection[uuid.UUID]) -> dict[uuid.UUID, list[Participant]]:
        """The accounts with the admin role of each tenant, oldest first."""
        found: dict[uuid.UUID, list[Participant]] = {tenant_id: [] for tenant_id in tenant_ids}
        if not tenant_ids:
            return found
        rows = self.session.scalars(
            select(Participant)
            .where(
                Participant.tenant_id.in_(list(tenant_ids)),
                Participant.is_admin.is_(True),
                Participant.password_hash.is_not(None),
            )
            .order_by(Participant.created_at, Participant.id)
        )
        for participant in rows:
            found[participant.tenant_id].append(participant)
        return found

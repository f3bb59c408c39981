"""SQL for rescore jobs, bound to one tenant: the request path records a tenant's jobs and
reads them. The worker's statements, which take a job id from the queue, are in
`app.rescore.cross_tenant`."""

from __future__ import annotations

import uuid

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.kit.db import page_where
from app.rescore.models import RescoreJob


class RescoreJobRepository:
    def __init__(self, session: Session, tenant_id: uuid.UUID) -> None:
        self.session = session
        self.tenant_id = tenant_id

    def add(self, job: RescoreJob) -> None:
        """Stores the job as the tenant's."""
        job.tenant_id = self.tenant_id
        self.session.add(job)
        self.session.flush()

    def get(self, job_id: uuid.UUID) -> RescoreJob | None:
        return self.session.scalar(
            select(RescoreJob).where(
                RescoreJob.tenant_id == self.tenant_id, RescoreJob.id == job_id
            )
        )

    def page_of_challenge(
        self, challenge_id: uuid.UUID, limit: int, offset: int
    ) -> tuple[list[RescoreJob], int]:
        return page_where(
            self.session,
            RescoreJob,
            [RescoreJob.tenant_id == self.tenant_id, RescoreJob.challenge_id == challenge_id],
            (RescoreJob.created_at.desc(), RescoreJob.id),
            limit=limit,
            offset=offset,
        )

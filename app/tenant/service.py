from __future__ import annotations

import uuid
from datetime import datetime, time, timedelta

from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from app.auth.models import ApiKey
from app.auth.service import create_api_key
from app.auth.subjects import ApiKeyRole
from app.config import Settings
from app.db import utcnow
from app.errors import Conflict
from app.tenant.models import Tenant
from app.tenant.repository import get_tenant_by_slug, spend_since
from app.tenant.schemas import SpendDay, TenantUsage


def create_tenant(session: Session, slug: str, name: str) -> tuple[Tenant, ApiKey, str]:
    """A tenant comes with its first admin key, the only way into it."""
    if get_tenant_by_slug(session, slug) is not None:
        raise Conflict(f"a tenant with slug '{slug}' already exists")
    tenant = Tenant(id=uuid.uuid4(), slug=slug, name=name, created_at=utcnow())
    try:
        with session.begin_nested():
            session.add(tenant)
    except IntegrityError as exc:
        raise Conflict(f"a tenant with slug '{slug}' already exists") from exc
    key_row, key = create_api_key(session, tenant.id, "initial admin key", ApiKeyRole.ADMIN)
    return tenant, key_row, key


USAGE_HISTORY_DAYS = 30


def tenant_usage(session: Session, tenant_id: uuid.UUID, settings: Settings) -> TenantUsage:
    """Today's model spend against the budgets, and the last days' spend."""
    now = utcnow()
    today = now.date()
    days = spend_since(session, tenant_id, today - timedelta(days=USAGE_HISTORY_DAYS - 1))
    spent = next((row.spent_usd for row in days if row.day == today), 0.0)
    budget = settings.tenant_daily_cost_budget_usd
    return TenantUsage(
        day=today,
        spent_usd=spent,
        daily_budget_usd=budget,
        remaining_usd=max(0.0, budget - spent),
        resets_at=datetime.combine(today + timedelta(days=1), time(), tzinfo=now.tzinfo),
        attempt_budget_usd=settings.attempt_cost_budget_usd,
        unpriced_usd_per_million_tokens=settings.unpriced_usd_per_million_tokens,
        history=[SpendDay(day=row.day, spent_usd=row.spent_usd, calls=row.calls) for row in days],
    )

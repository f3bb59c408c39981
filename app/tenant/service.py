from __future__ import annotations

import uuid

from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from app.auth.models import ApiKey
from app.auth.service import create_api_key
from app.db import utcnow
from app.errors import Conflict
from app.tenant.models import Tenant
from app.tenant.repository import get_tenant_by_slug


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
    key_row, key = create_api_key(session, tenant.id, "initial admin key", "admin")
    return tenant, key_row, key

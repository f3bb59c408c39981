"""Whether a tenant's doors are open: its status, set by the platform admin, and the refusal
every door of a tenant that is not active gives (its API keys, its web sessions and pages, its
public reads and play; its workers' runs wait).

- `pending`: an organizer asked for it (sign-up under the `approval` policy); nothing opens
  until a platform admin approves it.
- `active`: open.
- `suspended`: closed by a platform admin; its data is kept, and resuming it opens it again
  as it was.

The status is read with the credential (`app.auth.repository.active_key` joins the tenant
row), so a suspension closes a key at its next request, in every API process.
"""

from __future__ import annotations

from enum import StrEnum

from app.kit.error_codes import TENANT_PENDING, TENANT_SUSPENDED
from app.kit.errors import AppError


class TenantStatus(StrEnum):
    PENDING = "pending"
    ACTIVE = "active"
    SUSPENDED = "suspended"


class TenantClosed(AppError):
    """403 from every door of a tenant that is not active; the code names why
    (`tenant_suspended`, `tenant_pending`)."""

    status_code = 403

    def __init__(self, status: TenantStatus, name: str | None = None) -> None:
        self.status = status
        code = TENANT_PENDING if status is TenantStatus.PENDING else TENANT_SUSPENDED
        super().__init__(closed_message(status, name), code=code)


def closed_message(status: TenantStatus, name: str | None = None) -> str:
    """What a closed tenant's doors say, naming the tenant when the caller may know it."""
    which = name or "This tenant"
    if status is TenantStatus.PENDING:
        return (
            f"{which} is waiting for the platform admin's approval: nothing opens until it "
            "is approved, and its organizer gets an email then."
        )
    return (
        f"{which} is suspended by the platform admin: its API keys, pages and play are "
        "closed and nothing runs for it; its data is kept. Ask the platform's operator to "
        "resume it."
    )


def refuse_unless_active(status: TenantStatus, name: str | None = None) -> None:
    if status is not TenantStatus.ACTIVE:
        raise TenantClosed(status, name)

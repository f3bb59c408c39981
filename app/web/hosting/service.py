"""An organizer's sign-up ("Host a challenge"): the form's checks (the event's name and
address, the organizer's handle, address and password), then the tenant as the operator's
policy makes it (app.hosting)."""

from __future__ import annotations

from app.hosting import service as hosting
from app.hosting.service import HostedTenant
from app.kit.errors import Conflict, Forbidden, ValidationFailed
from app.kit.unit_of_work import UnitOfWork
from app.tenant import account_mail
from app.tenant.account_mail import EmailRefused
from app.web import auth
from app.web.accounts.service import clean_handle
from app.web.forms import FormError, error_field

FIELDS = ("name", "slug", "handle", "email", "password")


def _form_error(exc: ValidationFailed | Conflict) -> FormError:
    """The service's refusal as the form shows it, beside the field its details name."""
    field = error_field(exc, FIELDS)
    message = str(exc.details[0]["msg"]) if field else exc.message
    status_code = 409 if isinstance(exc, Conflict) else 422
    return FormError(message[:1].upper() + message[1:] + ".", field=field, status_code=status_code)


def sign_up_organizer(
    work: UnitOfWork, *, name: str, slug: str, handle: str, email: str, password: str
) -> HostedTenant:
    """The new tenant and its organizer's account, or `FormError` naming the field at fault."""
    try:
        checked_name = hosting.checked_name(name)
        checked_slug = hosting.checked_slug(slug, checked_name)
    except ValidationFailed as exc:
        raise _form_error(exc) from None
    checked_handle = clean_handle(handle)
    if not email.strip():
        raise FormError("Give your email address: the platform writes to you there.", field="email")
    try:
        address = account_mail.normalized_email(email)
    except EmailRefused as exc:
        raise FormError(str(exc), field="email") from None
    problem = auth.password_problem(password, checked_handle)
    if problem:
        raise FormError(problem, field="password")
    try:
        hosted = hosting.host_tenant(
            work,
            name=checked_name,
            slug=checked_slug,
            handle=checked_handle,
            password_hash=auth.hash_password(password),
            email=address,
        )
    except Conflict as exc:
        raise _form_error(exc) from None
    except Forbidden as exc:
        raise FormError(exc.message, status_code=403) from None
    auth.limits.confirmation_mailed(hosted.tenant.id, hosted.organizer.id)
    return hosted

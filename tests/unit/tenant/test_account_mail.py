"""Participants' addresses as typed, and what a tenant's address policy asks before play."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest

from app.tenant.account_mail import EmailRefused, normalized_email, play_problem
from app.tenant.models import EmailPolicy, Participant, Tenant


@pytest.mark.parametrize(
    ("typed", "kept"),
    [
        ("ann@example.org", "ann@example.org"),
        ("  Ann.Lee@Example.ORG ", "Ann.Lee@example.org"),
        ("zoe@bücher.example", "zoe@xn--bcher-kva.example"),
    ],
)
def test_addresses_are_kept_normalised(typed: str, kept: str) -> None:
    assert normalized_email(typed) == kept


@pytest.mark.parametrize(
    "typed",
    [
        "",
        "ann",
        "ann@",
        "@example.org",
        "ann@localhost",
        "ann@example.org\r\nBcc: victim@example.org",
        "ann@example.org, bob@example.org",
        "zoë@example.org",  # a non-ASCII local part needs SMTPUTF8, which not every server has
        "a" * 250 + "@example.org",
        "ann@exa mple.org",
    ],
)
def test_addresses_that_cannot_be_sent_to_are_refused_saying_why(typed: str) -> None:
    with pytest.raises(EmailRefused) as refused:
        normalized_email(typed)
    assert str(refused.value)


def _tenant(policy: EmailPolicy) -> Tenant:
    return Tenant(id=uuid.uuid4(), slug="club", name="Club", email_policy=policy)


def _participant(email: str | None, confirmed: bool) -> Participant:
    return Participant(
        id=uuid.uuid4(),
        handle="ann",
        email=email,
        email_confirmed_at=datetime(2026, 12, 1, tzinfo=UTC) if confirmed else None,
    )


@pytest.mark.parametrize(
    ("policy", "email", "confirmed", "asked"),
    [
        (EmailPolicy.OPTIONAL, None, False, None),
        (EmailPolicy.OPTIONAL, "ann@example.org", False, None),
        (EmailPolicy.REQUIRED, None, False, "asks for an email address"),
        (EmailPolicy.REQUIRED, "ann@example.org", False, None),
        (EmailPolicy.CONFIRMED, None, False, "asks for an email address"),
        (EmailPolicy.CONFIRMED, "ann@example.org", False, "confirmed email address"),
        (EmailPolicy.CONFIRMED, "ann@example.org", True, None),
    ],
)
def test_what_the_policy_asks_before_play(
    policy: EmailPolicy, email: str | None, confirmed: bool, asked: str | None
) -> None:
    problem = play_problem(_tenant(policy), _participant(email, confirmed))
    if asked is None:
        assert problem is None
    else:
        assert problem is not None and asked in problem and "account page" in problem

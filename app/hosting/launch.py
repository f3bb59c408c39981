"""The launch checklist a challenge passes before the console opens it: what is ready, what
is not, and where each item is fixed. Its required items must pass before the console's *Open*
or *Publish* lets participants in; the advisory ones are shown and never refuse.

The items are `CHECKS`, one function each: a new item is one function and one line there. The
REST API does not ask the checklist: an app that drives the API decides for itself when a
challenge is ready.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from sqlalchemy.orm import Session

from app.attempt import unscored
from app.attempt.models import AttemptStatus
from app.auth.subjects import TenantAdmin
from app.challenge import service as challenges
from app.challenge.config import ChallengeState, ChallengeStatus, Visibility
from app.challenge.models import Challenge
from app.kit.db import utcnow
from app.kit.error_codes import LAUNCH_NOT_READY
from app.kit.errors import Conflict
from app.kit.unit_of_work import UnitOfWork


class CheckState(StrEnum):
    PASSED = "passed"
    FAILED = "failed"
    # Not known yet: a test run still running.
    PENDING = "pending"


@dataclass(frozen=True)
class CheckItem:
    """One item of the checklist: what it asks (`label`), whether *Open* waits for it
    (`required`), where it stands and why (`detail`), and the console page that fixes it
    (`fix_tab`, a tab of the challenge's console: "settings", "test-runs", ...)."""

    name: str
    label: str
    required: bool
    state: CheckState
    detail: str
    fix_tab: str
    fix_text: str

    @property
    def blocks(self) -> bool:
        return self.required and self.state is not CheckState.PASSED


@dataclass(frozen=True)
class Checklist:
    items: Sequence[CheckItem]

    @property
    def blocking(self) -> list[CheckItem]:
        """The required items that have not passed."""
        return [item for item in self.items if item.blocks]

    @property
    def ready(self) -> bool:
        return not self.blocking


class LaunchNotReady(Conflict):
    """The console opens or publishes a challenge only once its checklist's required items
    pass."""

    def __init__(self, message: str) -> None:
        super().__init__(message, code=LAUNCH_NOT_READY)


# The items -------------------------------------------------------------------------------

TEST_RUNS_READ = 10


def _test_run_passed(session: Session, admin: TenantAdmin, challenge: Challenge) -> CheckItem:
    """Required: the newest test run completed (the model answered and the verifier decided,
    whatever its verdict: a sample that does not break a guarded target is a working
    configuration too). An error, or no run, fails; a run still going is pending."""
    runs = unscored.list_test_runs(session, admin, challenge.id, limit=1, offset=0).items
    newest = runs[0] if runs else None
    if newest is None:
        state, detail = CheckState.FAILED, "No test run yet."
    elif newest.status is AttemptStatus.COMPLETED:
        state, detail = CheckState.PASSED, "The newest test run completed."
    elif newest.status is AttemptStatus.ERROR:
        reason = newest.error or "an error"
        state, detail = CheckState.FAILED, f"The newest test run ended in an error: {reason}"
    else:
        state, detail = CheckState.PENDING, "A test run is still running: reload when it is done."
    return CheckItem(
        "test_run",
        "A test run passed",
        True,
        state,
        detail,
        "test-runs",
        "Start a test run",
    )


def _dates_set(session: Session, admin: TenantAdmin, challenge: Challenge) -> CheckItem:
    """Advisory: a close date ahead (opening now sets the open date; a challenge without a
    close stays open until it is closed by hand)."""
    now = utcnow()
    closes_at = challenge.closes_at
    if closes_at is None:
        state, detail = CheckState.FAILED, "No close date: it stays open until you close it."
    elif closes_at <= now:
        state, detail = CheckState.FAILED, f"It closed at {_when(closes_at)}: opening drops it."
    else:
        opens = f"opens {_when(challenge.opens_at)}, " if challenge.opens_at else ""
        state, detail = CheckState.PASSED, f"It {opens}closes {_when(closes_at)}."
    return CheckItem(
        "dates", "Dates set", False, state, detail, "settings", "Set the dates (More settings)"
    )


def _visibility_public(session: Session, admin: TenantAdmin, challenge: Challenge) -> CheckItem:
    """Advisory: unlisted (signed-in participants) and private (the API only) are choices an
    event may make on purpose."""
    words = {
        Visibility.PUBLIC: "Public: listed, and its board readable without signing in.",
        Visibility.UNLISTED: "Unlisted: only the tenant's signed-in participants see it.",
        Visibility.PRIVATE: "Private: reached through the API only, never listed.",
    }
    state = CheckState.PASSED if challenge.visibility is Visibility.PUBLIC else CheckState.FAILED
    return CheckItem(
        "visibility",
        "Visibility public",
        False,
        state,
        words[challenge.visibility],
        "settings",
        "Change the visibility",
    )


def rules_text(challenge: Challenge) -> str:
    """The challenge's rules for participants (its *Rules* page, Markdown): '' while none are
    written."""
    return challenge.page_texts.rules


def _rules_written(session: Session, admin: TenantAdmin, challenge: Challenge) -> CheckItem:
    """Advisory: a challenge may run on its goal alone."""
    if rules_text(challenge).strip():
        state = CheckState.PASSED
        detail = "The rules are written: each participant accepts them before a first submission."
    else:
        state, detail = CheckState.FAILED, "No rules yet: participants play on the goal alone."
    return CheckItem("rules", "Rules written", False, state, detail, "pages", "Write the rules")


Check = Callable[[Session, TenantAdmin, Challenge], CheckItem]
# In the order the console shows them.
CHECKS: tuple[Check, ...] = (_test_run_passed, _dates_set, _visibility_public, _rules_written)


def _when(at: datetime | None) -> str:
    return "" if at is None else f"{at:%Y-%m-%d %H:%M} UTC"


# The checklist and the launch ----------------------------------------------------------------


def launch_checklist(session: Session, admin: TenantAdmin, challenge: Challenge) -> Checklist:
    return Checklist([check(session, admin, challenge) for check in CHECKS])


def launch_waits_for_checklist(challenge: Challenge) -> bool:
    """Whether opening or publishing the challenge is its launch, which the checklist
    precedes: a draft's, or an upcoming challenge's that has not opened yet. Opening a closed
    challenge again is no launch: it was open before."""
    status = challenges.challenge_status(challenge)
    return status in (ChallengeStatus.DRAFT, ChallengeStatus.UPCOMING)


def _refuse_unless_ready(session: Session, admin: TenantAdmin, challenge: Challenge) -> None:
    if not launch_waits_for_checklist(challenge):
        return
    blocking = launch_checklist(session, admin, challenge).blocking
    if blocking:
        missing = "; ".join(f"{item.label} ({item.detail})" for item in blocking)
        raise LaunchNotReady(
            f"{challenge.title} is not opened: the launch checklist's required items are not "
            f"done: {missing}"
        )


def open_challenge(work: UnitOfWork, admin: TenantAdmin, challenge_id: uuid.UUID) -> Challenge:
    """Opens the challenge now (a draft is published too), once the launch checklist's
    required items pass (`LaunchNotReady` otherwise)."""
    challenge = challenges.get_challenge(work.session, admin.tenant_id, challenge_id)
    _refuse_unless_ready(work.session, admin, challenge)
    if challenge.state is ChallengeState.DRAFT:
        challenges.set_state(work, admin.tenant_id, challenge_id, ChallengeState.LIVE)
    return challenges.open_now(work, admin.tenant_id, challenge_id)


def publish_challenge(work: UnitOfWork, admin: TenantAdmin, challenge_id: uuid.UUID) -> Challenge:
    """Publishes a draft: it is listed, and played by its dates (at once without an open
    date), once the launch checklist's required items pass (`LaunchNotReady` otherwise)."""
    challenge = challenges.get_challenge(work.session, admin.tenant_id, challenge_id)
    _refuse_unless_ready(work.session, admin, challenge)
    return challenges.set_state(work, admin.tenant_id, challenge_id, ChallengeState.LIVE)

"""Unscored runs: a participant's practice and a tenant admin's test run.

Both are attempts with a `purpose` other than `entry` (`RunPurpose`): the same runner, lease,
model client, outbound policy and cost budgets run them, and the challenge's scoring scores
them for their reader; the attempt repository's readers of scored play (boards, limits,
rescoring, exports, dashboards, the attempt lists) read entries only, so nothing else sees
them. A kind says what their fields are and how they run (`AttemptKind.unscored_model`,
`unscored`, `run`).

- Practice: open challenges only, under the challenge's `max_practice_per_day` (per
  participant and UTC day, counted apart from the attempt limits); seen by the participant,
  and by the tenant's keys, which act for their participants: in a freeze, a member key sees
  another's practice as it stood at the freeze, as it sees their attempts.
- Test run: tenant admins, any state (a draft's too), no quota; it has no participant.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import NamedTuple

from sqlalchemy.orm import Session

from app.attempt import turns
from app.attempt.attempt_kind import AttemptKind, UnscoredRequest, unscored_fields
from app.attempt.dispatch import RUN_ATTEMPT
from app.attempt.models import Attempt, AttemptStatus, RunPurpose, Trial
from app.attempt.repository import AttemptRepository, SubmissionTarget
from app.attempt.schemas import (
    KindFieldsBody,
    PracticeCreate,
    PracticeLeft,
    TestRunCreate,
    UnscoredRunList,
    UnscoredRunRead,
)
from app.attempt.service import kind_fields, queued_attempt, trial_view
from app.auth.subjects import Audience, SignedInParticipant, TenantAdmin, TenantKey
from app.challenge.config import LimitsConfig
from app.challenge.limits import Left, left_under, refuse_when_none_left
from app.challenge.models import Challenge
from app.challenge.registry import find_kind, kind_as
from app.challenge.service import (
    config_of,
    get_challenge,
    readable_challenge,
    refuse_unless_open,
)
from app.kit.db import utcnow
from app.kit.error_codes import NO_UNSCORED_RUNS, PRACTICE_OFF
from app.kit.errors import Conflict, NotFound, ValidationFailed
from app.kit.unit_of_work import UnitOfWork
from app.leaderboard import freeze
from app.tenant.service import (
    handle_of,
    handles,
    lock_participant,
    participant_by_handle,
    participant_for_handle,
)

Practiser = TenantKey | SignedInParticipant


@dataclass(frozen=True)
class _Started:
    attempt: Attempt
    handle: str | None
    kind: str


class Started(NamedTuple):
    """A queued unscored run as its starter sees it, and its challenge's kind (the label of
    the run in the service's metrics, once committed)."""

    view: UnscoredRunRead
    kind: str


def _start(
    work: UnitOfWork,
    tenant_id: uuid.UUID,
    challenge_id: uuid.UUID,
    body: KindFieldsBody,
    purpose: RunPurpose,
    handle: str | None,
) -> _Started:
    """Stores a queued unscored run and sends it to a worker once the caller commits."""
    session = work.session
    repo = AttemptRepository(session, tenant_id)
    target = repo.submission_target(challenge_id, handle)
    if target is None:
        raise NotFound("challenge not found")
    challenge_kind = find_kind(target.kind)
    model = unscored_fields(challenge_kind)
    if model is None:
        raise Conflict(
            f"a {target.kind} challenge has no practice or test runs", code=NO_UNSCORED_RUNS
        )
    kind = kind_as(target.kind, AttemptKind)
    fields = kind_fields(kind, target.kind, body, model)
    now = utcnow()
    if purpose is RunPurpose.PRACTICE:
        refuse_unless_open(target, now)
    # The tenant's share of the workers' queue, before anything is written.
    turn = turns.take_turn(repo)
    participant_id: uuid.UUID | None = None
    if purpose is RunPurpose.PRACTICE:
        if handle is None:
            raise ValidationFailed.at(["participant"], "is required when practising with a key")
        participant_id, handle = _practiser(session, tenant_id, target, handle)
        lock_participant(session, tenant_id, participant_id)
        _refuse_past_quota(repo, target, participant_id)
    submitted = kind.unscored(
        UnscoredRequest(
            session=session,
            tenant_id=tenant_id,
            target=target,
            fields=fields,
            config=lambda: config_of(get_challenge(session, tenant_id, challenge_id)),
            purpose=purpose,
            participant_id=participant_id,
        )
    )
    attempt = queued_attempt(
        tenant_id, challenge_id, participant_id, submitted, now, purpose=purpose, turn=turn
    )
    repo.insert_new(attempt)
    work.send_after_commit(RUN_ATTEMPT, str(attempt.id))
    return _Started(attempt, handle, target.kind)


def _practiser(
    session: Session, tenant_id: uuid.UUID, target: SubmissionTarget, handle: str
) -> tuple[uuid.UUID, str]:
    """The participant practising. Practice stays each member's own, in a team too: it is on
    no board, and its quota is each player's (docs/teams.md). A team's name does not practise."""
    if target.participant_is_team:
        raise ValidationFailed.at(
            ["participant"], f"{target.participant_handle} is a team: its members practise"
        )
    if target.participant_id is not None and target.participant_handle is not None:
        return target.participant_id, target.participant_handle
    return participant_for_handle(session, tenant_id, handle)


def _practice_left(
    repo: AttemptRepository,
    limits: LimitsConfig,
    challenge_id: uuid.UUID,
    participant_id: uuid.UUID,
) -> Left:
    quota = LimitsConfig(max_attempts_per_day=limits.max_practice_per_day or None)

    def count(since: datetime | None) -> int:
        return repo.count_counting(
            challenge_id, participant_id, since=since, purpose=RunPurpose.PRACTICE
        )

    return left_under(quota, count, utcnow())


def _refuse_past_quota(
    repo: AttemptRepository, target: SubmissionTarget, participant_id: uuid.UUID
) -> None:
    """409 when the challenge has practice off; 429 (with Retry-After) past the day's quota."""
    per_day = target.limits.max_practice_per_day
    if per_day == 0:
        raise Conflict("this challenge has no practice runs", code=PRACTICE_OFF)
    quota = LimitsConfig(max_attempts_per_day=per_day)
    left = _practice_left(repo, target.limits, target.challenge_id, participant_id)
    refuse_when_none_left(left, quota, "practice", "practice runs", utcnow())


# Views ---------------------------------------------------------------------------------------


def run_view(
    attempt: Attempt,
    kind: str,
    handle: str | None,
    trials: list[Trial],
    audience: Audience,
    *,
    frozen_at: datetime | None = None,
) -> UnscoredRunRead:
    """An unscored run of a challenge of this kind as the reader may see it: its fields as
    the kind shows them (`AttemptKind.shown`); admins see the hidden system prompt, the full
    reason of an error and the judge's details; participants what a trial shows them.
    `frozen_at`: another's run read in its challenge's freeze, shown as it stood then (one
    not finished by then: its trials stored by then, no result)."""
    if frozen_at is not None and (attempt.finished_at is None or attempt.finished_at >= frozen_at):
        return _as_it_stood(attempt, kind, handle, trials, audience, frozen_at)
    views = [trial_view(trial, audience) for trial in trials]
    last = views[-1] if views else None
    full = audience is Audience.ADMIN
    shown = kind_as(kind, AttemptKind).shown(attempt.kind_fields)
    return UnscoredRunRead(
        id=attempt.id,
        challenge_id=attempt.challenge_id,
        purpose=attempt.purpose,
        participant=handle,
        status=attempt.status,
        prompt=shown.prompt,
        model_spec=shown.model_spec,
        kind_fields=shown.kind_fields,
        created_at=attempt.created_at,
        started_at=attempt.started_at,
        finished_at=attempt.finished_at,
        error=attempt.error,
        error_detail=attempt.error_detail if full else None,
        messages=None if last is None else list(last.actor.get("prompt") or []),
        reply=None if last is None else last.actor.get("output"),
        verdict=None
        if last is None
        else {
            "success": last.success,
            "score": last.score,
            "raw_eval_output": last.judge.get("raw_eval_output"),
        },
        metrics=attempt.metrics,
        kind_metrics=attempt.kind_metrics,
        score=attempt.score,
        score_details=attempt.score_details,
        cost_usd=attempt.cost_usd,
        trials=views,
    )


def _as_it_stood(
    attempt: Attempt,
    kind: str,
    handle: str | None,
    trials: list[Trial],
    audience: Audience,
    frozen_at: datetime,
) -> UnscoredRunRead:
    started = attempt.started_at is not None and attempt.started_at < frozen_at
    view = run_view(
        attempt, kind, handle, [t for t in trials if t.created_at < frozen_at], audience
    )
    return view.model_copy(
        update={
            "status": AttemptStatus.RUNNING if started else AttemptStatus.QUEUED,
            "started_at": attempt.started_at if started else None,
            "finished_at": None,
            "error": None,
            "error_detail": None,
            "metrics": None,
            "kind_metrics": None,
            "score": None,
            "score_details": None,
            "cost_usd": None,
        }
    )


def _view(
    session: Session,
    attempt: Attempt,
    kind: str,
    audience: Audience,
    *,
    frozen_at: datetime | None = None,
) -> UnscoredRunRead:
    tenant_id = attempt.tenant_id
    handle = None
    if attempt.participant_id is not None:
        handle = handle_of(session, tenant_id, attempt.participant_id)
    trials = AttemptRepository(session, tenant_id).trials(attempt.id)
    return run_view(attempt, kind, handle, trials, audience, frozen_at=frozen_at)


def _page(
    session: Session,
    tenant_id: uuid.UUID,
    challenge: Challenge,
    purpose: RunPurpose,
    participant_id: uuid.UUID | None,
    audience: Audience,
    *,
    limit: int,
    offset: int,
    frozen_at: datetime | None = None,
) -> UnscoredRunList:
    """`frozen_at`: the runs as they stood at the challenge's freeze then (those started
    since left out)."""
    challenge_id = challenge.id
    repo = AttemptRepository(session, tenant_id)
    rows, total = repo.unscored_page(
        challenge_id,
        purpose,
        participant_id=participant_id,
        limit=limit,
        offset=offset,
        created_before=frozen_at,
    )
    trials = repo.trials_by_attempt([row.id for row in rows])
    owners = [row.participant_id for row in rows if row.participant_id is not None]
    named = handles(session, tenant_id, list(set(owners)))
    items = [
        run_view(
            row,
            challenge.kind,
            None if row.participant_id is None else named.get(row.participant_id, ""),
            trials.get(row.id, []),
            audience,
            frozen_at=frozen_at,
        )
        for row in rows
    ]
    return UnscoredRunList(items=items, total=total, limit=limit, offset=offset)


# Test runs (tenant admins) -----------------------------------------------------------------


def start_test_run(
    work: UnitOfWork, admin: TenantAdmin, challenge_id: uuid.UUID, body: TestRunCreate
) -> Started:
    """Queues a test run of the challenge's configuration on the sample input, whatever the
    challenge's state; read it at `read_test_run`."""
    started = _start(work, admin.tenant_id, challenge_id, body, RunPurpose.TEST, None)
    view = run_view(started.attempt, started.kind, None, [], admin.audience)
    return Started(view, started.kind)


def read_test_run(session: Session, admin: TenantAdmin, run_id: uuid.UUID) -> UnscoredRunRead:
    found = AttemptRepository(session, admin.tenant_id).get_with_kind(run_id, (RunPurpose.TEST,))
    if found is None:
        raise NotFound("test run not found")
    return _view(session, found[0], found[1], admin.audience)


def list_test_runs(
    session: Session, admin: TenantAdmin, challenge_id: uuid.UUID, *, limit: int, offset: int
) -> UnscoredRunList:
    """The challenge's test runs, newest first."""
    challenge = get_challenge(session, admin.tenant_id, challenge_id)
    return _page(
        session,
        admin.tenant_id,
        challenge,
        RunPurpose.TEST,
        None,
        admin.audience,
        limit=limit,
        offset=offset,
    )


# Practice (participants) -------------------------------------------------------------------


def _handle_of(practiser: Practiser, given: str | None) -> str | None:
    """A signed-in participant practises as themselves; a key names the participant."""
    return practiser.handle if isinstance(practiser, SignedInParticipant) else given


def start_practice(
    work: UnitOfWork, practiser: Practiser, challenge_id: uuid.UUID, body: PracticeCreate
) -> Started:
    """Queues a practice run (open challenges, within the day's practice quota)."""
    handle = _handle_of(practiser, body.participant)
    started = _start(work, practiser.tenant_id, challenge_id, body, RunPurpose.PRACTICE, handle)
    view = run_view(started.attempt, started.kind, started.handle, [], practiser.audience)
    return Started(view, started.kind)


def read_practice(
    session: Session, reader: Practiser, run_id: uuid.UUID, *, acting_for: str | None = None
) -> UnscoredRunRead:
    """One practice run: a participant reads only their own (another's answers 404). In a
    freeze, a member key sees a run started before it as it stood then, unless the key acts
    for the run's participant (`acting_for`, their handle); a run started since reads live,
    its id given to its starter alone (as an attempt's)."""
    found = AttemptRepository(session, reader.tenant_id).get_with_kind(
        run_id, (RunPurpose.PRACTICE,)
    )
    if found is None or not _sees(reader, found.attempt):
        raise NotFound("practice run not found")
    frozen = _frozen_for_key(reader, found.freeze_at, found.closes_at)
    if frozen is not None and found.attempt.created_at >= frozen:
        frozen = None
    if frozen is not None and acting_for is not None:
        acting = participant_by_handle(session, reader.tenant_id, acting_for)
        if acting is not None and acting.id == found.attempt.participant_id:
            frozen = None
    return _view(session, found.attempt, found.kind, reader.audience, frozen_at=frozen)


def _frozen_for_key(
    reader: Practiser, freeze_at: datetime | None, closes_at: datetime | None
) -> datetime | None:
    """When the challenge froze, if the reader sees others' practice as it stood then: a
    member key, in the challenge's freeze (a signed-in participant sees only their own,
    admins everything live)."""
    if isinstance(reader, SignedInParticipant) or reader.audience is Audience.ADMIN:
        return None
    return freeze.frozen_at(freeze_at, closes_at, utcnow())


def _sees(reader: Practiser, attempt: Attempt) -> bool:
    if isinstance(reader, SignedInParticipant):
        return attempt.participant_id == reader.participant_id
    return True


def list_practice(
    session: Session,
    reader: Practiser,
    challenge_id: uuid.UUID,
    participant: str | None,
    *,
    limit: int,
    offset: int,
) -> UnscoredRunList:
    """The challenge's practice runs, newest first: a signed-in participant's own, or those
    of the participant a key names (all of them, for a key that names none: for a member
    key, in a freeze, as they stood at the freeze)."""
    challenge = readable_challenge(session, reader.tenant_id, challenge_id, reader.audience)
    participant_id: uuid.UUID | None = None
    if isinstance(reader, SignedInParticipant):
        participant_id = reader.participant_id
    elif participant is not None:
        found = participant_by_handle(session, reader.tenant_id, participant)
        if found is None:
            return UnscoredRunList(items=[], total=0, limit=limit, offset=offset)
        participant_id = found.id
    frozen = None
    if participant_id is None:
        frozen = _frozen_for_key(reader, challenge.freeze_at, challenge.closes_at)
    return _page(
        session,
        reader.tenant_id,
        challenge,
        RunPurpose.PRACTICE,
        participant_id,
        reader.audience,
        limit=limit,
        offset=offset,
        frozen_at=frozen,
    )


def practice_left(
    session: Session, reader: Practiser, challenge_id: uuid.UUID, participant: str | None
) -> PracticeLeft:
    """What the day's practice quota leaves the participant (all of it for a handle that has
    not practised yet)."""
    challenge = readable_challenge(session, reader.tenant_id, challenge_id, reader.audience)
    handle = _handle_of(reader, participant)
    if handle is None:
        raise ValidationFailed.at(["participant"], "is required with a key")
    limits = challenge.limits
    found = participant_by_handle(session, reader.tenant_id, handle)
    repo = AttemptRepository(session, reader.tenant_id)
    if found is None:
        left = left_under(
            LimitsConfig(max_attempts_per_day=limits.max_practice_per_day or None),
            lambda _: 0,
            utcnow(),
        )
    else:
        left = _practice_left(repo, limits, challenge.id, found.id)
    return PracticeLeft(
        participant=found.handle if found is not None else handle,
        max_practice_per_day=limits.max_practice_per_day,
        left_today=left.today if left.today is not None else 0,
        resets_at=left.resets_at,
    )

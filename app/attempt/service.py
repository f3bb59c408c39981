"""Rules of attempts on the request side: submission (limits, idempotency) and read views."""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Callable, Collection, Container, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, NamedTuple

from pydantic import ValidationError
from sqlalchemy.orm import Session

from app.attempt import turns
from app.attempt.attempt_kind import AttemptKind, KindSubmission, Submitted
from app.attempt.dispatch import RUN_ATTEMPT
from app.attempt.metrics import SEALED_MEASURES
from app.attempt.models import ATTEMPT_LEASES, Attempt, AttemptStatus, RunPurpose, Trial
from app.attempt.repository import AttemptRepository, ScoreAtFreeze, SubmissionTarget
from app.attempt.schemas import (
    AttemptCreate,
    AttemptList,
    AttemptRead,
    AttemptsLeft,
    AttemptTrialRead,
    FailedAttempt,
    KindFieldsBody,
    RunRow,
    TrialList,
    TrialRead,
)
from app.auth.subjects import Audience, SignedInParticipant, TenantAdmin, TenantKey
from app.challenge.challenge_kind import ChallengeKind
from app.challenge.config import LimitsConfig
from app.challenge.limits import Left, left_under, refuse_when_none_left
from app.challenge.registry import find_kind, kind_as, kinds_taking, not_for
from app.challenge.service import (
    config_of,
    get_challenge,
    listed_challenges,
    readable_challenge,
    refuse_unless_open,
    sealed_shown,
    sealed_shown_of,
)
from app.competition.service import refuse_unless_accepted
from app.evaluation.engine.storable import SERVED_SECTION_CHARS, bounded_value
from app.kit.config import get_settings
from app.kit.db import TransactionNeeded, autocommits, utcnow
from app.kit.error_codes import IDEMPOTENCY_KEY_REUSED, KIND_TAKES_NO_ATTEMPTS, NOT_IN_ERROR
from app.kit.errors import (
    MISSPELT,
    Conflict,
    Forbidden,
    NotFound,
    ValidationFailed,
    telling_first,
)
from app.kit.unit_of_work import UnitOfWork
from app.leaderboard import freeze
from app.team.service import player_id
from app.tenant.quotas import QuotaReached, count_entry, give_back_entry
from app.tenant.service import (
    entry_names,
    handles,
    lock_participant,
    participant_by_handle,
    participant_for_handle,
)


class StoredSubmission(NamedTuple):
    """The attempt a submission stored, or found stored by an earlier request with its
    Idempotency-Key (a replay), and what the caller does next."""

    attempt: Attempt
    # False on an idempotent replay (the attempt was stored by an earlier request).
    created: bool
    # Whether the attempt's task is sent once the unit of work commits: a new attempt, or a
    # replay of one still queued long after it was last sent (its task may never have left
    # the API that stored it).
    send: bool
    # The participant's handle as first spelled (a body's 'ALICE' is participant 'alice').
    participant_handle: str
    # The challenge's kind (the label of the attempt in the service's metrics).
    kind: str
    # A team's entry: the handle of the member who submitted it; None for one playing alone.
    submitted_by: str | None


def _fingerprint(
    challenge_id: uuid.UUID, participant: str | None, fields: KindSubmission, baseline: bool
) -> str:
    """What makes two requests the same submission: the challenge, the participant as sent,
    the kind's fields as validated and whether it is a baseline."""
    payload = json.dumps(
        {
            "challenge_id": str(challenge_id),
            "participant": participant,
            **fields.model_dump(mode="json"),
            # Only when set: what a submission that is not a baseline hashed to stays so.
            **({"baseline": True} if baseline else {}),
        },
        sort_keys=True,
    ).encode()
    return hashlib.sha256(payload).hexdigest()


def _replay(existing: Attempt, challenge_id: uuid.UUID, fingerprint: str) -> Attempt:
    if existing.challenge_id != challenge_id or existing.request_fingerprint != fingerprint:
        raise Conflict(
            "this Idempotency-Key was already used for a different request; "
            "use a new key for a new attempt",
            code=IDEMPOTENCY_KEY_REUSED,
        )
    return existing


def _replayed(
    repo: AttemptRepository,
    existing: Attempt,
    challenge_id: uuid.UUID,
    fingerprint: str,
    handle: str,
    kind: str,
    submitted_by: str | None,
) -> StoredSubmission:
    attempt = _replay(existing, challenge_id, fingerprint)
    now = utcnow()
    stalled = now - timedelta(seconds=get_settings().queued_requeue_seconds)
    send = repo.mark_resent_if_stalled(attempt.id, now, stalled)
    return StoredSubmission(attempt, False, send, handle, kind, submitted_by)


def submission_target(
    session: Session, tenant_id: uuid.UUID, challenge_id: uuid.UUID, handle: str | None
) -> SubmissionTarget | None:
    """What a submission of any kind checks of its challenge (None: not the tenant's), with
    the handle's participant when it exists: one statement."""
    return AttemptRepository(session, tenant_id).submission_target(challenge_id, handle)


@dataclass(frozen=True, slots=True)
class Player:
    """Whose entry a submission makes: the participant it is recorded under (a team's member
    submits as the team), the name its board row shows, and the member who submitted it."""

    participant_id: uuid.UUID
    handle: str
    # The member who submitted a team's entry; None for a participant playing alone.
    submitted_by_id: uuid.UUID | None


def entry_player(
    session: Session, tenant_id: uuid.UUID, target: SubmissionTarget, handle: str
) -> Player:
    """The player of a submission naming `handle` (created on its first use in the tenant):
    the handle's team in this challenge when it has one, else the handle's participant. A
    team's own name is refused: its members submit for it, each under their own handle."""
    if target.participant_is_team:
        raise ValidationFailed.at(
            ["participant"],
            f"{target.participant_handle} is a team: its members submit its entries, each "
            "naming their own handle",
        )
    # A team's row is held to the commit, as joins and leaves hold it: a join waits for this
    # entry and then sees it (joining closes at a team's first entry), and this entry sees the
    # membership as it stands once any leave has committed. A member who left (or whose team
    # went) between the read and the lock plays alone, below.
    if (
        target.team_id is not None
        and target.participant_id is not None
        and lock_participant(session, tenant_id, target.team_id)
        and player_id(session, tenant_id, target.challenge_id, target.participant_id)
        == target.team_id
    ):
        return Player(target.team_id, target.team_name or "", target.participant_id)
    if target.participant_id is not None and target.participant_handle is not None:
        return Player(target.participant_id, target.participant_handle, None)
    participant_id, first_spelling = participant_for_handle(session, tenant_id, handle)
    return Player(participant_id, first_spelling, None)


def shown_handle(target: SubmissionTarget, handle_given: str | None) -> str:
    """The name a replayed submission answers with: its team's, or its participant's."""
    return target.team_name or target.participant_handle or handle_given or ""


def shown_submitter(target: SubmissionTarget, submitted_by_id: uuid.UUID | None) -> str | None:
    """The member a submission's answer names as the submitter of a team's entry: the handle
    the submission named (a replay's fingerprint covers that handle, so it is the member who
    stored the entry), as first spelled; None for an entry of a participant playing alone."""
    return None if submitted_by_id is None else target.participant_handle


def _refuse_no_attempts(kind: ChallengeKind, target: SubmissionTarget, body: AttemptCreate) -> None:
    """A kind that takes no attempts (only entries of its own) refuses them here, naming the
    first field given and where its entries go."""
    if kind.accepts.attempts:
        return
    field = next(iter(body.kind_fields), "participant")
    where = kind.entries_hint(target.challenge_id)
    raise ValidationFailed.at(
        [field],
        f"this is a {kind.name} challenge: it takes no attempts" + (f"; {where}" if where else ""),
    )


def _submission_fields(kind: ChallengeKind) -> Container[str]:
    if isinstance(kind, AttemptKind) and kind.accepts.attempts:
        return kind.submission_model.model_fields
    return ()


def kind_fields(
    kind: AttemptKind,
    name: str,
    body: KindFieldsBody,
    model: type[KindSubmission] | None = None,
) -> KindSubmission:
    """The body's fields beside `participant`, validated by `model` (the kind's
    `submission_model` by default):
    a 422 naming the field that says most what to fix (a misspelling, with the field it
    probably meant; a field the kind requires; a field only other kinds take, with the
    kinds it is for; then the rest)."""
    try:
        return (model or kind.submission_model).model_validate(body.kind_fields)
    except ValidationError as error:
        # Without the model: a field only other kinds take is named as theirs (below), not
        # taken for a misspelling of one of this kind's.
        # The body's own fields it does not give (`participant`) may be what a misspelling
        # meant.
        unwritten = type(body).model_fields.keys() - body.model_fields_set
        problems = telling_first(error.errors(), body.kind_fields, beside=sorted(unwritten))
    owners = {field: kinds_taking(field, _submission_fields) for field in body.kind_fields}

    def precedence(problem: dict[str, Any]) -> int:
        if problem["type"] == "missing":
            return 1
        if problem["type"] != "extra_forbidden":
            return 4
        if str(problem["msg"]).startswith(MISSPELT):
            return 0
        return 2 if owners.get(str(problem["loc"][0])) else 3

    first = min(problems, key=precedence)
    path = [str(part) for part in first["loc"]]
    if precedence(first) == 2:
        raise not_for(path, owners[path[0]], name)
    raise ValidationFailed.at(path, str(first["msg"]))


def participant_attempts_left(
    session: Session,
    tenant_id: uuid.UUID,
    limits: LimitsConfig,
    challenge_id: uuid.UUID,
    participant_id: uuid.UUID,
) -> Left | None:
    """What the participant (their team, in one) may still submit; None when the challenge
    sets no limit."""
    if not limits.counts_attempts:
        return None
    repo = AttemptRepository(session, tenant_id)
    player = player_id(session, tenant_id, challenge_id, participant_id)
    return left_under(limits, _counter(repo, challenge_id, player), utcnow())


def entrants(
    session: Session,
    tenant_id: uuid.UUID,
    challenge_id: uuid.UUID,
    participant_ids: Collection[uuid.UUID],
) -> set[uuid.UUID]:
    """Those of the participants with an entry (an attempt, not practice) at the challenge."""
    return AttemptRepository(session, tenant_id).entrants(challenge_id, participant_ids)


def players(session: Session, tenant_id: uuid.UUID, challenge_id: uuid.UUID) -> set[uuid.UUID]:
    """Everyone with an attempt (not practice, not a baseline) at the challenge, a team's
    submitting members included."""
    return AttemptRepository(session, tenant_id).players(challenge_id)


def attempts_left(
    session: Session, reader: TenantKey, challenge_id: uuid.UUID, handle: str
) -> AttemptsLeft:
    """What the challenge's limits leave the participant with this handle (their team, in
    one; all of them for a handle that has not played yet)."""
    challenge = readable_challenge(session, reader.tenant_id, challenge_id, reader.audience)
    kind = find_kind(challenge.kind)
    if not kind.accepts.attempts:
        where = kind.entries_hint(challenge.id)
        raise Conflict(
            f"this is a {kind.name} challenge: it takes no attempts"
            + (f"; {where}" if where else ""),
            code=KIND_TAKES_NO_ATTEMPTS,
        )
    limits = challenge.limits
    found = participant_by_handle(session, reader.tenant_id, handle)
    repo = AttemptRepository(session, reader.tenant_id)
    # A member's attempts are their team's.
    player = None if found is None else player_id(session, reader.tenant_id, challenge.id, found.id)
    count = _counter(repo, challenge.id, player) if player is not None else (lambda _: 0)
    left = left_under(limits, count, utcnow())
    return AttemptsLeft(
        participant=found.handle if found is not None else handle,
        max_attempts_total=limits.max_attempts_total,
        max_attempts_per_day=limits.max_attempts_per_day,
        left_total=left.total,
        left_today=left.today,
        resets_at=left.resets_at if limits.max_attempts_per_day is not None else None,
    )


def _counter(
    repo: AttemptRepository, challenge_id: uuid.UUID, participant_id: uuid.UUID
) -> Callable[[datetime | None], int]:
    """The participant's attempts that count against limits (all but those an infrastructure
    error ended), since a time or in all."""
    return lambda since: repo.count_counting(challenge_id, participant_id, since=since)


def _check_limits(
    repo: AttemptRepository, challenge: SubmissionTarget, participant_id: uuid.UUID, now: datetime
) -> None:
    count = _counter(repo, challenge.challenge_id, participant_id)
    left = left_under(challenge.limits, count, now)
    refuse_when_none_left(left, challenge.limits, "attempt", "attempts", now)


def submit_attempt(
    work: UnitOfWork,
    submitter: TenantKey | SignedInParticipant,
    challenge_id: uuid.UUID,
    body: AttemptCreate,
    idempotency_key: str | None,
) -> StoredSubmission:
    """Stores a queued attempt, or finds the one an earlier request with the same
    Idempotency-Key stored (a replay); see `StoredSubmission` for what it returns.

    The task is sent (when `send` says so) once the caller commits the unit of work: the
    worker must find the row when the task arrives. A replay sends again an attempt still
    queued after `queued_requeue_seconds` (as the sweep would), so a client retrying after a
    lost answer never waits for the sweep.
    Each write stands alone (a participant's first attempt makes the participant, which is
    harmless if the attempt then fails), so a session of `get_autocommit_sessionmaker` may
    run it, except for a challenge with attempt limits: those are checked under a lock
    held to the insert, and in such a session TransactionNeeded is raised before any write.
    """
    if body.baseline and not isinstance(submitter, TenantAdmin):
        raise Forbidden("baseline: only a tenant admin key submits baselines")
    tenant_id = submitter.tenant_id
    session = work.session
    submission = _submit(session, tenant_id, challenge_id, body, idempotency_key)
    if submission.send:
        work.send_after_commit(RUN_ATTEMPT, str(submission.attempt.id))
    return submission


def queued_attempt(
    tenant_id: uuid.UUID,
    challenge_id: uuid.UUID,
    participant_id: uuid.UUID | None,
    submitted: Submitted,
    now: datetime,
    **marks: Any,
) -> Attempt:
    """A new attempt of what its kind made of the submission, queued `now`; `marks` are its
    own columns (purpose, baseline, idempotency key and request fingerprint)."""
    return Attempt(
        id=uuid.uuid4(),
        tenant_id=tenant_id,
        challenge_id=challenge_id,
        participant_id=participant_id,
        status=AttemptStatus.QUEUED,
        kind_fields=submitted.kind_fields,
        created_at=now,
        enqueued_at=now,
        run_count=0,
        **marks,
    )


def _submit(
    session: Session,
    tenant_id: uuid.UUID,
    challenge_id: uuid.UUID,
    body: AttemptCreate,
    idempotency_key: str | None,
) -> StoredSubmission:
    repo = AttemptRepository(session, tenant_id)
    challenge = repo.submission_target(challenge_id, body.participant)
    if challenge is None:
        raise NotFound("challenge not found")
    _refuse_no_attempts(find_kind(challenge.kind), challenge, body)
    kind = kind_as(challenge.kind, AttemptKind)
    fields = kind_fields(kind, challenge.kind, body)
    fingerprint = _fingerprint(challenge_id, body.participant, fields, body.baseline)
    if idempotency_key is not None:
        existing = repo.by_idempotency_key(idempotency_key)
        if existing is not None:
            # The fingerprint covers the handle as sent, so it named this participant.
            handle = shown_handle(challenge, body.participant)
            submitter = shown_submitter(challenge, existing.submitted_by_id)
            return _replayed(
                repo, existing, challenge_id, fingerprint, handle, challenge.kind, submitter
            )
    if body.participant is None:
        raise ValidationFailed.at(["participant"], "is required when submitting with a tenant key")
    now = utcnow()
    refuse_unless_open(challenge, now)
    refuse_unless_accepted(
        challenge_id, challenge.rules_sha256, challenge.rules_accepted, baseline=body.baseline
    )
    submitted = kind.submission(
        challenge, fields, lambda: config_of(get_challenge(session, tenant_id, challenge_id))
    )
    limited = challenge.limits.counts_attempts
    quota = challenge.tenant_attempts_per_day
    # Limits and the tenant's day are counted under locks held to the insert, and a team's
    # entry holds the team's row to the commit (`entry_player`): one transaction.
    needs_one = limited or quota is not None or challenge.team_id is not None
    if needs_one and autocommits(session):
        raise TransactionNeeded()
    # The tenant's share of the workers' queue, before anything is written.
    turn = turns.take_turn(repo)
    player = entry_player(session, tenant_id, challenge, body.participant)
    participant_id, handle = player.participant_id, player.handle
    if limited:
        lock_participant(session, tenant_id, participant_id)
        _check_limits(repo, challenge, participant_id, now)
    try:
        count_entry(session, tenant_id, quota, now)
    except QuotaReached:
        # A retry of the request that took the day's last place is that request's replay.
        existing = repo.by_idempotency_key(idempotency_key) if idempotency_key else None
        if existing is None:
            raise
        submitter = shown_submitter(challenge, existing.submitted_by_id)
        return _replayed(
            repo, existing, challenge_id, fingerprint, handle, challenge.kind, submitter
        )
    attempt = queued_attempt(
        tenant_id,
        challenge_id,
        participant_id,
        submitted,
        now,
        baseline=body.baseline,
        idempotency_key=idempotency_key,
        request_fingerprint=fingerprint,
        submitted_by_id=player.submitted_by_id,
        turn=turn,
    )
    if repo.insert_new(attempt):
        submitter = shown_submitter(challenge, attempt.submitted_by_id)
        return StoredSubmission(attempt, True, True, handle, challenge.kind, submitter)
    # Only an Idempotency-Key conflicts: a concurrent request with the same key won the race,
    # and counted the entry.
    assert idempotency_key is not None
    give_back_entry(session, tenant_id, quota, now)
    existing = repo.by_idempotency_key(idempotency_key)
    if existing is None:
        raise RuntimeError(f"Idempotency-Key {idempotency_key!r} conflicted, yet no attempt has it")
    replayed = _replay(existing, challenge_id, fingerprint)
    submitter = shown_submitter(challenge, replayed.submitted_by_id)
    return StoredSubmission(replayed, False, False, handle, challenge.kind, submitter)


def rerun_attempt(work: UnitOfWork, tenant_id: uuid.UUID, attempt_id: uuid.UUID) -> Attempt:
    """Queues an attempt that ended in an infrastructure error again (tenant admin).

    Its stored trials are kept, so the new run continues where the failed one stopped. It is
    sent to a worker once the caller commits.
    """
    session = work.session
    attempt = AttemptRepository(session, tenant_id).get(attempt_id)
    if attempt is None:
        raise NotFound("attempt not found")
    if attempt.status is not AttemptStatus.ERROR:
        raise Conflict(
            f"only attempts that ended in error can be re-run; this one is {attempt.status}",
            code=NOT_IN_ERROR,
        )
    (turn,) = turns.next_turns(AttemptRepository(session, tenant_id), 1)
    _requeue(work, attempt, turn)
    work.session.flush()
    return attempt


# At most this many failed attempts are queued again by one bulk re-run (the rest by the next).
RERUN_FAILED_BATCH = 1000


def rerun_failed(work: UnitOfWork, tenant_id: uuid.UUID, challenge_id: uuid.UUID) -> int:
    """Queues again every attempt of the challenge that ended in error, up to
    RERUN_FAILED_BATCH of them, oldest first; how many (tenant admin)."""
    repo = AttemptRepository(work.session, tenant_id)
    if repo.submission_target(challenge_id, None) is None:
        raise NotFound("challenge not found")
    failed = repo.errored_of_challenge(challenge_id, limit=RERUN_FAILED_BATCH)
    for attempt, turn in zip(failed, turns.next_turns(repo, len(failed)), strict=True):
        _requeue(work, attempt, turn)
    work.session.flush()
    return len(failed)


def _requeue(work: UnitOfWork, attempt: Attempt, turn: int) -> None:
    """Queued again, at `turn`, its finished trials kept; sent to a worker once the caller
    commits."""
    ATTEMPT_LEASES.queue_again(attempt, utcnow())
    attempt.error = None
    attempt.turn = turn
    work.send_after_commit(RUN_ATTEMPT, str(attempt.id))


def _redact_trial(trial: Trial) -> dict[str, Any]:
    """The participant's view of a trial: no system prompt, no verifier or critic internals."""
    actor = dict(trial.actor)
    actor["prompt"] = [m for m in actor.get("prompt") or [] if m.get("role") != "system"]
    judge = {k: v for k, v in trial.judge.items() if k not in ("details", "calls")}
    critic = {k: v for k, v in trial.critic.items() if k != "calls"}
    return {"actor": actor, "judge": judge, "critic": critic}


def trial_view(trial: Trial, audience: Audience) -> TrialRead:
    """A trial as the reader may see it (the API and the web pages), each section bounded:
    trials stored before outputs were capped can be hundreds of megabytes."""
    sections = (
        {"actor": trial.actor, "judge": trial.judge, "critic": trial.critic}
        if audience is Audience.ADMIN
        else _redact_trial(trial)
    )
    sections = {
        name: bounded_value(section, SERVED_SECTION_CHARS) for name, section in sections.items()
    }
    return TrialRead(
        task_index=trial.task_index,
        task_id=trial.task_id,
        index=trial.trial_index,
        success=trial.success,
        score=trial.score,
        sealed=trial.sealed,
        created_at=trial.created_at,
        **sections,
    )


def _shown_kind_metrics(kind_metrics: dict[str, Any] | None, sealed: bool) -> dict[str, Any] | None:
    if sealed or not kind_metrics or SEALED_MEASURES not in kind_metrics:
        return kind_metrics
    return {name: value for name, value in kind_metrics.items() if name != SEALED_MEASURES}


def _stood_at_freeze(attempt: Attempt, frozen_at: datetime | None) -> bool:
    """Whether the attempt reads as it stood when its challenge's freeze began (`frozen_at`):
    it had not finished by then, so what it came to is a result since the freeze."""
    return frozen_at is not None and (
        attempt.finished_at is None or attempt.finished_at >= frozen_at
    )


def _as_it_stood(view: AttemptRead, attempt: Attempt, frozen_at: datetime) -> AttemptRead:
    """The attempt as it stood at `frozen_at`, which it had not finished by: running if it
    had started, else queued; no result, no progress, no end."""
    started = attempt.started_at is not None and attempt.started_at < frozen_at
    return view.model_copy(
        update={
            "status": AttemptStatus.RUNNING if started else AttemptStatus.QUEUED,
            "started_at": attempt.started_at if started else None,
            "finished_at": None,
            "progress": None,
            "error": None,
            "metrics": None,
            "kind_metrics": None,
            "score": None,
            "score_details": None,
        }
    )


def to_view(
    attempt: Attempt,
    kind: str,
    handle: str,
    trials: list[Trial] | None,
    audience: Audience,
    *,
    sealed: bool,
    submitted_by: str | None,
    frozen_at: datetime | None = None,
    score_at_freeze: ScoreAtFreeze | None = None,
) -> AttemptRead:
    """What a reader sees of an attempt of a challenge of this kind: its submission as the
    kind shows it (`AttemptKind.shown`); tenant admins also get the full reason of an error,
    the spend and every trial's hidden parts; `sealed`: whether the reader sees its
    challenge's sealed results (`sealed_shown`: its measures on a private part; `trials`
    come already chosen); `submitted_by`: the member who submitted a team's entry;
    `frozen_at`: the attempt is another's, read in its challenge's freeze, so it shows as it
    stood then (`_stood_at_freeze`), with the score it had then if a rescore has changed it
    since (`score_at_freeze`, kept for that `frozen_at`). The one place that decides it."""
    full = audience is Audience.ADMIN
    trial_views = None if trials is None else [trial_view(t, audience) for t in trials]
    shown = kind_as(kind, AttemptKind).shown(attempt.kind_fields)
    view = AttemptRead(
        id=attempt.id,
        challenge_id=attempt.challenge_id,
        participant_id=attempt.participant_id,
        participant=handle,
        submitted_by=submitted_by,
        status=attempt.status,
        prompt=shown.prompt,
        model_spec=shown.model_spec,
        kind_fields=shown.kind_fields,
        baseline=attempt.baseline,
        progress=attempt.progress,
        created_at=attempt.created_at,
        started_at=attempt.started_at,
        finished_at=attempt.finished_at,
        error=attempt.error,
        error_detail=attempt.error_detail if full else None,
        spent_usd=attempt.spent_usd if full else None,
        metrics=attempt.metrics,
        kind_metrics=_shown_kind_metrics(attempt.kind_metrics, sealed),
        score=attempt.score,
        score_details=attempt.score_details,
        trials=trial_views,
    )
    if frozen_at is not None and _stood_at_freeze(attempt, frozen_at):
        return _as_it_stood(view, attempt, frozen_at)
    if frozen_at is not None and score_at_freeze is not None:
        return view.model_copy(update=score_at_freeze._asdict())
    return view


# Reads of the API ----------------------------------------------------------------------------


def get_attempt(session: Session, tenant_id: uuid.UUID, attempt_id: uuid.UUID) -> Attempt:
    attempt = AttemptRepository(session, tenant_id).get(attempt_id)
    if attempt is None:
        raise NotFound("attempt not found")
    return attempt


def _frozen_for(
    session: Session,
    reader: TenantKey,
    attempt: Attempt,
    freeze_at: datetime | None,
    closes_at: datetime | None,
    acting_for: str | None,
) -> datetime | None:
    """When the attempt's challenge froze, if the reader sees the attempt as it stood then:
    a member key, in the freeze, reading an attempt submitted before it, unless the key acts
    for the attempt's participant (`acting_for` names them, or their team's member). An
    attempt submitted in the freeze reads live: its id was given to its submitter alone (no
    list, board or page shows it to anyone else until the close)."""
    if reader.audience is Audience.ADMIN:
        return None
    frozen = freeze.frozen_at(freeze_at, closes_at, utcnow())
    if frozen is None or attempt.created_at >= frozen:
        return None
    if acting_for is not None:
        found = participant_by_handle(session, reader.tenant_id, acting_for)
        if found is not None and attempt.participant_id == player_id(
            session, reader.tenant_id, attempt.challenge_id, found.id
        ):
            return None
    return frozen


def read_attempt(
    session: Session, reader: TenantKey, attempt_id: uuid.UUID, *, acting_for: str | None = None
) -> AttemptRead:
    """One attempt as the reader may see it, with its trials unless its kind's attempts have
    many (tasks times k): those are paged at `read_trials`. In a freeze, a member key sees
    another's attempt as it stood then (`_frozen_for`)."""
    repo = AttemptRepository(session, reader.tenant_id)
    found = repo.get_with_kind(attempt_id)
    if found is None:
        raise NotFound("attempt not found")
    attempt, kind = found.attempt, found.kind
    names = entry_names(session, reader.tenant_id, [(attempt.entrant_id, attempt.submitted_by_id)])
    # Read with the attempt: a polled read pays no query for it.
    sealed = sealed_shown(found.closes_at, reader.audience)
    frozen = _frozen_for(session, reader, attempt, found.freeze_at, found.closes_at, acting_for)
    with_trials = kind_as(kind, AttemptKind).reads_show_trials
    trials = (
        repo.trials(attempt.id, with_sealed=sealed, stored_before=frozen) if with_trials else None
    )
    kept = {} if frozen is None else repo.scores_at_freeze({attempt.id: frozen})
    return to_view(
        attempt,
        kind,
        names.of(attempt.entrant_id),
        trials,
        reader.audience,
        sealed=sealed,
        submitted_by=names.submitter(attempt.submitted_by_id),
        frozen_at=frozen,
        score_at_freeze=kept.get(attempt.id),
    )


def _sealed_shown(session: Session, reader: TenantKey, challenge_id: uuid.UUID) -> bool:
    return challenge_id in sealed_shown_of(
        session, reader.tenant_id, [challenge_id], reader.audience
    )


def read_trials(
    session: Session,
    reader: TenantKey,
    attempt_id: uuid.UUID,
    *,
    task_index: int | None,
    limit: int,
    offset: int,
    acting_for: str | None = None,
) -> TrialList:
    """A page of an attempt's trials as the reader may see them (in a freeze, a member key
    sees those of another's attempt stored by then: `_frozen_for`)."""
    repo = AttemptRepository(session, reader.tenant_id)
    found = repo.get_with_kind(attempt_id)
    if found is None:
        raise NotFound("attempt not found")
    attempt = found.attempt
    frozen = _frozen_for(session, reader, attempt, found.freeze_at, found.closes_at, acting_for)
    rows, total = repo.trials_page(
        attempt.id,
        task_index=task_index,
        limit=limit,
        offset=offset,
        with_sealed=sealed_shown(found.closes_at, reader.audience),
        stored_before=frozen,
    )
    return TrialList(
        items=[trial_view(t, reader.audience) for t in rows],
        total=total,
        limit=limit,
        offset=offset,
    )


def list_attempts(
    session: Session,
    reader: TenantKey,
    *,
    challenge_id: uuid.UUID | None = None,
    participant: str | None = None,
    status: AttemptStatus | None = None,
    limit: int,
    offset: int,
) -> AttemptList:
    """The tenant's attempts, newest first, filtered by challenge, participant handle, status
    (another tenant's challenge id finds none). A member key naming no participant sees the
    attempts of a challenge frozen now as they stood at the freeze: those submitted since
    left out, those then unfinished without what they came to. Naming one, it acts for them:
    their attempts are theirs to see live."""
    tenant_id = reader.tenant_id
    participant_id = None
    if participant is not None:
        found = participant_by_handle(session, tenant_id, participant)
        if found is None:
            return AttemptList(items=[], total=0, limit=limit, offset=offset)
        participant_id = found.id
    as_at_freezes = (
        utcnow() if participant_id is None and reader.audience is not Audience.ADMIN else None
    )
    rows, total = AttemptRepository(session, tenant_id).page(
        limit=limit,
        offset=offset,
        challenge_id=challenge_id,
        participant_id=participant_id,
        status=status,
        as_at_freezes=as_at_freezes,
    )
    items = _list_views(session, reader, rows, as_at_freezes=as_at_freezes)
    return AttemptList(items=items, total=total, limit=limit, offset=offset)


def _list_views(
    session: Session,
    reader: TenantKey,
    rows: Sequence[Attempt],
    *,
    as_at_freezes: datetime | None = None,
) -> list[AttemptRead]:
    """Attempts as a reader sees them in lists (no trials); `as_at_freezes` (now): those of
    challenges frozen now as they stood at the freeze."""
    tenant_id = reader.tenant_id
    names = entry_names(session, tenant_id, [(a.entrant_id, a.submitted_by_id) for a in rows])
    challenge_ids = {a.challenge_id for a in rows}
    challenges = listed_challenges(session, tenant_id, challenge_ids, reader.audience)
    frozen = {}
    if as_at_freezes is not None:
        frozen = {
            challenge_id: freeze.frozen_at(freeze_at, closes_at, as_at_freezes)
            for challenge_id, (freeze_at, closes_at) in challenges.freezes.items()
        }
    kept = AttemptRepository(session, tenant_id).scores_at_freeze(
        {a.id: at for a in rows if (at := frozen.get(a.challenge_id)) is not None}
    )
    return [
        to_view(
            a,
            challenges.kinds[a.challenge_id],
            names.of(a.entrant_id),
            None,
            reader.audience,
            sealed=a.challenge_id in challenges.sealed_shown,
            submitted_by=names.submitter(a.submitted_by_id),
            frozen_at=frozen.get(a.challenge_id),
            score_at_freeze=kept.get(a.id),
        )
        for a in rows
    ]


def list_challenge_attempts(
    session: Session,
    reader: TenantKey,
    challenge_id: uuid.UUID,
    *,
    participant: str | None = None,
    status: AttemptStatus | None = None,
    limit: int,
    offset: int,
) -> AttemptList:
    """The attempts of one challenge (404 if the challenge is not the tenant's)."""
    get_challenge(session, reader.tenant_id, challenge_id)
    return list_attempts(
        session,
        reader,
        challenge_id=challenge_id,
        participant=participant,
        status=status,
        limit=limit,
        offset=offset,
    )


# A challenge's attempts and trials in submission order, a batch at a time (the exports).
AttemptsCursor = tuple[datetime, uuid.UUID]
TrialsCursor = tuple[datetime, uuid.UUID, int, int]


def attempts_in_order(
    session: Session,
    reader: TenantKey,
    challenge_id: uuid.UUID,
    *,
    after: AttemptsCursor | None,
    limit: int,
) -> tuple[list[AttemptRead], AttemptsCursor | None]:
    """Up to `limit` of the challenge's attempts after the cursor, oldest first, as the
    reader sees them in lists (no trials), and the cursor of the last."""
    rows = AttemptRepository(session, reader.tenant_id).in_submission_order(
        challenge_id, after, limit
    )
    last = (rows[-1].created_at, rows[-1].id) if rows else None
    return _list_views(session, reader, rows), last


def trials_in_order(
    session: Session,
    reader: TenantKey,
    challenge_id: uuid.UUID,
    *,
    after: TrialsCursor | None,
    limit: int,
) -> tuple[list[AttemptTrialRead], TrialsCursor | None]:
    """Up to `limit` trials of the challenge's attempts after the cursor (attempts oldest
    first, then by task and index), as the reader sees them, and the cursor of the last."""
    tenant_id = reader.tenant_id
    rows = AttemptRepository(session, tenant_id).trials_in_submission_order(
        challenge_id, after, limit, with_sealed=_sealed_shown(session, reader, challenge_id)
    )
    named = handles(session, tenant_id, list({participant for _, _, participant in rows}))
    items = [
        AttemptTrialRead(
            **dict(trial_view(trial, reader.audience)),
            attempt_id=trial.attempt_id,
            participant=named.get(participant, ""),
        )
        for trial, _, participant in rows
    ]
    if not rows:
        return items, None
    trial, created_at, _ = rows[-1]
    return items, (created_at, trial.attempt_id, trial.task_index, trial.trial_index)


def rerun_view(work: UnitOfWork, admin: TenantAdmin, attempt_id: uuid.UUID) -> AttemptRead:
    """Re-runs an attempt that ended in error (see `rerun_attempt`); returns the admin's view."""
    attempt = rerun_attempt(work, admin.tenant_id, attempt_id)
    return _list_views(work.session, admin, [attempt])[0]


# Reads of the web UI (a participant's own attempts; a tenant admin's overview) -----------------


def find_attempt(session: Session, tenant_id: uuid.UUID, attempt_id: uuid.UUID) -> Attempt | None:
    return AttemptRepository(session, tenant_id).get(attempt_id)


def participant_attempts(
    session: Session,
    tenant_id: uuid.UUID,
    challenge_id: uuid.UUID,
    participant_id: uuid.UUID,
    *,
    limit: int,
    offset: int,
) -> tuple[list[Attempt], int]:
    """One participant's attempts at one challenge, newest first, and how many there are."""
    return AttemptRepository(session, tenant_id).of_participant(
        challenge_id, participant_id, limit=limit, offset=offset
    )


def participant_attempts_by_ids(
    session: Session,
    tenant_id: uuid.UUID,
    challenge_id: uuid.UUID,
    participant_id: uuid.UUID,
    attempt_ids: Sequence[uuid.UUID],
) -> list[Attempt]:
    """Those of the given attempts that are the participant's, at this challenge."""
    return AttemptRepository(session, tenant_id).of_participant_by_ids(
        challenge_id, participant_id, attempt_ids
    )


def attempt_counts(
    session: Session,
    tenant_id: uuid.UUID,
    participant_id: uuid.UUID,
    challenge_ids: Sequence[uuid.UUID],
) -> dict[uuid.UUID, int]:
    return AttemptRepository(session, tenant_id).counts_of_participant(
        participant_id, challenge_ids
    )


def trials_by_attempt(
    session: Session,
    tenant_id: uuid.UUID,
    attempt_ids: Sequence[uuid.UUID],
    *,
    with_sealed: bool,
) -> dict[uuid.UUID, list[Trial]]:
    return AttemptRepository(session, tenant_id).trials_by_attempt(
        attempt_ids, with_sealed=with_sealed
    )


def task_trials(
    session: Session,
    tenant_id: uuid.UUID,
    attempt_id: uuid.UUID,
    task_index: int,
    *,
    limit: int,
    with_sealed: bool,
) -> list[Trial]:
    rows, _ = AttemptRepository(session, tenant_id).trials_page(
        attempt_id, task_index=task_index, limit=limit, offset=0, with_sealed=with_sealed
    )
    return rows


def runs(
    session: Session, tenant_id: uuid.UUID, attempt_ids: Sequence[uuid.UUID]
) -> dict[uuid.UUID, RunRow]:
    return AttemptRepository(session, tenant_id).runs(attempt_ids)


def tasks_page(
    session: Session,
    tenant_id: uuid.UUID,
    attempt_id: uuid.UUID,
    *,
    limit: int,
    offset: int,
    with_sealed: bool,
) -> tuple[list[tuple[int, str, dict[str, Any] | None]], int]:
    return AttemptRepository(session, tenant_id).tasks_page(
        attempt_id, limit=limit, offset=offset, with_sealed=with_sealed
    )


def task(
    session: Session,
    tenant_id: uuid.UUID,
    attempt_id: uuid.UUID,
    task_index: int,
    *,
    with_sealed: bool,
) -> tuple[str, dict[str, Any] | None] | None:
    return AttemptRepository(session, tenant_id).task(
        attempt_id, task_index, with_sealed=with_sealed
    )


def status_counts(
    session: Session, tenant_id: uuid.UUID, challenge_ids: Sequence[uuid.UUID]
) -> dict[uuid.UUID, dict[AttemptStatus, int]]:
    return AttemptRepository(session, tenant_id).status_counts(challenge_ids)


def challenge_spend(
    session: Session, tenant_id: uuid.UUID, challenge_id: uuid.UUID
) -> dict[RunPurpose, tuple[int, float]]:
    """Per purpose of the challenge's runs (entries, practice, test runs): how many, and what
    their model calls cost (USD; calls without a known price count as the budget counts
    them)."""
    return AttemptRepository(session, tenant_id).spend_by_purpose(challenge_id)


def challenge_entrants(
    session: Session, tenant_id: uuid.UUID, challenge_id: uuid.UUID, *, limit: int
) -> tuple[list[tuple[uuid.UUID, int, datetime]], int]:
    """The challenge's participants with attempts (its console): see
    `AttemptRepository.entrants_of`."""
    return AttemptRepository(session, tenant_id).entrants_of(challenge_id, limit=limit)


def participant_activity(
    session: Session, tenant_id: uuid.UUID, participant_ids: Sequence[uuid.UUID]
) -> dict[uuid.UUID, tuple[int, datetime]]:
    """How many attempts each of these participants submitted, and when the newest was (those
    without any are left out)."""
    return AttemptRepository(session, tenant_id).activity_of(participant_ids)


def participant_attempts_everywhere(
    session: Session, tenant_id: uuid.UUID, participant_id: uuid.UUID, *, limit: int, offset: int
) -> tuple[list[Attempt], int]:
    """A page of the participant's attempts in every challenge, newest first, and how many
    there are."""
    return AttemptRepository(session, tenant_id).page(
        limit=limit, offset=offset, participant_id=participant_id
    )


def recent_errors(session: Session, tenant_id: uuid.UUID, *, limit: int) -> list[FailedAttempt]:
    return AttemptRepository(session, tenant_id).recent_errors(limit=limit)

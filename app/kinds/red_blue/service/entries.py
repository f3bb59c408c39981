"""Defenses and attacks: submitting them (limits, schedule, idempotency), their views and
reads, what a participant has left, and re-running a self-test that ended in error."""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy.orm import Session

from app.kinds.api import (
    Conflict,
    Forbidden,
    LimitsConfig,
    NotFound,
    QuotaReached,
    SignedInParticipant,
    SubmissionTarget,
    TenantAdmin,
    TenantKey,
    UnitOfWork,
    ValidationFailed,
    get_settings,
)
from app.kinds.api.error_codes import IDEMPOTENCY_KEY_REUSED, NOT_IN_ERROR
from app.kinds.api.services import (
    EntryNames,
    Left,
    count_entry,
    entry_names,
    entry_player,
    get_challenge,
    give_back_entry,
    left_under,
    lock_participant,
    player_id,
    refuse_unless_accepted,
    refuse_unless_open,
    refuse_when_none_left,
    shown_handle,
    shown_submitter,
    submission_target,
)
from app.kinds.api.storage import Challenge, utcnow
from app.kinds.red_blue.config import RedBlueLimitFields, text_limit
from app.kinds.red_blue.dispatch import PAIR_ATTACK, SELF_TEST
from app.kinds.red_blue.models import Attack, Defense, DefenseStatus, Match, MatchStatus
from app.kinds.red_blue.readers import Reader
from app.kinds.red_blue.repository import RedBlueRepository
from app.kinds.red_blue.schemas import (
    AttackCreate,
    AttackRead,
    DefenseCreate,
    DefenseRead,
    MatchCounts,
)
from app.kinds.red_blue.service.access import KIND_NAME, reader_for, reader_of
from app.kinds.red_blue.service.matches import _entrant

# Submissions --------------------------------------------------------------------------------


@dataclass(frozen=True)
class EntrySubmission:
    """A stored defense or attack; `created` is False on an Idempotency-Key replay."""

    entry: Defense | Attack
    created: bool
    participant_handle: str
    # A team's entry: the handle of the member who submitted it; None for one playing alone.
    submitted_by: str | None

    @property
    def names(self) -> EntryNames:
        """Its participant's and submitter's handles, as the submission found them."""
        named = {self.entry.participant_id: self.participant_handle}
        if self.entry.submitted_by_id is not None and self.submitted_by is not None:
            named[self.entry.submitted_by_id] = self.submitted_by
        return EntryNames(named)


def not_red_blue(challenge_kind: str, field: str, what: str) -> ValidationFailed:
    return ValidationFailed.at(
        [field],
        f"{what} are for red_blue challenges; this is a {challenge_kind} challenge "
        "(submit attempts at POST /v1/challenges/{id}/attempts)",
    )


def _fingerprint(challenge_id: uuid.UUID, body: DefenseCreate | AttackCreate) -> str:
    # `baseline` only when set: what an entry that is not one hashed to stays so.
    fields = body.model_dump(exclude=None if body.baseline else {"baseline"})
    payload = json.dumps({"challenge_id": str(challenge_id), **fields}, sort_keys=True).encode()
    return hashlib.sha256(payload).hexdigest()


def _checked_text(text: str, limit: int | None, field: str) -> None:
    allowed = text_limit(limit, get_settings().max_prompt_chars)
    if len(text) > allowed:
        raise ValidationFailed.at(
            [field], f"is {len(text)} characters; this challenge allows at most {allowed}"
        )


def check_entry_lengths(limits: LimitsConfig, *, defense: str, attack: str) -> None:
    """A defense and an attack within the challenge's lengths (a 422 naming the field)."""
    own = RedBlueLimitFields.of(limits)
    _checked_text(defense, own.max_defense_chars, "system_prompt")
    _checked_text(attack, own.max_attack_chars, "prompt")


def own_defense_text(
    session: Session, tenant_id: uuid.UUID, challenge_id: uuid.UUID, participant_id: uuid.UUID
) -> str | None:
    """The system prompt of the participant's newest active defense here, if any."""
    return RedBlueRepository(session, tenant_id).newest_active_defense_text(
        challenge_id, participant_id
    )


def _submit(
    work: UnitOfWork,
    submitter: TenantKey | SignedInParticipant,
    challenge_id: uuid.UUID,
    body: DefenseCreate | AttackCreate,
    idempotency_key: str | None,
) -> EntrySubmission:
    if body.baseline and not isinstance(submitter, TenantAdmin):
        raise Forbidden("baseline: only a tenant admin key submits baselines")
    session = work.session
    tenant_id = submitter.tenant_id
    is_defense = isinstance(body, DefenseCreate)
    field, what = ("system_prompt", "defenses") if is_defense else ("prompt", "attacks")
    handle_given = (
        submitter.handle if isinstance(submitter, SignedInParticipant) else body.participant
    )
    repo = RedBlueRepository(session, tenant_id)
    target = submission_target(session, tenant_id, challenge_id, handle_given)
    if target is None:
        raise NotFound("challenge not found")
    if target.kind != KIND_NAME:
        raise not_red_blue(target.kind, field, what)
    fingerprint = _fingerprint(challenge_id, body)
    by_key = repo.defense_by_key if is_defense else repo.attack_by_key
    if idempotency_key is not None:
        existing = by_key(idempotency_key)
        if existing is not None:
            return _replay(existing, challenge_id, fingerprint, target, handle_given)
    if handle_given is None:
        raise ValidationFailed.at(["participant"], "is required when submitting with a tenant key")
    text = body.system_prompt if isinstance(body, DefenseCreate) else body.prompt
    limits = target.limits
    own = RedBlueLimitFields.of(limits)
    _checked_text(text, own.max_defense_chars if is_defense else own.max_attack_chars, field)
    now = utcnow()
    refuse_unless_open(target, now)
    refuse_unless_accepted(
        challenge_id, target.rules_sha256, target.rules_accepted, baseline=body.baseline
    )
    # A team's member submits as the team: one side of every match, never against itself.
    player = entry_player(session, tenant_id, target, handle_given)
    participant_id, handle = player.participant_id, player.handle
    if limits.counts_attempts:
        lock_participant(session, tenant_id, participant_id)
        counter = repo.count_defenses if is_defense else repo.count_attacks
        left = left_under(limits, lambda since: counter(challenge_id, participant_id, since), now)
        refuse_when_none_left(left, limits, what.removesuffix("s"), what, now)
    quota = target.tenant_attempts_per_day
    try:
        count_entry(session, tenant_id, quota, now)
    except QuotaReached:
        # A retry of the request that took the day's last place is that request's replay.
        earlier = by_key(idempotency_key) if idempotency_key else None
        if earlier is None:
            raise
        return _replay(earlier, challenge_id, fingerprint, target, handle_given)
    common: dict[str, Any] = {
        "id": uuid.uuid4(),
        "tenant_id": tenant_id,
        "challenge_id": challenge_id,
        "participant_id": participant_id,
        "idempotency_key": idempotency_key,
        "request_fingerprint": fingerprint,
        "created_at": now,
        "enqueued_at": now,
        "baseline": body.baseline,
        "submitted_by_id": player.submitted_by_id,
    }
    entry: Defense | Attack
    if isinstance(body, DefenseCreate):
        entry = Defense(
            **common, system_prompt=body.system_prompt, status=DefenseStatus.PENDING, run_count=0
        )
    else:
        entry = Attack(**common, prompt=body.prompt)
    if repo.insert_entry(entry):
        work.send_after_commit(SELF_TEST if is_defense else PAIR_ATTACK, str(entry.id))
        return EntrySubmission(entry, True, handle, shown_submitter(target, entry.submitted_by_id))
    # Only an Idempotency-Key conflicts: a concurrent request with the same key won the race,
    # and counted the entry.
    assert idempotency_key is not None
    give_back_entry(session, tenant_id, quota, now)
    existing = by_key(idempotency_key)
    if existing is None:
        raise RuntimeError(f"Idempotency-Key {idempotency_key!r} conflicted, yet nothing has it")
    return _replay(existing, challenge_id, fingerprint, target, handle_given)


def _replay(
    existing: Defense | Attack,
    challenge_id: uuid.UUID,
    fingerprint: str,
    target: SubmissionTarget,
    handle_given: str | None,
) -> EntrySubmission:
    if existing.challenge_id != challenge_id or existing.request_fingerprint != fingerprint:
        raise Conflict(
            "this Idempotency-Key was already used for a different request; "
            "use a new key for a new submission",
            code=IDEMPOTENCY_KEY_REUSED,
        )
    return EntrySubmission(
        existing,
        False,
        shown_handle(target, handle_given),
        shown_submitter(target, existing.submitted_by_id),
    )


def players(session: Session, tenant_id: uuid.UUID, challenge_id: uuid.UUID) -> set[uuid.UUID]:
    """Everyone with a defense or an attack (not a baseline) at the challenge."""
    return RedBlueRepository(session, tenant_id).players(challenge_id)


def entrants(
    session: Session,
    tenant_id: uuid.UUID,
    challenge_id: uuid.UUID,
    participant_ids: Collection[uuid.UUID],
) -> set[uuid.UUID]:
    """Those of the participants with a defense or an attack at the challenge."""
    return RedBlueRepository(session, tenant_id).entrants(challenge_id, participant_ids)


def submit_defense(
    work: UnitOfWork,
    submitter: TenantKey | SignedInParticipant,
    challenge_id: uuid.UUID,
    body: DefenseCreate,
    idempotency_key: str | None = None,
) -> EntrySubmission:
    """Stores a pending defense; its self-test is sent to a worker once the caller commits.
    A signed-in participant submits as themselves (the body's `participant` is ignored)."""
    return _submit(work, submitter, challenge_id, body, idempotency_key)


def submit_attack(
    work: UnitOfWork,
    submitter: TenantKey | SignedInParticipant,
    challenge_id: uuid.UUID,
    body: AttackCreate,
    idempotency_key: str | None = None,
) -> EntrySubmission:
    """Stores an attack; its pairing is sent to a worker once the caller commits."""
    return _submit(work, submitter, challenge_id, body, idempotency_key)


# Views --------------------------------------------------------------------------------------


def _counts(counts: Mapping[MatchStatus, int]) -> MatchCounts:
    return MatchCounts(**{status.value: count for status, count in counts.items()})


def defense_view(
    defense: Defense,
    names: EntryNames,
    reader: Reader,
    counts: Mapping[MatchStatus, int] | None = None,
) -> DefenseRead:
    """A defense as the reader sees it; `names` hold its participant's and its submitter's
    handles (`entry_names`). A self-test or a pairing the reader does not see yet (in a
    freeze) leaves it pending, not paired."""
    texts = reader.sees_texts_of(defense.participant_id)
    tested = reader.settled(defense, defense.finished_at)
    return DefenseRead(
        id=defense.id,
        challenge_id=defense.challenge_id,
        participant=names.of(defense.participant_id),
        submitted_by=names.submitter(defense.submitted_by_id),
        status=defense.status if tested else DefenseStatus.PENDING,
        system_prompt=defense.system_prompt if texts else None,
        reason=defense.reason if tested else None,
        error_detail=defense.error_detail if reader.admin else None,
        self_test_output=defense.self_test_output if texts and tested else None,
        created_at=defense.created_at,
        finished_at=defense.finished_at if tested else None,
        paired=defense.paired_at is not None and reader.settled(defense, defense.paired_at),
        matches=None if counts is None else _counts(counts),
        baseline=defense.baseline,
    )


def attack_view(
    attack: Attack,
    names: EntryNames,
    reader: Reader,
    counts: Mapping[MatchStatus, int] | None = None,
) -> AttackRead:
    """An attack as the reader sees it; `names` as `defense_view`'s."""
    paired = attack.paired_at is not None and reader.settled(attack, attack.paired_at)
    return AttackRead(
        id=attack.id,
        challenge_id=attack.challenge_id,
        participant=names.of(attack.participant_id),
        submitted_by=names.submitter(attack.submitted_by_id),
        prompt=attack.prompt if reader.sees_texts_of(attack.participant_id) else None,
        status="paired" if paired else "pending",
        created_at=attack.created_at,
        paired=paired,
        matches=None if counts is None else _counts(counts),
        baseline=attack.baseline,
    )


# Reads (tenant keys and signed-in participants) ---------------------------------------------


def _entry_read(
    session: Session,
    subject: TenantKey | SignedInParticipant,
    entry: Defense | Attack,
    what: str,
    acting_for: str | None,
) -> tuple[Reader, dict[MatchStatus, int], EntryNames]:
    """The reader of an entry read by id, its match counts and names; 404 for an entry the
    reader does not see (another's, made after the freeze they see)."""
    challenge = get_challenge(session, subject.tenant_id, entry.challenge_id)
    reader = reader_for(session, challenge, subject, acting_for=acting_for)
    if not reader.sees(entry):
        raise NotFound(f"{what} not found")
    column = Match.defense_id if isinstance(entry, Defense) else Match.attack_id
    counts = RedBlueRepository(session, subject.tenant_id).match_counts(column, entry.id, reader)
    return reader, counts, entry_names(session, subject.tenant_id, [_entrant(entry)])


def read_defense(
    session: Session,
    subject: TenantKey | SignedInParticipant,
    defense_id: uuid.UUID,
    *,
    acting_for: str | None = None,
) -> DefenseRead:
    """A defense as the subject sees it (`acting_for`: the participant a member key reads
    for, `reader_for`)."""
    defense = RedBlueRepository(session, subject.tenant_id).defense(defense_id)
    if defense is None:
        raise NotFound("defense not found")
    reader, counts, names = _entry_read(session, subject, defense, "defense", acting_for)
    return defense_view(defense, names, reader, counts)


def read_attack(
    session: Session,
    subject: TenantKey | SignedInParticipant,
    attack_id: uuid.UUID,
    *,
    acting_for: str | None = None,
) -> AttackRead:
    """An attack as the subject sees it (`acting_for` as `read_defense`'s)."""
    attack = RedBlueRepository(session, subject.tenant_id).attack(attack_id)
    if attack is None:
        raise NotFound("attack not found")
    reader, counts, names = _entry_read(session, subject, attack, "attack", acting_for)
    return attack_view(attack, names, reader, counts)


def entries_left(
    session: Session, challenge: Challenge, participant_id: uuid.UUID
) -> tuple[Left | None, Left | None]:
    """What the challenge's limits leave the participant of defenses and of attacks (each side
    counted apart, as submissions count them; a member's are the team's); None when it sets no
    limit."""
    limits = challenge.limits
    if not limits.counts_attempts:
        return None, None
    repo = RedBlueRepository(session, challenge.tenant_id)
    participant_id = player_id(session, challenge.tenant_id, challenge.id, participant_id)
    now = utcnow()
    return (
        left_under(
            limits, lambda since: repo.count_defenses(challenge.id, participant_id, since), now
        ),
        left_under(
            limits, lambda since: repo.count_attacks(challenge.id, participant_id, since), now
        ),
    )


def participant_entries(
    session: Session,
    subject: SignedInParticipant,
    challenge: Challenge,
    participant_id: uuid.UUID,
    *,
    limit: int = 20,
) -> tuple[list[DefenseRead], list[AttackRead]]:
    """One participant's newest defenses and attacks at a challenge (the web UI's own
    column), as the subject may see them."""
    repo = RedBlueRepository(session, subject.tenant_id)
    reader = reader_for(session, challenge, subject)
    defenses, attacks = repo.entries_of(challenge.id, participant_id, reader, limit=limit)
    names = entry_names(
        session, subject.tenant_id, [*map(_entrant, defenses), *map(_entrant, attacks)]
    )
    return (
        [defense_view(d, names, reader) for d in defenses],
        [attack_view(a, names, reader) for a in attacks],
    )


def rerun_defense(work: UnitOfWork, admin: TenantKey, defense_id: uuid.UUID) -> DefenseRead:
    """Runs the self-test of a defense that ended in error again."""
    repo = RedBlueRepository(work.session, admin.tenant_id)
    defense = repo.defense(defense_id)
    if defense is None:
        raise NotFound("defense not found")
    if defense.status is not DefenseStatus.ERROR:
        raise Conflict(
            f"only defenses whose self-test ended in error can be re-run; this one is "
            f"{defense.status}",
            code=NOT_IN_ERROR,
        )
    repo.requeue_defense(defense, utcnow())
    work.send_after_commit(SELF_TEST, str(defense.id))
    names = entry_names(work.session, admin.tenant_id, [_entrant(defense)])
    return defense_view(defense, names, reader_of(admin))

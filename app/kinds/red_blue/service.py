"""The red_blue kind's rules on the request side: submitting defenses and attacks (limits,
schedule, idempotency), re-running what ended in error, and every read view (what each
reader may see decided in one place, `Reader`). Worker-side rules are in `worker.py`.

The web UI calls these functions as the REST routers do (docs/redblue.md lists them).
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

from sqlalchemy.orm import Session

from app.attempt.repository import SubmissionTarget
from app.attempt.service import entry_player, shown_handle, shown_submitter, submission_target
from app.auth.subjects import Audience, SignedInParticipant, TenantAdmin, TenantKey
from app.challenge.config import LimitsConfig
from app.challenge.limits import Left, left_under, refuse_when_none_left
from app.challenge.models import Challenge
from app.challenge.service import get_challenge, public_challenge, refuse_unless_open
from app.competition.service import refuse_unless_accepted
from app.config import get_settings
from app.db import utcnow
from app.errors import AppError, Conflict, Forbidden, NotFound, ValidationFailed
from app.kinds.red_blue import final_round, repository
from app.kinds.red_blue.config import RedBlueLimitFields, text_limit
from app.kinds.red_blue.dispatch import PAIR_ATTACK, RUN_MATCH, SELF_TEST
from app.kinds.red_blue.models import Attack, Defense, DefenseStatus, Match, MatchStatus, Side
from app.kinds.red_blue.readers import Reader
from app.kinds.red_blue.repository import (
    Activity,
    BoardLine,
    Places,
    RedBlueRepository,
)
from app.kinds.red_blue.schemas import (
    AttackCreate,
    AttackRead,
    BoardItem,
    DefenseCreate,
    DefenseRead,
    FinalRoundRead,
    MatchCounts,
    MatchList,
    MatchRead,
    MatchSummary,
    RedBlueLeaderboard,
    SideBoardItem,
    Standings,
    verdict_views,
)
from app.leaderboard.freeze import Seen, frozen_since, read_as_seen
from app.leaderboard.models import BoardFreeze
from app.team.service import member_handles, player_id, players_at, team_of
from app.tenant.quotas import count_entry
from app.tenant.service import (
    EntryNames,
    entry_names,
    handles,
    lock_participant,
    participant_by_handle,
)
from app.unit_of_work import UnitOfWork

KIND_NAME = "red_blue"
BOARD_SIDES = ", ".join(f"'{side.value}'" for side in Side)


# Who reads ----------------------------------------------------------------------------------


def reader_of(subject: TenantKey | SignedInParticipant) -> Reader:
    """What the subject sees of texts, outside any challenge's freeze (what they submitted,
    the admins' re-runs); `reader_for` at a challenge."""
    if isinstance(subject, SignedInParticipant):
        return Reader(admin=False, all_texts=False, participant_id=subject.participant_id)
    return Reader(admin=subject.audience is Audience.ADMIN, all_texts=True)


def player_at(
    session: Session, subject: SignedInParticipant, challenge_id: uuid.UUID
) -> tuple[uuid.UUID, str]:
    """Whose entries are the signed-in participant's at a challenge, and that player's name:
    their team's (docs/teams.md), or their own."""
    team = team_of(session, subject.tenant_id, challenge_id, subject.participant_id)
    return (subject.participant_id, subject.handle) if team is None else (team.id, team.name)


def freeze_cutoff(session: Session, challenge: Challenge, audience: Audience) -> datetime | None:
    """The moment the audience sees the challenge's entries and matches as of: its
    `freeze_at` while its boards are frozen for them (a final round keeps it past the close
    until the boards are final, as the boards' own read does), else None (live)."""
    if audience is Audience.ADMIN or challenge.freeze_at is None:
        return None
    now = utcnow()
    if now < challenge.freeze_at:
        return None
    closed = challenge.closes_at is not None and now >= challenge.closes_at
    held = closed and final_round.holds(final_round.state_of(session, challenge))
    return frozen_since(challenge, now, held=held)


def reader_for(
    session: Session,
    challenge: Challenge,
    subject: TenantKey | SignedInParticipant | None,
    *,
    audience: Audience | None = None,
    acting_for: str | None = None,
) -> Reader:
    """What `subject` (None: the public) sees of the challenge's entries and matches: texts
    by who they are; in a freeze, others' as they stood at `freeze_at` and their own live.
    A signed-in participant's own are their team's at the challenge, or theirs; a member
    key's are those of the participant it names (`acting_for`, a handle: the key reads for
    them, as it submits for them). `audience` (default the subject's): a web visitor's view
    of the boards (an account with the admin role sees them live)."""
    seen_by = audience or (Audience.PARTICIPANT if subject is None else subject.audience)
    cutoff = freeze_cutoff(session, challenge, seen_by)
    if subject is None:
        return Reader(admin=False, all_texts=False, cutoff=cutoff)
    if isinstance(subject, SignedInParticipant):
        player, _ = player_at(session, subject, challenge.id)
        return Reader(admin=False, all_texts=False, participant_id=player, cutoff=cutoff)
    own = None
    if cutoff is not None and acting_for is not None:
        found = participant_by_handle(session, subject.tenant_id, acting_for)
        if found is not None:
            own = player_id(session, subject.tenant_id, challenge.id, found.id)
    return Reader(
        admin=subject.audience is Audience.ADMIN, all_texts=True, participant_id=own, cutoff=cutoff
    )


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
    session: Session, challenge_id: uuid.UUID, participant_id: uuid.UUID
) -> str | None:
    """The system prompt of the participant's newest active defense here, if any."""
    return repository.newest_active_defense_text(session, challenge_id, participant_id)


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
    count_entry(session, tenant_id, target.tenant_attempts_per_day, now)
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
    # Only an Idempotency-Key conflicts: a concurrent request with the same key won the race.
    assert idempotency_key is not None
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
            "use a new key for a new submission"
        )
    return EntrySubmission(
        existing,
        False,
        shown_handle(target, handle_given),
        shown_submitter(target, existing.submitted_by_id),
    )


def entrants(
    session: Session,
    tenant_id: uuid.UUID,
    challenge_id: uuid.UUID,
    participant_ids: Collection[uuid.UUID],
) -> set[uuid.UUID]:
    """Those of the participants with a defense or an attack at the challenge."""
    return RedBlueRepository(session, tenant_id).entrants(challenge_id, participant_ids)


def players(session: Session, tenant_id: uuid.UUID, challenge_id: uuid.UUID) -> set[uuid.UUID]:
    """Everyone with a defense or an attack (not a baseline) at the challenge."""
    return RedBlueRepository(session, tenant_id).players(challenge_id)


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


def _summary_fields(
    match: Match, named: Mapping[uuid.UUID, str], *, played: bool
) -> dict[str, Any]:
    """A match's fields; not `played` (its end came after the freeze the reader sees): as it
    stood before it, queued, with nothing of how it went."""
    fields: dict[str, Any] = {
        "id": match.id,
        "challenge_id": match.challenge_id,
        "attack_id": match.attack_id,
        "defense_id": match.defense_id,
        "red_participant": named.get(match.red_participant_id, ""),
        "blue_participant": named.get(match.blue_participant_id, ""),
        "status": MatchStatus.QUEUED,
        "breached": None,
        "red_points": None,
        "blue_points": None,
        "attack_won": None,
        "tokens_total": None,
        "elapsed_ms": None,
        "cost_usd": None,
        "error": None,
        "created_at": match.created_at,
        "finished_at": None,
        "final_round": match.final_round,
    }
    if played:
        fields.update(
            status=match.status,
            breached=match.breached,
            red_points=match.red_points,
            blue_points=match.blue_points,
            attack_won=match.attack_won,
            tokens_total=match.tokens_total,
            elapsed_ms=match.elapsed_ms,
            cost_usd=match.cost_usd,
            error=match.error,
            finished_at=match.finished_at,
        )
    return fields


def match_summary(match: Match, named: Mapping[uuid.UUID, str], reader: Reader) -> MatchSummary:
    """A match of a list, as the reader sees it (`match_view` without the call)."""
    return MatchSummary(
        **_summary_fields(match, named, played=reader.settled(match, match.finished_at))
    )


def match_view(match: Match, named: Mapping[uuid.UUID, str], reader: Reader) -> MatchRead:
    """A match as the reader sees it: texts by `Reader`; in a freeze, a match of others that
    ended since is as it stood then (queued: no call, no verdict)."""
    red, blue = match.red_participant_id, match.blue_participant_id
    if not reader.settled(match, match.finished_at):
        return MatchRead(
            **_summary_fields(match, named, played=False),
            system_prompt=None,
            user_message=None,
            output=None,
            verdicts=None,
            run_count=0,
        )
    return MatchRead(
        **_summary_fields(match, named, played=True),
        system_prompt=match.system_prompt if reader.sees_texts_of(blue) else None,
        user_message=match.user_message if reader.sees_texts_of(red) else None,
        output=match.output if reader.sees_texts_of(red, blue) else None,
        verdicts=verdict_views(match.verdicts, full=reader.sees_texts_of(red, blue)),
        error_detail=match.error_detail if reader.admin else None,
        run_count=match.run_count,
    )


def _named(session: Session, tenant_id: uuid.UUID, matches: list[Match]) -> dict[uuid.UUID, str]:
    ids = {m.red_participant_id for m in matches} | {m.blue_participant_id for m in matches}
    return handles(session, tenant_id, list(ids))


def _entrant(entry: Defense | Attack) -> tuple[uuid.UUID, uuid.UUID | None]:
    """Whose entry it is and which member submitted it (`entry_names`)."""
    return entry.participant_id, entry.submitted_by_id


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


def _red_blue_challenge(challenge: Challenge) -> Challenge:
    if challenge.kind != KIND_NAME:
        raise NotFound(f"not a red_blue challenge (this is a {challenge.kind} challenge)")
    return challenge


def _matches_page(
    session: Session,
    challenge: Challenge,
    reader: Reader,
    *,
    attack_id: uuid.UUID | None,
    defense_id: uuid.UUID | None,
    participant: str | None,
    limit: int,
    offset: int,
    calls: bool = False,
) -> MatchList:
    """A page of the matches the reader sees, each as they see it: summaries, or with
    `calls` as `match_view` shows it (its texts only to whom they belong)."""
    tenant_id = challenge.tenant_id
    participant_id = None
    if participant is not None:
        found = participant_by_handle(session, tenant_id, participant)
        if found is None:
            return MatchList(items=[], total=0, limit=limit, offset=offset)
        participant_id = found.id
    rows, total = RedBlueRepository(session, tenant_id).matches_page(
        challenge.id,
        attack_id=attack_id,
        defense_id=defense_id,
        participant_id=participant_id,
        limit=limit,
        offset=offset,
        reader=reader,
    )
    named = _named(session, tenant_id, rows)
    items = [
        match_view(m, named, reader) if calls else match_summary(m, named, reader) for m in rows
    ]
    return MatchList(items=items, total=total, limit=limit, offset=offset)


def list_matches(
    session: Session,
    subject: TenantKey | SignedInParticipant,
    challenge_id: uuid.UUID,
    *,
    attack_id: uuid.UUID | None = None,
    defense_id: uuid.UUID | None = None,
    participant: str | None = None,
    limit: int = 50,
    offset: int = 0,
) -> MatchList:
    """The challenge's matches the subject sees, newest first, filtered by attack, defense
    and participant handle (either side); 404 for another tenant's challenge. A member key
    naming a participant reads for them (`reader_for`): in a freeze, their matches are
    live."""
    challenge = _red_blue_challenge(get_challenge(session, subject.tenant_id, challenge_id))
    return _matches_page(
        session,
        challenge,
        reader_for(session, challenge, subject, acting_for=participant),
        attack_id=attack_id,
        defense_id=defense_id,
        participant=participant,
        limit=limit,
        offset=offset,
    )


def list_match_views(
    session: Session, subject: SignedInParticipant, challenge_id: uuid.UUID, *, limit: int
) -> tuple[list[MatchRead], int]:
    """The signed-in participant's newest matches at a challenge (and how many they have), each
    as `read_match` shows it to them: the texts of their own side and the output."""
    challenge = _red_blue_challenge(get_challenge(session, subject.tenant_id, challenge_id))
    _, name = player_at(session, subject, challenge_id)
    page = _matches_page(
        session,
        challenge,
        reader_for(session, challenge, subject),
        attack_id=None,
        defense_id=None,
        participant=name,
        limit=limit,
        offset=0,
        calls=True,
    )
    return [item for item in page.items if isinstance(item, MatchRead)], page.total


def _seen_match(
    session: Session, challenge: Challenge, match: Match | None, reader: Reader
) -> MatchRead:
    """The match as the reader sees it; 404 for one of another challenge, or that does not
    exist for the reader (another's, made after the freeze they see)."""
    if match is None or match.challenge_id != challenge.id or not reader.sees(match):
        raise NotFound("match not found")
    return match_view(match, _named(session, challenge.tenant_id, [match]), reader)


def read_match(
    session: Session,
    subject: TenantKey | SignedInParticipant,
    match_id: uuid.UUID,
    *,
    acting_for: str | None = None,
) -> MatchRead:
    """A match as the subject sees it (`acting_for`: the participant a member key reads for,
    `reader_for`)."""
    match = RedBlueRepository(session, subject.tenant_id).match(match_id)
    if match is None:
        raise NotFound("match not found")
    challenge = get_challenge(session, subject.tenant_id, match.challenge_id)
    reader = reader_for(session, challenge, subject, acting_for=acting_for)
    return _seen_match(session, challenge, match, reader)


def read_challenge_match(
    session: Session,
    challenge: Challenge,
    match_id: uuid.UUID,
    viewer: SignedInParticipant | None,
    audience: Audience,
) -> MatchRead:
    """One match of a challenge its caller may already see (the web's match page, which
    checks the visitor's access to the challenge first), as the viewer may see it: a
    signed-in participant the texts of their own side, anyone else the public view; in a
    freeze as `audience` sees it (an account with the admin role: live). 404 for a match of
    another challenge."""
    challenge = _red_blue_challenge(challenge)
    match = RedBlueRepository(session, challenge.tenant_id).match(match_id)
    reader = reader_for(session, challenge, viewer, audience=audience)
    return _seen_match(session, challenge, match, reader)


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


# Re-runs (tenant admins) --------------------------------------------------------------------


def rerun_match(work: UnitOfWork, admin: TenantKey, match_id: uuid.UUID) -> MatchRead:
    """Queues a match that ended in error again; it is sent once the caller commits."""
    repo = RedBlueRepository(work.session, admin.tenant_id)
    match = repo.match(match_id, for_update=True)
    if match is None:
        raise NotFound("match not found")
    if match.status is not MatchStatus.ERROR:
        raise Conflict(
            f"only matches that ended in error can be re-run; this one is {match.status}"
        )
    repo.requeue_match(match, utcnow())
    work.send_after_commit(RUN_MATCH, str(match.id))
    return match_view(match, _named(work.session, admin.tenant_id, [match]), reader_of(admin))


@dataclass(frozen=True)
class FailedMatch:
    """A match that ended in error, as a tenant admin sees it (the full reason included)."""

    match: MatchRead
    challenge_title: str


def recent_match_errors(
    session: Session, admin: TenantKey, *, limit: int = 20
) -> list[FailedMatch]:
    """The tenant's newest matches that ended in error (the admin page re-runs them)."""
    rows = RedBlueRepository(session, admin.tenant_id).error_matches(limit=limit)
    named = _named(session, admin.tenant_id, [match for match, _ in rows])
    reader = reader_of(admin)
    return [FailedMatch(match_view(match, named, reader), title) for match, title in rows]


def activity(
    session: Session, tenant_id: uuid.UUID, challenge_ids: Sequence[uuid.UUID]
) -> dict[uuid.UUID, Activity]:
    """Each challenge's defenses, attacks, matches and matches awaiting the ratings (the
    tenant admin page)."""
    return RedBlueRepository(session, tenant_id).activity_of(challenge_ids)


def places(
    session: Session,
    viewer: SignedInParticipant,
    challenges: Sequence[Challenge],
    audience: Audience,
) -> dict[uuid.UUID, Places]:
    """Where the signed-in participant stands on each challenge (the tenant's challenge
    list), on the boards as the audience sees them: in a freeze, where they stood at
    `freeze_at` (a live rank would tell about results hidden from them)."""
    repo = RedBlueRepository(session, viewer.tenant_id)
    by_id = {challenge.id: challenge for challenge in challenges}
    found: dict[uuid.UUID, Places] = {}
    # A member's places are their team's (one query per team).
    ids = list(by_id)
    for player, played in players_at(session, viewer.tenant_id, viewer.participant_id, ids).items():
        frozen = [c for c in played if freeze_cutoff(session, by_id[c], audience) is not None]
        found.update(repo.places_of(player, [c for c in played if c not in frozen], frozen=False))
        for challenge_id in frozen:

            def read(
                snapshot: BoardFreeze | None, who: uuid.UUID = player, at: uuid.UUID = challenge_id
            ) -> dict[uuid.UUID, Places]:
                return repo.places_of(who, [at], frozen=snapshot is not None)

            challenge = by_id[challenge_id]
            held = final_round.holds(final_round.state_of(session, challenge))
            found.update(read_as_seen(session, challenge, audience, read, held=held).board)
    return found


def rerun_defense(work: UnitOfWork, admin: TenantKey, defense_id: uuid.UUID) -> DefenseRead:
    """Runs the self-test of a defense that ended in error again."""
    repo = RedBlueRepository(work.session, admin.tenant_id)
    defense = repo.defense(defense_id)
    if defense is None:
        raise NotFound("defense not found")
    if defense.status is not DefenseStatus.ERROR:
        raise Conflict(
            f"only defenses whose self-test ended in error can be re-run; this one is "
            f"{defense.status}"
        )
    repo.requeue_defense(defense, utcnow())
    work.send_after_commit(SELF_TEST, str(defense.id))
    names = entry_names(work.session, admin.tenant_id, [_entrant(defense)])
    return defense_view(defense, names, reader_of(admin))


# Boards -------------------------------------------------------------------------------------


def board_side(params: Mapping[str, str]) -> Side:
    """The `side` query parameter of a red_blue leaderboard: required, red or blue."""
    value = params.get("side")
    if value is None or value not in {side.value for side in Side}:
        problem = "is required" if value is None else f"must be {BOARD_SIDES}, not {value!r}"
        raise ValidationFailed(
            f"side: {problem} (a red_blue challenge has a red and a blue leaderboard)",
            details=[{"loc": ["query", "side"], "msg": problem, "type": "value_error"}],
        )
    return Side(value)


def _teams_on(
    session: Session, tenant_id: uuid.UUID, rows: Sequence[tuple[BoardLine, bool]]
) -> Mapping[uuid.UUID, list[str]]:
    """The members of the rows' teams (one query a page)."""
    ids = [line.participant_id for line, _ in rows if line.participant_id is not None]
    return member_handles(session, tenant_id, ids)


def board_item(
    line: BoardLine, tied: bool, teams: Mapping[uuid.UUID, list[str]] | None = None
) -> BoardItem:
    members = (
        None if teams is None or line.participant_id is None else teams.get(line.participant_id)
    )
    return BoardItem(
        rank=line.rank,
        tied=tied,
        participant=line.handle,
        members=members,
        baseline=line.baseline,
        rating=round(line.rating, 1),
        rating_low=None if line.rating_low is None else round(line.rating_low, 1),
        rating_high=None if line.rating_high is None else round(line.rating_high, 1),
        points=line.points,
        matches=line.matches,
        wins=line.wins,
    )


Board = TypeVar("Board", RedBlueLeaderboard, Standings)
T = TypeVar("T")


def _seen(
    session: Session,
    challenge: Challenge,
    audience: Audience,
    read: Callable[[BoardFreeze | None], T],
) -> tuple[Seen[T], FinalRoundRead | None]:
    """A board as the audience sees it (frozen for non-admins in a freeze, which a final
    round keeps past the close until the boards are final), and the final round's state."""
    round_state = final_round.state_of(session, challenge)
    seen = read_as_seen(session, challenge, audience, read, held=final_round.holds(round_state))
    return seen, round_state


def _as_seen(
    session: Session,
    challenge: Challenge,
    audience: Audience,
    read: Callable[[BoardFreeze | None], Board],
) -> Board:
    """A board or the standings as the audience sees them, saying whether frozen, with the
    final round's state. Frozen, the round says its phase but not its count of matches:
    which pairs it plays depends on the entries made after the freeze."""
    seen, round_state = _seen(session, challenge, audience, read)
    if seen.frozen and round_state is not None:
        round_state = round_state.model_copy(update={"matches_played": None, "matches_total": None})
    return seen.board.model_copy(
        update={"frozen": seen.frozen, "frozen_at": seen.frozen_at, "final_round": round_state}
    )


def read_leaderboard(
    session: Session,
    challenge: Challenge,
    side: Side,
    audience: Audience,
    *,
    limit: int,
    offset: int,
) -> RedBlueLeaderboard:
    """A page of one side's board, as the last recompute stored it (for non-admins in a
    freeze: as it stood when the freeze began)."""
    repo = RedBlueRepository(session, challenge.tenant_id)

    def read(snapshot: BoardFreeze | None) -> RedBlueLeaderboard:
        rows, total = board_page_with_ties(
            repo, challenge.id, side, limit=limit, offset=offset, frozen=snapshot is not None
        )
        teams = _teams_on(session, challenge.tenant_id, rows)
        if snapshot is not None:
            computed_at = _figure_time(snapshot, "computed_at")
            intervals_computed_at = _figure_time(snapshot, "intervals_computed_at")
        else:
            board = repo.board(challenge.id)
            computed_at = board.computed_at if board is not None else None
            intervals_computed_at = board.intervals_computed_at if board is not None else None
        return RedBlueLeaderboard(
            challenge_id=challenge.id,
            side=side,
            items=[board_item(line, tied, teams) for line, tied in rows],
            total=total,
            limit=limit,
            offset=offset,
            computed_at=computed_at,
            intervals_computed_at=intervals_computed_at,
        )

    return _as_seen(session, challenge, audience, read)


def board_page_with_ties(
    repo: RedBlueRepository,
    challenge_id: uuid.UUID,
    side: Side,
    *,
    limit: int,
    offset: int,
    frozen: bool = False,
) -> tuple[list[tuple[BoardLine, bool]], int]:
    """A page of one side's board, each row with whether another participant's row shares
    its rank (their intervals overlap: ranks count only the rows entirely above; a baseline
    shares no one's). A shared rank's rows are neighbours in the board's order, but for the
    baselines between them, so the participants' rows just before and after tell (those of
    the page, and the row on either side of it)."""
    start = max(offset - 1, 0)
    lines, total = repo.ratings_page(
        challenge_id, side, limit=limit + 1 + offset - start, offset=start, frozen=frozen
    )
    # The participants' rows' ranks by index, baselines left out.
    ranked = [(index, line.rank) for index, line in enumerate(lines) if not line.baseline]
    place = {index: number for number, (index, _) in enumerate(ranked)}
    first = offset - start
    rows = []
    for index in range(first, min(first + limit, len(lines))):
        line = lines[index]
        number = place.get(index)
        tied = number is not None and any(
            0 <= other < len(ranked) and ranked[other][1] == line.rank
            for other in (number - 1, number + 1)
        )
        rows.append((line, tied))
    return rows, total


def _live_standings(session: Session, challenge: Challenge) -> Standings:
    board = RedBlueRepository(session, challenge.tenant_id).board(challenge.id)
    if board is None:
        return Standings(
            challenge_id=challenge.id,
            red_points=0,
            blue_points=0,
            red_share=None,
            matches=0,
            computed_at=None,
            pending=False,
        )
    total = board.red_points + board.blue_points
    return Standings(
        challenge_id=challenge.id,
        red_points=board.red_points,
        blue_points=board.blue_points,
        red_share=board.red_points / total if total else None,
        matches=board.matches,
        computed_at=board.computed_at,
        pending=board.dirty or board.rated_seq < board.landed_seq,
    )


def _figure_time(snapshot: BoardFreeze, name: str) -> datetime | None:
    """A time the snapshot kept of the board (`copy_to_frozen`)."""
    value = (snapshot.figures or {}).get(name)
    return None if value is None else datetime.fromisoformat(value)


def _frozen_standings(challenge: Challenge, snapshot: BoardFreeze) -> Standings:
    """The standings the snapshot kept (`copy_to_frozen`)."""
    figures = snapshot.figures or {}
    red, blue = int(figures.get("red_points", 0)), int(figures.get("blue_points", 0))
    return Standings(
        challenge_id=challenge.id,
        red_points=red,
        blue_points=blue,
        red_share=red / (red + blue) if red + blue else None,
        matches=int(figures.get("matches", 0)),
        computed_at=_figure_time(snapshot, "computed_at"),
        pending=False,
    )


def _standings(session: Session, challenge: Challenge, audience: Audience) -> Standings:
    """The team standings as the audience sees them (frozen for non-admins in a freeze)."""

    def read(snapshot: BoardFreeze | None) -> Standings:
        if snapshot is None:
            return _live_standings(session, challenge)
        return _frozen_standings(challenge, snapshot)

    standings = _as_seen(session, challenge, audience, read)
    # Frozen without a copy yet (no board written since the freeze): matches may have landed
    # since, which the live board's `pending` would tell.
    return standings.model_copy(update={"pending": False}) if standings.frozen else standings


def read_standings(
    session: Session, subject: TenantKey | SignedInParticipant, challenge_id: uuid.UUID
) -> Standings:
    challenge = _red_blue_challenge(get_challenge(session, subject.tenant_id, challenge_id))
    return _standings(session, challenge, subject.audience)


def challenge_standings(session: Session, challenge: Challenge, audience: Audience) -> Standings:
    """The standings of a challenge its caller may already see (the web pages, which check
    the visitor's access to the challenge first)."""
    return _standings(session, _red_blue_challenge(challenge), audience)


# Public reads (a public challenge, no credential) -------------------------------------------


def _public(session: Session, tenant_slug: str, challenge_slug: str) -> Challenge:
    challenge = public_challenge(session, tenant_slug, challenge_slug)
    try:
        return _red_blue_challenge(challenge)
    except AppError:
        raise NotFound("no public red_blue challenge at this address") from None


def read_public_standings(session: Session, tenant_slug: str, challenge_slug: str) -> Standings:
    return _standings(session, _public(session, tenant_slug, challenge_slug), Audience.PARTICIPANT)


def list_public_matches(
    session: Session,
    tenant_slug: str,
    challenge_slug: str,
    *,
    attack_id: uuid.UUID | None = None,
    defense_id: uuid.UUID | None = None,
    participant: str | None = None,
    limit: int = 50,
    offset: int = 0,
) -> MatchList:
    """Matches of a public challenge as the public sees them: statuses, verdicts and points,
    never the texts; in a freeze, those of then (`participant` only filters: the public reads
    for no one)."""
    challenge = _public(session, tenant_slug, challenge_slug)
    return _matches_page(
        session,
        challenge,
        reader_for(session, challenge, None),
        attack_id=attack_id,
        defense_id=defense_id,
        participant=participant,
        limit=limit,
        offset=offset,
    )


def read_public_match(
    session: Session, tenant_slug: str, challenge_slug: str, match_id: uuid.UUID
) -> MatchRead:
    """One match of a public challenge as the public sees it: no system prompt, no attack,
    no output (verdict per category and points only); in a freeze, as it stood then."""
    challenge = _public(session, tenant_slug, challenge_slug)
    match = RedBlueRepository(session, challenge.tenant_id).match(match_id)
    return _seen_match(session, challenge, match, reader_for(session, challenge, None))


# Exports (tenant keys): a challenge's boards, entries and matches in order, a batch after a
# cursor, as the reader sees them ------------------------------------------------------------

CreatedCursor = tuple[datetime, uuid.UUID]
# A side's index in `Side` (red, then blue) and the last position read on it.
BoardCursor = tuple[int, int]
SIDES = tuple(Side)


def _created_cursor(rows: list[Any]) -> CreatedCursor | None:
    return (rows[-1].created_at, rows[-1].id) if rows else None


def _export_reader(session: Session, key: TenantKey, challenge_id: uuid.UUID) -> Reader:
    """What an export shows the key: what its reads by id show it (its admins: all, live)."""
    return reader_for(session, get_challenge(session, key.tenant_id, challenge_id), key)


def defenses_in_order(
    session: Session,
    reader: TenantKey,
    challenge_id: uuid.UUID,
    *,
    after: CreatedCursor | None,
    limit: int,
) -> tuple[list[DefenseRead], CreatedCursor | None]:
    """Up to `limit` defenses after the cursor, oldest first, each as `GET /v1/defenses/{id}`
    answers it (its match counts included)."""
    repo = RedBlueRepository(session, reader.tenant_id)
    view = _export_reader(session, reader, challenge_id)
    rows: list[Defense] = repo.in_created_order(Defense, challenge_id, after, limit, view)
    names = entry_names(session, reader.tenant_id, [_entrant(d) for d in rows])
    counts = repo.match_counts_of(Match.defense_id, [d.id for d in rows], view)
    items = [defense_view(d, names, view, counts[d.id]) for d in rows]
    return items, _created_cursor(rows)


def attacks_in_order(
    session: Session,
    reader: TenantKey,
    challenge_id: uuid.UUID,
    *,
    after: CreatedCursor | None,
    limit: int,
) -> tuple[list[AttackRead], CreatedCursor | None]:
    """Up to `limit` attacks after the cursor, oldest first, each as `GET /v1/attacks/{id}`
    answers it."""
    repo = RedBlueRepository(session, reader.tenant_id)
    view = _export_reader(session, reader, challenge_id)
    rows: list[Attack] = repo.in_created_order(Attack, challenge_id, after, limit, view)
    names = entry_names(session, reader.tenant_id, [_entrant(a) for a in rows])
    counts = repo.match_counts_of(Match.attack_id, [a.id for a in rows], view)
    items = [attack_view(a, names, view, counts[a.id]) for a in rows]
    return items, _created_cursor(rows)


def matches_in_order(
    session: Session,
    reader: TenantKey,
    challenge_id: uuid.UUID,
    *,
    after: CreatedCursor | None,
    limit: int,
) -> tuple[list[MatchRead], CreatedCursor | None]:
    """Up to `limit` matches after the cursor, oldest first, each as `GET /v1/matches/{id}`
    answers the reader (texts and verdicts by `Reader`)."""
    repo = RedBlueRepository(session, reader.tenant_id)
    view = _export_reader(session, reader, challenge_id)
    rows: list[Match] = repo.in_created_order(Match, challenge_id, after, limit, view)
    named = _named(session, reader.tenant_id, rows)
    return [match_view(m, named, view) for m in rows], _created_cursor(rows)


def boards_in_order(
    session: Session,
    reader: TenantKey,
    challenge_id: uuid.UUID,
    *,
    after: BoardCursor | None,
    limit: int,
) -> tuple[list[SideBoardItem], BoardCursor | None]:
    """Up to `limit` rows of the red board, then of the blue one, after the cursor, as
    their pages show them to the key (its admins: live, in a freeze too); and the cursor of
    the last."""
    repo = RedBlueRepository(session, reader.tenant_id)
    challenge = get_challenge(session, reader.tenant_id, challenge_id)

    def read(snapshot: BoardFreeze | None) -> tuple[list[SideBoardItem], BoardCursor | None]:
        side_index, position = after if after is not None else (0, 0)
        items: list[SideBoardItem] = []
        last: BoardCursor | None = None
        while side_index < len(SIDES) and len(items) < limit:
            side = SIDES[side_index]
            lines, _ = board_page_with_ties(
                repo,
                challenge_id,
                side,
                limit=limit - len(items),
                offset=position,
                frozen=snapshot is not None,
            )
            teams = _teams_on(session, reader.tenant_id, lines)
            items.extend(
                SideBoardItem(**dict(board_item(line, tied, teams)), side=side)
                for line, tied in lines
            )
            if lines:
                # A side's positions are 1..n with no gap: the k-th row after p is at p + k.
                position += len(lines)
                last = (side_index, position)
            if len(items) < limit:
                side_index, position = side_index + 1, 0
        return items, last

    return _seen(session, challenge, reader.audience, read)[0].board

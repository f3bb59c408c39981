"""Rules of challenges: creation, validated updates, deletion, and what each caller may see.

What differs between kinds is each kind's (`app.challenge.challenge_kind`): the service
validates the fields every challenge has, then asks the challenge's kind about its sections.
"""

from __future__ import annotations

import difflib
import uuid
from collections.abc import Collection, Container, Mapping
from datetime import datetime
from typing import Any, NamedTuple, Protocol

from pydantic import BaseModel, ValidationError
from sqlalchemy.orm import Session

from app.auth.subjects import Audience, PlatformAdmin
from app.auth.tenant_access import refuse_unless_active
from app.challenge import repository
from app.challenge.challenge_kind import (
    ChallengeKind,
    KindConfig,
    NamedModel,
    strategy_refusal,
    validation_failed,
)
from app.challenge.config import ChallengeState, ChallengeStatus, LimitsConfig, Visibility
from app.challenge.events import ChallengeClosed, ScoringChanged
from app.challenge.flat_scoring import (
    check_flat_entrypoint,
    errors_named_as_given,
    given_flat_scoring,
    scoring_from_flat,
)
from app.challenge.models import Challenge
from app.challenge.reachability import refuse_unreachable
from app.challenge.registry import KindNotFound, find_kind, kinds_taking, not_for, registered
from app.challenge.repository import ChallengeRepository, PlatformChallengeRepository
from app.challenge.schemas import (
    FLAT_SCORING_FIELDS,
    ChallengeCreate,
    ChallengePublic,
    ChallengeRead,
    ChallengeUpdate,
)
from app.challenge.templates import slug_of_title, with_template
from app.kit.db import utcnow
from app.kit.error_codes import (
    CHALLENGE_ARCHIVED,
    CHALLENGE_CLOSED,
    CHALLENGE_DRAFT,
    CHALLENGE_UPCOMING,
    SLUG_TAKEN,
)
from app.kit.errors import (
    MISSPELT,
    Conflict,
    NotFound,
    Problems,
    ValidationFailed,
    error_details,
    problem,
)
from app.kit.unit_of_work import UnitOfWork
from app.scoring.schemas import ScoringConfig
from app.scoring.strategies import scored_by_plugin
from app.scoring.validation import validate_scoring
from app.tenant.models import Participant, Tenant
from app.tenant.quotas import refuse_new_challenge
from app.tenant.service import list_participants, tenant_by_slug


class Scheduled(Protocol):
    """A challenge, or the part of one that a submission loads."""

    @property
    def state(self) -> ChallengeState: ...

    @property
    def opens_at(self) -> datetime | None: ...

    @property
    def closes_at(self) -> datetime | None: ...


def challenge_status(challenge: Scheduled, now: datetime | None = None) -> ChallengeStatus:
    if challenge.state is ChallengeState.DRAFT:
        return ChallengeStatus.DRAFT
    if challenge.state is ChallengeState.ARCHIVED:
        return ChallengeStatus.ARCHIVED
    now = now or utcnow()
    if challenge.opens_at is not None and now < challenge.opens_at:
        return ChallengeStatus.UPCOMING
    if challenge.closes_at is not None and now >= challenge.closes_at:
        return ChallengeStatus.CLOSED
    return ChallengeStatus.OPEN


def refuse_unless_open(challenge: Scheduled, now: datetime) -> None:
    """A 409 saying why the challenge takes no submission now (attempts and entries alike)."""
    status = challenge_status(challenge, now)
    if status is ChallengeStatus.DRAFT:
        raise Conflict(
            "this challenge is a draft: it takes submissions once it is published",
            code=CHALLENGE_DRAFT,
        )
    if status is ChallengeStatus.ARCHIVED:
        raise Conflict(
            "this challenge is archived: it takes no more submissions", code=CHALLENGE_ARCHIVED
        )
    if status is ChallengeStatus.UPCOMING:
        raise Conflict(
            f"this challenge opens at {challenge.opens_at:%Y-%m-%d %H:%M:%S} UTC",
            code=CHALLENGE_UPCOMING,
        )
    if status is ChallengeStatus.CLOSED:
        raise Conflict(
            f"this challenge closed at {challenge.closes_at:%Y-%m-%d %H:%M:%S} UTC",
            code=CHALLENGE_CLOSED,
        )


def sealed_shown(
    closes_at: datetime | None, audience: Audience, now: datetime | None = None
) -> bool:
    """Whether a reader sees a challenge's sealed results (a split benchmark challenge's
    private part: its tasks, trials and measures): its tenant's admins always, everyone else
    once it has closed (at `closes_at`, which closing it now sets)."""
    if audience is Audience.ADMIN:
        return True
    return closes_at is not None and (now or utcnow()) >= closes_at


def sealed_shown_of(
    session: Session, tenant_id: uuid.UUID, challenge_ids: Collection[uuid.UUID], audience: Audience
) -> Container[uuid.UUID]:
    """Those of the tenant's challenges whose sealed results the reader sees (`sealed_shown`)."""
    if audience is Audience.ADMIN:
        return set(challenge_ids)
    now = utcnow()
    closes = ChallengeRepository(session, tenant_id).closes(challenge_ids)
    return {found for found, closes_at in closes.items() if sealed_shown(closes_at, audience, now)}


class ListedChallenges(NamedTuple):
    """What a list of attempts reads of their challenges: each one's kind (how its attempts'
    fields show), those whose sealed results the reader sees (`sealed_shown`), and each
    one's schedule of its freeze (`freeze_at`, `closes_at`)."""

    kinds: dict[uuid.UUID, str]
    sealed_shown: Container[uuid.UUID]
    freezes: dict[uuid.UUID, tuple[datetime | None, datetime | None]]


def listed_challenges(
    session: Session, tenant_id: uuid.UUID, challenge_ids: Collection[uuid.UUID], audience: Audience
) -> ListedChallenges:
    """The kinds, sealed visibility and freezes of these challenges of the tenant (deleted
    ones included), in one query."""
    found = ChallengeRepository(session, tenant_id).kinds_and_schedules(challenge_ids)
    now = utcnow()
    return ListedChallenges(
        {challenge_id: kind for challenge_id, (kind, _, _) in found.items()},
        {
            challenge_id
            for challenge_id, (_, closes_at, _) in found.items()
            if sealed_shown(closes_at, audience, now)
        },
        {
            challenge_id: (freeze_at, closes_at)
            for challenge_id, (_, closes_at, freeze_at) in found.items()
        },
    )


def kind_of(challenge: Challenge) -> ChallengeKind:
    return find_kind(challenge.kind)


def config_of(challenge: Challenge) -> KindConfig:
    """The challenge's kind sections, as its kind's validated model."""
    kind = kind_of(challenge)
    sections = challenge.stored_sections(kind.config_model.model_fields)
    return kind.parse(sections, stored=True)


def _section_names(kind: ChallengeKind) -> Container[str]:
    return kind.config_model.model_fields


def _limit_names(kind: ChallengeKind) -> Container[str]:
    return kind.limits_model.model_fields


def _refuse_foreign_sections(kind: ChallengeKind, sections: Mapping[str, Any]) -> None:
    """A section of another kind names the kind it belongs to; anything else is unknown (each
    one a problem of its own)."""
    problems = Problems()
    for name in sections:
        if name in kind.config_model.model_fields:
            continue
        with problems.collect():
            owners = kinds_taking(name, _section_names)
            if owners:
                raise not_for([name], owners, kind.name)
            fields = [*kind.config_model.model_fields, *ChallengeCreate.model_fields]
            meant = difflib.get_close_matches(name, [f for f in fields if f not in sections], n=1)
            if meant:
                raise ValidationFailed.at([name], f"{MISSPELT} '{meant[0]}'?")
            raise ValidationFailed.at([name], "is not a field of a challenge (of this kind)")
    problems.raise_any()


def _limits_for(kind: ChallengeKind, limits: LimitsConfig) -> LimitsConfig:
    """The limits with the kind's own validated by its `limits_model` (a 422 naming the
    field); a limit only other kinds take names the kinds it is for."""
    given = limits.kind_limits
    problems = Problems()
    own_given = {}
    for name, value in given.items():
        owners = [] if name in kind.limits_model.model_fields else kinds_taking(name, _limit_names)
        if owners:
            with problems.collect():
                raise not_for(["limits", name], owners, kind.name)
        else:
            # Any other unknown limit is the kind's model's to refuse (it names the field).
            own_given[name] = value
    own = None
    try:
        own = kind.limits_model.model_validate(own_given)
    except ValidationError as error:
        # The core's limits the body does not give may be what a misspelling meant.
        unwritten = LimitsConfig.model_fields.keys() - limits.model_fields_set
        with problems.collect():
            raise validation_failed(
                error, ["limits"], own_given, kind.limits_model, beside=sorted(unwritten)
            ) from error
    problems.raise_any()
    assert own is not None
    core = limits.model_dump(mode="json", include=set(LimitsConfig.model_fields))
    return LimitsConfig.model_validate({**core, **own.model_dump(mode="json")})


def _scoring_for(kind: ChallengeKind, scoring: ScoringConfig) -> ScoringConfig:
    """The scoring, checked against the strategies the kind allows, with its default filled."""
    strategy = scoring.strategy
    if strategy is None:
        return scoring.model_copy(update={"strategy": kind.default_strategy})
    if strategy not in kind.strategies:
        others = [k.name for k in registered().values() if strategy in k.strategies]
        raise ValidationFailed.at(["scoring", "strategy"], strategy_refusal(kind, strategy, others))
    return scoring


class Validated(NamedTuple):
    config: KindConfig
    scoring: ScoringConfig
    limits: LimitsConfig


class _Checked(NamedTuple):
    """What the checks that need nothing outside made of a body's kind parts (None where a
    check failed), and every problem they found."""

    config: KindConfig | None
    scoring: ScoringConfig | None
    limits: LimitsConfig | None
    problems: Problems


def _kind_parts(
    kind: ChallengeKind,
    sections: Mapping[str, Any],
    limits: LimitsConfig | None,
    scoring: ScoringConfig | None,
) -> _Checked:
    """The kind's sections, its limits and the scoring's strategy, each checked on its own so
    that every problem is found at once. `limits` or `scoring` None: not valid as the fields
    every challenge has (their problems are found there), not checked here."""
    problems = Problems()
    with problems.collect():
        _refuse_foreign_sections(kind, sections)
    checked_limits = None
    if limits is not None:
        with problems.collect():
            checked_limits = _limits_for(kind, limits)
    config = None
    own = {
        name: value for name, value in sections.items() if name in kind.config_model.model_fields
    }
    with problems.collect():
        config = kind.parse(own)
    checked_scoring = None
    if scoring is not None:
        with problems.collect():
            checked_scoring = _scoring_for(kind, scoring)
    return _Checked(config, checked_scoring, checked_limits, problems)


def _validated(
    session: Session, body: ChallengeCreate, kept: Collection[NamedModel] = ()
) -> Validated:
    """The kind's sections, limits and the scoring of a body, checked as a whole: the kind's own
    rules (every problem at once), then what needs the world outside (policy, benchmark
    data, whether its models can be called), then the scorer. `kept`: models an edit leaves
    as they were, whose provider keys are not asked again (the worker says so if one went
    away; closing or retitling such a challenge must still work)."""
    kind = find_kind(body.kind)
    config, scoring, limits, problems = _kind_parts(kind, body.sections, body.limits, body.scoring)
    problems.raise_any()
    assert config is not None and scoring is not None and limits is not None
    # Then the checks that need the sections valid, each on its own, all found at once.
    with problems.collect():
        kind.check(config, scoring)
    prepared = None
    with problems.collect():
        prepared = kind.prepare(config)
    named = kind.named_models(prepared or config)
    with problems.collect():
        refuse_unreachable(model for model in named if model not in kept)
    with problems.collect():
        validate_scoring(session, scoring.model_dump())
    problems.raise_any()
    assert prepared is not None
    return Validated(prepared, scoring, limits)


def _core_problems(data: Any) -> list[dict[str, Any]]:
    try:
        ChallengeCreate.model_validate(data)
    except ValidationError as error:
        given = data if isinstance(data, Mapping) else None
        return error_details(error.errors(), ["body"], given, ChallengeCreate)
    return []


def body_problems(data: Any) -> list[dict[str, Any]]:
    """Everything wrong with a challenge body that can be told without the world outside: the
    fields every challenge has, and, however those are, its kind's sections, limits and
    scoring strategy. A client (or a form) learns of them all at once, not of the kind's only
    once the rest is right. Empty: valid so far (the service checks the rest when saving)."""
    if not isinstance(data, Mapping):
        return _core_problems(data)
    problems = Problems()
    try:
        data = with_template(data)
    except ValidationFailed as failed:
        # The body alone, then: what is wrong with its own fields.
        data = {name: value for name, value in data.items() if name != "template"}
        problems.add(failed.problems)
    problems.add(_core_problems(data))
    kind_name = data.get("kind", ChallengeCreate.model_fields["kind"].default)
    if not isinstance(kind_name, str):
        return problems.details
    try:
        kind = find_kind(kind_name)
    except KindNotFound:
        return problems.details
    sections = {
        name: value
        for name, value in data.items()
        if name not in ChallengeCreate.model_fields and value is not None
    }
    limits = _valid_or_none(LimitsConfig, data.get("limits") or {})
    flat = any(data.get(name) is not None for name in FLAT_SCORING_FIELDS)
    scoring = None if flat else _valid_or_none(ScoringConfig, data.get("scoring") or {})
    checked = _kind_parts(kind, sections, limits, scoring)
    known = {tuple(detail["loc"]) for detail in problems.details}
    problems.add([d for d in checked.problems.details if tuple(d["loc"]) not in known])
    return problems.details


def _valid_or_none(model: type[BaseModel], value: Any) -> Any:
    try:
        return model.model_validate(value)
    except ValidationError:
        return None


def _validated_as_create(data: dict[str, Any]) -> ChallengeCreate:
    """A whole body (an edit's merged result) as a new challenge's, every problem at once."""
    try:
        return ChallengeCreate.model_validate(data)
    except ValidationError:
        raise ValidationFailed.of(body_problems(data)) from None


def create_challenge(session: Session, tenant_id: uuid.UUID, body: ChallengeCreate) -> Challenge:
    """A new challenge from a body: its template's (if it names one) with the body laid over
    it, every problem of it at once; its slug made from its title when it gives none."""
    if body.template is not None:
        given = body.model_dump(mode="json", exclude_unset=True)
        body = _validated_as_create(with_template({**given, "template": body.template}))
    flat = given_flat_scoring(body)
    with errors_named_as_given(flat):
        if flat:
            mapped = {**body.model_dump(mode="json"), "scoring": scoring_from_flat(None, flat)}
            body = _validated_as_create(mapped)
        config, scoring, limits = _validated(session, body)
        check_flat_entrypoint(session, scoring.plugin_id, flat)
    if body.state is ChallengeState.ARCHIVED:
        raise ValidationFailed.at(["state"], "a new challenge is a draft or live")
    repo = ChallengeRepository(session, tenant_id)
    slug = body.slug or slug_of_title(body.title, lambda s: repo.get_by_slug(s) is not None)
    message = f"a challenge with slug '{slug}' already exists"
    # Its detail names the field, as a 422's do, so a form shows it beside the slug.
    taken = Conflict(
        message, code=SLUG_TAKEN, details=[problem(["body", "slug"], message, "taken")]
    )
    if repo.get_by_slug(slug) is not None:
        raise taken
    refuse_new_challenge(session, tenant_id, repo.count_kept)
    now = utcnow()
    challenge = Challenge(
        id=uuid.uuid4(),
        tenant_id=tenant_id,
        slug=slug,
        title=body.title,
        goal=body.goal,
        kind=body.kind,
        scoring=scoring,
        limits=limits,
        visibility=body.visibility,
        opens_at=body.opens_at,
        closes_at=body.closes_at,
        freeze_at=body.freeze_at,
        state=body.state,
        created_at=now,
        updated_at=now,
    )
    challenge.store_sections(config.model_dump(mode="json"))
    challenge.store_pages(body.pages)
    if not repo.add(challenge):
        raise taken
    return challenge


def get_challenge(session: Session, tenant_id: uuid.UUID, challenge_id: uuid.UUID) -> Challenge:
    challenge = ChallengeRepository(session, tenant_id).get(challenge_id)
    if challenge is None:
        raise NotFound("challenge not found")
    return challenge


def readable_challenge(
    session: Session, tenant_id: uuid.UUID, challenge_id: uuid.UUID, audience: Audience
) -> Challenge:
    """The challenge as a key of this audience may read it: a draft is its admins' only."""
    challenge = get_challenge(session, tenant_id, challenge_id)
    if challenge.state is ChallengeState.DRAFT and audience is not Audience.ADMIN:
        raise NotFound("challenge not found")
    return challenge


def kept_challenge_count(session: Session, tenant_id: uuid.UUID) -> int:
    """The tenant's challenges that are not deleted (drafts and archived ones too)."""
    return ChallengeRepository(session, tenant_id).count_kept()


def challenge_by_slug(session: Session, tenant_id: uuid.UUID, slug: str) -> Challenge | None:
    return ChallengeRepository(session, tenant_id).get_by_slug(slug)


def find_challenge(
    session: Session, tenant_id: uuid.UUID, challenge_id: uuid.UUID
) -> Challenge | None:
    return ChallengeRepository(session, tenant_id).get(challenge_id)


def scoring_of(
    session: Session, tenant_id: uuid.UUID, challenge_id: uuid.UUID
) -> ScoringConfig | None:
    """The challenge's scoring as saved now (None: the challenge is gone)."""
    return ChallengeRepository(session, tenant_id).scoring(challenge_id)


def list_challenges(
    session: Session,
    tenant_id: uuid.UUID,
    *,
    limit: int,
    offset: int,
    kind: str | None = None,
    visibility: Visibility | None = None,
    state: ChallengeState | None = None,
    audience: Audience = Audience.ADMIN,
) -> tuple[list[Challenge], int]:
    """A page of the tenant's challenges, newest first, and how many there are: those in
    `state` when given, else the live ones and, for admins, the drafts (archived ones are
    listed only when asked for). Drafts are never listed to other audiences."""
    states = {state} if state is not None else {ChallengeState.LIVE, ChallengeState.DRAFT}
    if audience is not Audience.ADMIN:
        states.discard(ChallengeState.DRAFT)
    return ChallengeRepository(session, tenant_id).page(
        limit=limit, offset=offset, kind=kind, visibility=visibility, states=states
    )


def public_challenge(session: Session, tenant_slug: str, challenge_slug: str) -> Challenge:
    """A public challenge by its tenant's slug and its own; anything else answers 404, and a
    challenge of a tenant that is not active 403 saying so (`TenantClosed`)."""
    tenant = tenant_by_slug(session, tenant_slug)
    if tenant is not None:
        challenge = ChallengeRepository(session, tenant.id).get_public(challenge_slug)
        if challenge is not None:
            refuse_unless_active(tenant.status)
            return challenge
    raise NotFound("no public challenge at this address")


def visible_challenge(
    session: Session, tenant_id: uuid.UUID, slug: str, visibilities: Collection[Visibility]
) -> Challenge | None:
    """The tenant's challenge with this slug, if it has one of these visibilities and is not
    a draft (an archived one keeps its pages)."""
    challenge = ChallengeRepository(session, tenant_id).get_by_slug(slug)
    if challenge is None or challenge.visibility not in visibilities:
        return None
    if challenge.state is ChallengeState.DRAFT:
        return None
    return challenge


def newest_challenges(
    session: Session,
    tenant_id: uuid.UUID,
    *,
    visibilities: Collection[Visibility] | None = None,
    limit: int,
) -> list[Challenge]:
    return ChallengeRepository(session, tenant_id).newest(visibilities=visibilities, limit=limit)


def tenants_with_public_challenges(
    session: Session, *, limit: int, offset: int, challenges_per_tenant: int
) -> tuple[list[tuple[Tenant, list[Challenge], int]], int]:
    """Tenants with public challenges (a page, by name), each with its newest public
    challenges and how many it has; and how many such tenants there are."""
    return repository.tenants_with_public_challenges(
        session, limit=limit, offset=offset, challenges_per_tenant=challenges_per_tenant
    )


def scoring_with_plugin(
    session: Session, admin: PlatformAdmin, plugin_id: str
) -> list[tuple[uuid.UUID, uuid.UUID]]:
    """(challenge id, tenant id) of every challenge, of every tenant, that scores with the
    plugin (the platform admin's, who changed it)."""
    rows = PlatformChallengeRepository(session, admin).scoring_of_every_challenge()
    return [
        (challenge_id, tenant_id)
        for challenge_id, tenant_id, scoring in rows
        if scored_by_plugin(scoring.strategy) and scoring.plugin_id == plugin_id
    ]


def count_naming_plugin(session: Session, admin: PlatformAdmin, plugin_id: str) -> int:
    """How many challenges, of every tenant, name the plugin in their scoring (the platform
    admin's, who removes it)."""
    rows = PlatformChallengeRepository(session, admin).scoring_of_every_challenge()
    return sum(1 for _, _, scoring in rows if scoring.plugin_id == plugin_id)


def _as_create(challenge: Challenge) -> dict[str, Any]:
    """The stored challenge as the body that would create it."""
    kind = kind_of(challenge)
    return {
        "slug": challenge.slug,
        "title": challenge.title,
        "goal": challenge.goal,
        "pages": challenge.page_texts.model_dump(),
        "kind": challenge.kind,
        **challenge.stored_sections(kind.config_model.model_fields),
        "scoring": challenge.scoring.model_dump(mode="json"),
        "limits": challenge.limits.model_dump(mode="json"),
        "opens_at": challenge.opens_at,
        "closes_at": challenge.closes_at,
        "freeze_at": challenge.freeze_at,
        "visibility": challenge.visibility,
        "state": challenge.state,
    }


def update_challenge(
    work: UnitOfWork, tenant_id: uuid.UUID, challenge_id: uuid.UUID, body: ChallengeUpdate
) -> tuple[Challenge, uuid.UUID | None]:
    """Applies the given fields, then validates the whole result as a new challenge would be.

    A change of scoring is announced (`ScoringChanged`): past attempts are scored again and
    the leaderboard rebuilt by a job, whose id is returned (it is sent once the caller
    commits). Changing the kind's sections (target, verifier, ...) does not rewrite past
    results.
    """
    session = work.session
    for name in body.model_extra or {}:
        # A challenge's slug and kind stay what they were created with.
        if name in ChallengeCreate.model_fields:
            raise ValidationFailed.at([name], "cannot be changed")
    challenge = ChallengeRepository(session, tenant_id).get(challenge_id, for_update=True)
    if challenge is None:
        raise NotFound("challenge not found")
    changes = body.model_dump(exclude_unset=True, mode="json")
    if challenge.state is ChallengeState.ARCHIVED and set(changes) - {"state"}:
        raise Conflict(
            "this challenge is archived: set its state to live to change it",
            code=CHALLENGE_ARCHIVED,
        )
    merged = _as_create(challenge)
    # Pages not named stay as they are.
    named = changes.pop("pages", None) or {}
    pages = {**merged["pages"], **{name: text for name, text in named.items() if text is not None}}
    merged.update(changes, pages=pages)
    flat = given_flat_scoring(body)
    with errors_named_as_given(flat):
        if flat:
            merged["scoring"] = scoring_from_flat(challenge.scoring.model_dump(mode="json"), flat)
        validated = _validated_as_create(merged)
        kind = find_kind(challenge.kind)
        before = config_of(challenge)
        kept = kind.named_models(before)
        config, scoring, limits = _validated(session, validated, kept)
        check_flat_entrypoint(session, scoring.plugin_id, flat)
    kind.check_edit(session, challenge, before, config)
    scoring_changed = scoring != challenge.scoring
    challenge.title = validated.title
    challenge.goal = validated.goal
    challenge.store_pages(validated.pages)
    challenge.store_sections(config.model_dump(mode="json"))
    challenge.scoring = scoring
    challenge.limits = limits
    challenge.visibility = validated.visibility
    challenge.opens_at = validated.opens_at
    challenge.closes_at = validated.closes_at
    challenge.freeze_at = validated.freeze_at
    challenge.state = validated.state
    challenge.updated_at = utcnow()
    session.flush()
    job_id = None
    if scoring_changed:
        jobs = work.publish(ScoringChanged(tenant_id, challenge.id, "challenge scoring changed"))
        job_id = jobs[0] if jobs else None
    return challenge, job_id


def open_now(work: UnitOfWork, tenant_id: uuid.UUID, challenge_id: uuid.UUID) -> Challenge:
    """Opens the challenge at once: it opens now, and a close already past is dropped (a
    close still ahead is kept)."""
    now = utcnow()
    challenge = ChallengeRepository(work.session, tenant_id).get(challenge_id)
    if challenge is None:
        raise NotFound("challenge not found")
    closes_at = challenge.closes_at
    keeps_close = closes_at is not None and closes_at > now
    freeze_at = challenge.freeze_at
    body = ChallengeUpdate(
        opens_at=now,
        closes_at=closes_at if keeps_close else None,
        # A freeze still ahead is kept with its close; one already begun never applied.
        freeze_at=freeze_at if keeps_close and freeze_at is not None and freeze_at > now else None,
    )
    return update_challenge(work, tenant_id, challenge_id, body)[0]


def close_now(work: UnitOfWork, tenant_id: uuid.UUID, challenge_id: uuid.UUID) -> Challenge:
    """Closes the challenge at once: attempts and entries sent from now on are refused (409).
    One that had not opened yet never will (its opening is dropped)."""
    now = utcnow()
    challenge = ChallengeRepository(work.session, tenant_id).get(challenge_id)
    if challenge is None:
        raise NotFound("challenge not found")
    opens_at = challenge.opens_at
    freeze_at = challenge.freeze_at
    body = ChallengeUpdate(
        opens_at=opens_at if opens_at is not None and opens_at < now else None,
        closes_at=now,
        # A freeze that had not begun never will.
        freeze_at=freeze_at if freeze_at is not None and freeze_at < now else None,
    )
    closed = update_challenge(work, tenant_id, challenge_id, body)[0]
    work.publish(ChallengeClosed(tenant_id, challenge_id))
    return closed


def set_state(
    work: UnitOfWork, tenant_id: uuid.UUID, challenge_id: uuid.UUID, state: ChallengeState
) -> Challenge:
    """Publishes a draft or unarchives (`live`), archives, or takes back to a draft."""
    return update_challenge(work, tenant_id, challenge_id, ChallengeUpdate(state=state))[0]


def delete_challenge(session: Session, tenant_id: uuid.UUID, challenge_id: uuid.UUID) -> None:
    """Deletes the challenge, keeping its data until it is purged: from now on no list, page,
    board, export or submission finds it (404), its queued work waits unrun, and its slug is
    free for a new challenge. Its tenant's admins can restore it, or purge it."""
    challenge = ChallengeRepository(session, tenant_id).get(challenge_id, for_update=True)
    if challenge is None:
        raise NotFound("challenge not found")
    challenge.deleted_at = utcnow()
    session.flush()


def deleted_challenges(
    session: Session, tenant_id: uuid.UUID, *, limit: int, offset: int
) -> tuple[list[Challenge], int]:
    """A page of the tenant's deleted challenges, the latest deleted first."""
    return ChallengeRepository(session, tenant_id).deleted_page(limit=limit, offset=offset)


def _deleted(repo: ChallengeRepository, challenge_id: uuid.UUID) -> Challenge:
    challenge = repo.get_deleted(challenge_id)
    if challenge is None:
        raise NotFound("no deleted challenge with this id")
    return challenge


def deleted_challenge(session: Session, tenant_id: uuid.UUID, challenge_id: uuid.UUID) -> Challenge:
    """One of the tenant's deleted challenges (404 for any other id)."""
    return _deleted(ChallengeRepository(session, tenant_id), challenge_id)


def _slug_taken(slug: str) -> Conflict:
    message = f"a challenge with slug '{slug}' already exists: restore this one under another slug"
    return Conflict(
        message,
        code=SLUG_TAKEN,
        details=[{"loc": ["body", "slug"], "msg": message, "type": "taken"}],
    )


def restore_challenge(
    session: Session, tenant_id: uuid.UUID, challenge_id: uuid.UUID, slug: str | None = None
) -> Challenge:
    """Brings a deleted challenge back as it was (its state, attempts, boards; its queued work
    runs again), under its slug or, when a challenge took that slug meanwhile, the `slug`
    given (409 otherwise)."""
    repo = ChallengeRepository(session, tenant_id)
    challenge = _deleted(repo, challenge_id)
    slug = slug or challenge.slug
    refuse_new_challenge(session, tenant_id, repo.count_kept)
    if repo.get_by_slug(slug) is not None or not repo.restore(challenge, slug):
        raise _slug_taken(slug)
    return challenge


def purge_challenge(session: Session, tenant_id: uuid.UUID, challenge_id: uuid.UUID) -> None:
    """Removes a deleted challenge for good, with its attempts, trials and boards (a red-blue
    challenge's defenses, attacks and matches too)."""
    repo = ChallengeRepository(session, tenant_id)
    repo.purge(_deleted(repo, challenge_id))


def participants_as_seen(
    session: Session, tenant_id: uuid.UUID, audience: Audience, *, limit: int, offset: int
) -> tuple[list[Participant], int]:
    """A page of the tenant's participants by handle as the audience may see them: while any
    of the tenant's challenges is frozen, everyone but its admins sees only those made before
    the earliest of those freezes began. A participant is made by a first submission under a
    new handle as often as by a sign-up, so one made since would tell that someone played
    since; participants carry no result (docs/boards.md)."""
    made_before = None
    if audience is not Audience.ADMIN:
        made_before = ChallengeRepository(session, tenant_id).earliest_freeze_going_on(utcnow())
    return list_participants(
        session, tenant_id, limit=limit, offset=offset, made_before=made_before
    )


def challenge_view(challenge: Challenge, audience: Audience) -> ChallengeRead | ChallengePublic:
    """What a reader sees of a challenge: everything for tenant admins, the participant's
    view for everyone else. The one place that decides it."""
    if audience is Audience.ADMIN:
        return to_admin_view(challenge)
    return to_public_view(challenge)


def _common(challenge: Challenge) -> dict[str, Any]:
    return {
        "id": challenge.id,
        "slug": challenge.slug,
        "title": challenge.title,
        "goal": challenge.goal,
        "pages": challenge.page_texts,
        "rules_sha256": challenge.rules_sha256,
        "kind": challenge.kind,
        # The built-in kinds' section columns are always shown, null where a kind has none.
        "target": None,
        "verifier": None,
        "benchmark": None,
        "evaluation": {},
        "limits": challenge.limits,
        "opens_at": challenge.opens_at,
        "closes_at": challenge.closes_at,
        "freeze_at": challenge.freeze_at,
        "visibility": challenge.visibility,
        "state": challenge.state,
        "status": challenge_status(challenge),
        "created_at": challenge.created_at,
    }


def to_admin_view(challenge: Challenge) -> ChallengeRead:
    return ChallengeRead.model_validate(
        {
            **_common(challenge),
            **config_of(challenge).model_dump(mode="json"),
            "scoring": challenge.scoring.model_dump(mode="json"),
            "updated_at": challenge.updated_at,
            "deleted_at": challenge.deleted_at,
        }
    )


def to_public_view(challenge: Challenge) -> ChallengePublic:
    """Strips what the kind hides (system prompts, answer keys, judge rubrics, servers) and
    the scorer's configuration."""
    return ChallengePublic.model_validate(
        {
            **_common(challenge),
            **kind_of(challenge).public_sections(config_of(challenge)),
            "scoring": {"strategy": challenge.strategy, "plugin_id": challenge.scoring.plugin_id},
        }
    )

"""Rules of challenges: creation, validated updates, deletion, and what each caller may see."""

from __future__ import annotations

import uuid
from collections.abc import Collection
from datetime import datetime
from typing import Any, Protocol

from pydantic import ValidationError
from sqlalchemy.orm import Session

from app.auth.subjects import Audience
from app.challenge import repository
from app.challenge.config import ChallengeStatus, Visibility
from app.challenge.events import ScoringChanged
from app.challenge.flat_scoring import (
    check_flat_entrypoint,
    errors_named_as_given,
    given_flat_scoring,
    scoring_from_flat,
)
from app.challenge.models import Challenge
from app.challenge.repository import ChallengeRepository
from app.challenge.schemas import (
    BenchmarkSpec,
    ChallengeCreate,
    ChallengePublic,
    ChallengeRead,
    ChallengeUpdate,
    TargetConfig,
)
from app.config import get_settings
from app.db import utcnow
from app.errors import Conflict, NotFound, ValidationFailed
from app.evaluation.benchmark import (
    Benchmark,
    BenchmarkError,
    DataFileNotFound,
    confined_data_files,
)
from app.evaluation.model_ids import model_id_problem
from app.outbound.policy import OutboundRefused
from app.scoring.strategies import Strategy
from app.scoring.validation import validate_scoring
from app.tenant.models import Tenant
from app.unit_of_work import UnitOfWork


class Scheduled(Protocol):
    """A challenge, or the part of one that a submission loads."""

    @property
    def opens_at(self) -> datetime | None: ...

    @property
    def closes_at(self) -> datetime | None: ...


def challenge_status(challenge: Scheduled, now: datetime | None = None) -> ChallengeStatus:
    now = now or utcnow()
    if challenge.opens_at is not None and now < challenge.opens_at:
        return ChallengeStatus.UPCOMING
    if challenge.closes_at is not None and now >= challenge.closes_at:
        return ChallengeStatus.CLOSED
    return ChallengeStatus.OPEN


def _check_api_base(config: ChallengeCreate) -> None:
    """The base URL is allowed and resolves to permitted addresses now; it is stored in its
    normalised form, which the worker checks again before every call."""
    holder: TargetConfig | BenchmarkSpec
    if config.target is not None:
        holder, field, path = config.target, "api_base", ["target", "api_base"]
    elif config.benchmark is not None:
        holder, field, path = config.benchmark, "actor_api_base", ["benchmark", "actor_api_base"]
    else:
        return
    api_base = getattr(holder, field)
    if api_base is None:
        return
    try:
        canonical = get_settings().outbound_policy().checked_base(api_base)
    except OutboundRefused as error:
        raise ValidationFailed.at(path, str(error)) from error
    setattr(holder, field, canonical)


def _check_judge_model(config: ChallengeCreate) -> None:
    """An `llm_judge` verifier's model is held to the same rules as every other model id."""
    if config.verifier is None or config.verifier.type != "llm_judge":
        return
    policy = get_settings().outbound_policy()
    problem = model_id_problem(config.verifier.model, policy.providers)
    if problem:
        raise ValidationFailed.at(["verifier", "model"], problem)


def _check_benchmark(config: ChallengeCreate) -> None:
    """The benchmark exists, its options load tasks, and it knows the feedback mode."""
    spec = config.benchmark
    if spec is None:
        return
    try:
        benchmark = Benchmark.load(spec.name)
    except BenchmarkError as exc:
        raise ValidationFailed.at(["benchmark", "name"], str(exc)) from exc
    for key, value in spec.options.items():
        if key in benchmark.path_options:
            continue  # resolved inside the data folders only, with one answer for all misses
        # Workers run with the service's files; a tenant must not point a benchmark at them.
        if isinstance(value, str) and (
            "/" in value or "\\" in value or value.startswith((".", "~"))
        ):
            raise ValidationFailed.at(
                ["benchmark", "options", key],
                "file paths are not accepted here; name a file bundled with the benchmark",
            )
    try:
        with confined_data_files(get_settings().benchmark_data_dir):
            first = next(iter(benchmark.iter_tasks(spec.options)), None)
    except DataFileNotFound as exc:
        raise ValidationFailed.at(["benchmark", "options", exc.option], str(exc)) from exc
    except Exception as exc:
        raise ValidationFailed.at(
            ["benchmark", "options"], f"the benchmark cannot load tasks: {exc}"
        ) from exc
    if first is None:
        raise ValidationFailed.at(["benchmark", "options"], "these options select no task")
    if config.evaluation.metric == "seq@k":
        mode = config.evaluation.feedback_mode
        known = benchmark.known_feedback_modes(critic_model=spec.critic_model)
        if mode not in known:
            raise ValidationFailed.at(
                ["evaluation", "feedback_mode"],
                f"'{mode}' is not a feedback mode of '{spec.name}' with these models; "
                f"known: {', '.join(sorted(known))}",
            )
    if benchmark.verifier_name == "llm" and spec.judge_model is None:
        raise ValidationFailed.at(["benchmark", "judge_model"], "this benchmark needs a judge")


def _validate(session: Session, config: ChallengeCreate) -> None:
    _check_api_base(config)
    _check_judge_model(config)
    _check_benchmark(config)
    validate_scoring(session, config.scoring.model_dump())


def _validated_as_create(data: dict[str, Any]) -> ChallengeCreate:
    try:
        return ChallengeCreate.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise ValidationFailed.at([str(p) for p in first["loc"]], first["msg"]) from exc


def create_challenge(session: Session, tenant_id: uuid.UUID, body: ChallengeCreate) -> Challenge:
    flat = given_flat_scoring(body)
    with errors_named_as_given(flat):
        if flat:
            mapped = {**body.model_dump(mode="json"), "scoring": scoring_from_flat(None, flat)}
            body = _validated_as_create(mapped)
        _validate(session, body)
        check_flat_entrypoint(session, body.scoring.plugin_id, flat)
    repo = ChallengeRepository(session, tenant_id)
    taken = Conflict(f"a challenge with slug '{body.slug}' already exists")
    if repo.get_by_slug(body.slug) is not None:
        raise taken
    now = utcnow()
    data = body.model_dump(mode="json")
    challenge = Challenge(
        id=uuid.uuid4(),
        tenant_id=tenant_id,
        slug=body.slug,
        title=body.title,
        goal=body.goal,
        kind=body.kind,
        target=data["target"],
        verifier=data["verifier"],
        benchmark=data["benchmark"],
        evaluation=data["evaluation"],
        scoring=body.scoring,
        limits=body.limits,
        visibility=body.visibility,
        opens_at=body.opens_at,
        closes_at=body.closes_at,
        created_at=now,
        updated_at=now,
    )
    if not repo.add(challenge):
        raise taken
    return challenge


def get_challenge(session: Session, tenant_id: uuid.UUID, challenge_id: uuid.UUID) -> Challenge:
    challenge = ChallengeRepository(session, tenant_id).get(challenge_id)
    if challenge is None:
        raise NotFound("challenge not found")
    return challenge


def challenge_by_slug(session: Session, tenant_id: uuid.UUID, slug: str) -> Challenge | None:
    return ChallengeRepository(session, tenant_id).get_by_slug(slug)


def find_challenge(
    session: Session, tenant_id: uuid.UUID, challenge_id: uuid.UUID
) -> Challenge | None:
    return ChallengeRepository(session, tenant_id).get(challenge_id)


def list_challenges(
    session: Session,
    tenant_id: uuid.UUID,
    *,
    limit: int,
    offset: int,
    kind: str | None = None,
    visibility: Visibility | None = None,
) -> tuple[list[Challenge], int]:
    """A page of the tenant's challenges, newest first, and how many there are."""
    return ChallengeRepository(session, tenant_id).page(
        limit=limit, offset=offset, kind=kind, visibility=visibility
    )


def public_challenge(session: Session, tenant_slug: str, challenge_slug: str) -> Challenge:
    """A public challenge by its tenant's slug and its own; anything else answers 404."""
    challenge = repository.get_public_challenge(session, tenant_slug, challenge_slug)
    if challenge is None:
        raise NotFound("no public challenge at this address")
    return challenge


def visible_challenge(
    session: Session, tenant_id: uuid.UUID, slug: str, visibilities: Collection[Visibility]
) -> Challenge | None:
    """The tenant's challenge with this slug, if it has one of these visibilities."""
    challenge = ChallengeRepository(session, tenant_id).get_by_slug(slug)
    if challenge is None or challenge.visibility not in visibilities:
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
    tenants, total = repository.tenants_with_public_challenges(
        session, limit=limit, offset=offset, challenges_per_tenant=challenges_per_tenant
    )
    counts = repository.public_challenge_counts(session, [tenant.id for tenant, _ in tenants])
    return [(tenant, challenges, counts.get(tenant.id, 0)) for tenant, challenges in tenants], total


def scoring_with_plugin(session: Session, plugin_id: str) -> list[tuple[uuid.UUID, uuid.UUID]]:
    """(challenge id, tenant id) of every challenge, of every tenant, that scores with the
    plugin."""
    return [
        (challenge_id, tenant_id)
        for challenge_id, tenant_id, scoring in repository.scoring_of_every_challenge(session)
        if scoring.strategy is Strategy.CUSTOM and scoring.plugin_id == plugin_id
    ]


def count_naming_plugin(session: Session, plugin_id: str) -> int:
    """How many challenges, of every tenant, name the plugin in their scoring."""
    rows = repository.scoring_of_every_challenge(session)
    return sum(1 for _, _, scoring in rows if scoring.plugin_id == plugin_id)


def _as_create(challenge: Challenge) -> dict[str, Any]:
    return {
        "slug": challenge.slug,
        "title": challenge.title,
        "goal": challenge.goal,
        "kind": challenge.kind,
        "target": challenge.target,
        "verifier": challenge.verifier,
        "benchmark": challenge.benchmark,
        "evaluation": challenge.evaluation,
        "scoring": challenge.scoring.model_dump(mode="json"),
        "limits": challenge.limits.model_dump(mode="json"),
        "opens_at": challenge.opens_at,
        "closes_at": challenge.closes_at,
        "visibility": challenge.visibility,
    }


def update_challenge(
    work: UnitOfWork, tenant_id: uuid.UUID, challenge_id: uuid.UUID, body: ChallengeUpdate
) -> tuple[Challenge, uuid.UUID | None]:
    """Applies the given fields, then validates the whole result as a new challenge would be.

    A change of scoring is announced (`ScoringChanged`): past attempts are scored again and
    the leaderboard rebuilt by a job, whose id is returned (it is sent once the caller
    commits). Changing the target or the verifier does not rewrite past results.
    """
    session = work.session
    challenge = ChallengeRepository(session, tenant_id).get(challenge_id, for_update=True)
    if challenge is None:
        raise NotFound("challenge not found")
    merged = _as_create(challenge)
    merged.update(body.model_dump(exclude_unset=True, mode="json"))
    flat = given_flat_scoring(body)
    with errors_named_as_given(flat):
        if flat:
            merged["scoring"] = scoring_from_flat(challenge.scoring.model_dump(mode="json"), flat)
        validated = _validated_as_create(merged)
        _validate(session, validated)
        check_flat_entrypoint(session, validated.scoring.plugin_id, flat)
    data = validated.model_dump(mode="json")
    scoring_changed = validated.scoring != challenge.scoring
    for field in ("title", "goal", "target", "verifier", "benchmark", "evaluation"):
        setattr(challenge, field, data[field])
    challenge.scoring = validated.scoring
    challenge.limits = validated.limits
    challenge.visibility = validated.visibility
    challenge.opens_at = validated.opens_at
    challenge.closes_at = validated.closes_at
    challenge.updated_at = utcnow()
    session.flush()
    job_id = None
    if scoring_changed:
        jobs = work.publish(ScoringChanged(tenant_id, challenge.id, "challenge scoring changed"))
        job_id = jobs[0] if jobs else None
    return challenge, job_id


def delete_challenge(session: Session, tenant_id: uuid.UUID, challenge_id: uuid.UUID) -> None:
    """Deletes the challenge with its attempts, trials and leaderboard."""
    repo = ChallengeRepository(session, tenant_id)
    challenge = repo.get(challenge_id)
    if challenge is None:
        raise NotFound("challenge not found")
    repo.delete(challenge)


def challenge_view(challenge: Challenge, audience: Audience) -> ChallengeRead | ChallengePublic:
    """What a reader sees of a challenge: everything for tenant admins, the participant's
    view for everyone else. The one place that decides it."""
    if audience is Audience.ADMIN:
        return to_admin_view(challenge)
    return to_public_view(challenge)


def to_admin_view(challenge: Challenge) -> ChallengeRead:
    return ChallengeRead.model_validate(
        {
            **_as_create(challenge),
            "id": challenge.id,
            "status": challenge_status(challenge),
            "created_at": challenge.created_at,
            "updated_at": challenge.updated_at,
        }
    )


def to_public_view(challenge: Challenge) -> ChallengePublic:
    """Strips every hidden part: system prompt, verifier keys, judge rubric."""
    target = challenge.target or {}
    verifier = challenge.verifier or {}
    public_verifier: dict[str, Any] | None = {"type": verifier.get("type")} if verifier else None
    if public_verifier is not None and verifier.get("type") == "llm_judge":
        public_verifier["votes"] = verifier.get("votes")
        public_verifier["pass_threshold"] = verifier.get("pass_threshold")
    return ChallengePublic(
        id=challenge.id,
        slug=challenge.slug,
        title=challenge.title,
        goal=challenge.goal,
        kind=challenge.kind,
        # The user template is not secret: it is part of the prompt each trial shows.
        target=(
            {"model": target.get("model"), "user_template": target.get("user_template")}
            if target
            else None
        ),
        verifier=public_verifier,
        # The server the models are called at is the operator's and the admin's business, as
        # a prompt challenge's target.api_base is.
        benchmark=(
            {key: value for key, value in challenge.benchmark.items() if key != "actor_api_base"}
            if challenge.benchmark is not None
            else None
        ),
        evaluation=challenge.evaluation,
        scoring={"strategy": challenge.strategy, "plugin_id": challenge.scoring.plugin_id},
        limits=challenge.limits,
        opens_at=challenge.opens_at,
        closes_at=challenge.closes_at,
        visibility=challenge.visibility,
        status=challenge_status(challenge),
        created_at=challenge.created_at,
    )

"""The red_blue kind's REST endpoints, mounted by the app because the kind is registered.
Each route parses, calls one service function and returns its view (docs/redblue.md)."""

from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import APIRouter, Query, Response, status

from app.kinds.api import Limit, Offset
from app.kinds.api.error_codes import (
    DAILY_LIMIT_REACHED,
    IDEMPOTENCY_KEY_REUSED,
    NOT_IN_ERROR,
    NOT_OPEN,
    QUOTA_MAX_ATTEMPTS_PER_DAY,
    QUOTA_MAX_PARTICIPANTS,
    RULES_NOT_ACCEPTED,
    TOTAL_LIMIT_REACHED,
    raises,
)
from app.kinds.api.http import (
    CONDITIONAL_READ,
    ApiRoute,
    ChallengeIdDep,
    IdempotencyKey,
    SessionDep,
    TenantAdminDep,
    TenantKeyDep,
    UnitOfWorkDep,
    accepted_headers,
)
from app.kinds.red_blue import service
from app.kinds.red_blue.schemas import (
    AttackCreate,
    AttackRead,
    DefenseCreate,
    DefenseRead,
    MatchList,
    MatchRead,
    Standings,
)

router = APIRouter(prefix="/v1", tags=["red-blue"], route_class=ApiRoute)

# Whom a member key reads for, as it submits for them (docs/boards.md, "Freeze").
ReadsFor = Annotated[
    str | None,
    Query(
        description="The participant (handle) a member key reads for: in a freeze, their own "
        "defenses, attacks and matches are live, others' as they stood at `freeze_at`. "
        "Admin keys see everything live whatever it says.",
    ),
]

_SUBMISSION_ANSWERS = raises(
    *NOT_OPEN,
    IDEMPOTENCY_KEY_REUSED,
    RULES_NOT_ACCEPTED,
    TOTAL_LIMIT_REACHED,
    DAILY_LIMIT_REACHED,
    QUOTA_MAX_PARTICIPANTS,
    QUOTA_MAX_ATTEMPTS_PER_DAY,
)


@router.post(
    "/challenges/{challenge_id}/defenses",
    status_code=status.HTTP_202_ACCEPTED,
    responses=_SUBMISSION_ANSWERS,
)
def post_defense(
    challenge_id: ChallengeIdDep,
    body: DefenseCreate,
    work: UnitOfWorkDep,
    caller: TenantKeyDep,
    response: Response,
    idempotency_key: IdempotencyKey = None,
) -> DefenseRead:
    """Submit a defense (red_blue challenges); a worker runs its self-test: poll
    `GET /v1/defenses/{id}` until it is `active` or `rejected` (with the reason)."""
    submitted = service.submit_defense(work, caller, challenge_id, body, idempotency_key)
    work.commit()
    entry = submitted.entry
    response.headers.update(accepted_headers(f"/v1/defenses/{entry.id}", submitted.created))
    return service.defense_view(entry, submitted.names, service.reader_of(caller))  # type: ignore[arg-type]


@router.get("/defenses/{defense_id}", responses=CONDITIONAL_READ)
def get_defense(
    defense_id: uuid.UUID, session: SessionDep, caller: TenantKeyDep, participant: ReadsFor = None
) -> DefenseRead:
    """A defense: its status, the reason of a rejection, its self-test answer, its matches."""
    return service.read_defense(session, caller, defense_id, acting_for=participant)


@router.post(
    "/defenses/{defense_id}/rerun",
    status_code=status.HTTP_202_ACCEPTED,
    responses=raises(NOT_IN_ERROR),
)
def post_defense_rerun(
    defense_id: uuid.UUID, work: UnitOfWorkDep, caller: TenantAdminDep
) -> DefenseRead:
    """Run again the self-test of a defense that ended in error (tenant admin)."""
    view = service.rerun_defense(work, caller, defense_id)
    work.commit()
    return view


@router.post(
    "/challenges/{challenge_id}/attacks",
    status_code=status.HTTP_202_ACCEPTED,
    responses=_SUBMISSION_ANSWERS,
)
def post_attack(
    challenge_id: ChallengeIdDep,
    body: AttackCreate,
    work: UnitOfWorkDep,
    caller: TenantKeyDep,
    response: Response,
    idempotency_key: IdempotencyKey = None,
) -> AttackRead:
    """Submit an attack (red_blue challenges); a worker pairs it with defenses by the
    challenge's pairing policy and runs its matches."""
    submitted = service.submit_attack(work, caller, challenge_id, body, idempotency_key)
    work.commit()
    entry = submitted.entry
    response.headers.update(accepted_headers(f"/v1/attacks/{entry.id}", submitted.created))
    return service.attack_view(entry, submitted.names, service.reader_of(caller))  # type: ignore[arg-type]


@router.get("/attacks/{attack_id}", responses=CONDITIONAL_READ)
def get_attack(
    attack_id: uuid.UUID, session: SessionDep, caller: TenantKeyDep, participant: ReadsFor = None
) -> AttackRead:
    """An attack: whether it is paired, its matches."""
    return service.read_attack(session, caller, attack_id, acting_for=participant)


@router.get("/challenges/{challenge_id}/matches", responses=CONDITIONAL_READ)
def list_matches(
    challenge_id: ChallengeIdDep,
    session: SessionDep,
    caller: TenantKeyDep,
    attack_id: uuid.UUID | None = None,
    defense_id: uuid.UUID | None = None,
    participant: Annotated[
        str | None,
        Query(
            description="Matches this participant (handle) played, on either side; with a "
            "member key, also whom it reads for: in a freeze, their matches are live.",
        ),
    ] = None,
    limit: Limit = 50,
    offset: Offset = 0,
) -> MatchList:
    """A red_blue challenge's matches, newest first; `participant` matches either side. In a
    freeze, a member key sees others' matches as they stood at `freeze_at`."""
    return service.list_matches(
        session,
        caller,
        challenge_id,
        attack_id=attack_id,
        defense_id=defense_id,
        participant=participant,
        limit=limit,
        offset=offset,
    )


@router.get("/matches/{match_id}", responses=CONDITIONAL_READ)
def get_match(
    match_id: uuid.UUID, session: SessionDep, caller: TenantKeyDep, participant: ReadsFor = None
) -> MatchRead:
    """A match with the exact system prompt, user message and output, and every category's
    verdict (`error_detail` for tenant admins only)."""
    return service.read_match(session, caller, match_id, acting_for=participant)


@router.post(
    "/matches/{match_id}/rerun",
    status_code=status.HTTP_202_ACCEPTED,
    responses=raises(NOT_IN_ERROR),
)
def post_match_rerun(match_id: uuid.UUID, work: UnitOfWorkDep, caller: TenantAdminDep) -> MatchRead:
    """Run again a match that ended in error (tenant admin)."""
    view = service.rerun_match(work, caller, match_id)
    work.commit()
    return view


@router.get("/challenges/{challenge_id}/standings", responses=CONDITIONAL_READ)
def get_standings(
    challenge_id: ChallengeIdDep, session: SessionDep, caller: TenantKeyDep
) -> Standings:
    """Team standings: red and blue points over all judged matches, red's share."""
    return service.read_standings(session, caller, challenge_id)


@router.get(
    "/public/{tenant_slug}/challenges/{challenge_slug}/standings", responses=CONDITIONAL_READ
)
def get_public_standings(tenant_slug: str, challenge_slug: str, session: SessionDep) -> Standings:
    """The team standings of a public red_blue challenge, without credentials."""
    return service.read_public_standings(session, tenant_slug, challenge_slug)


@router.get("/public/{tenant_slug}/challenges/{challenge_slug}/matches", responses=CONDITIONAL_READ)
def list_public_matches(
    tenant_slug: str,
    challenge_slug: str,
    session: SessionDep,
    attack_id: uuid.UUID | None = None,
    defense_id: uuid.UUID | None = None,
    participant: str | None = None,
    limit: Limit = 50,
    offset: Offset = 0,
) -> MatchList:
    """The matches of a public red_blue challenge: statuses, verdicts and points; in a
    freeze, as they stood at `freeze_at` (`participant` only filters)."""
    return service.list_public_matches(
        session,
        tenant_slug,
        challenge_slug,
        attack_id=attack_id,
        defense_id=defense_id,
        participant=participant,
        limit=limit,
        offset=offset,
    )


@router.get(
    "/public/{tenant_slug}/challenges/{challenge_slug}/matches/{match_id}",
    responses=CONDITIONAL_READ,
)
def get_public_match(
    tenant_slug: str, challenge_slug: str, match_id: uuid.UUID, session: SessionDep
) -> MatchRead:
    """One match of a public red_blue challenge, without its texts (system prompt, attack,
    output): those stay with the tenant and the match's two participants."""
    return service.read_public_match(session, tenant_slug, challenge_slug, match_id)

"""Red-blue competitions: blue participants submit defenses (system prompts), red ones attacks
(user messages); a worker matches them by the challenge's pairing policy, every match one
target call judged by each category of the judge suite; points, team standings and
Bradley-Terry ratings with bootstrap intervals follow (docs/redblue.md).

The rules are `rules/`'s (pure: no database, web or tasks); the rest of this package stores
and schedules them: its tables (`models.py`), SQL (`repository/`, bound to one tenant, and
the worker side's `cross_tenant/`), request-side rules and views (`service/`), endpoints
(`router.py`) and worker tasks (`worker.py`, `board_recompute.py`, `final_round_runs.py`,
`tasks.py`).
It takes entries of its own, no attempts (`accepts`): the core answers 422 to `POST
/v1/challenges/{id}/attempts`, naming the endpoints to use (`entries_hint`). Its unscored
runs (practice, test runs) are attempts: a one-off match of an attack against a defense
(`one_off.py`), which no pairing, match list or board ever sees.
"""

from __future__ import annotations

import uuid
from collections.abc import Collection, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel
from sqlalchemy.orm import Session

from app.kinds.api import (
    Accepts,
    AttemptJob,
    AttemptMetrics,
    Audience,
    ChallengeTemplate,
    Kind,
    KindConfig,
    KindLimits,
    KindMetrics,
    KindSubmission,
    NamedModel,
    RunContext,
    RunPurpose,
    RunsAttempts,
    ShownFields,
    Strategy,
    Submitted,
    UnscoredRequest,
    ValidationFailed,
    checked_api_base,
    fields_as,
    get_settings,
    stored_trials,
)
from app.kinds.api.exports import Dataset
from app.kinds.api.storage import Challenge
from app.kinds.red_blue import final_round, service
from app.kinds.red_blue.challenge_templates import RED_BLUE_GUARD
from app.kinds.red_blue.config import (
    RedBlueLimitFields,
    RedBlueSections,
    public_verifier,
    sections_of,
)
from app.kinds.red_blue.dispatch import SWEEP_TASK
from app.kinds.red_blue.exports import RED_BLUE_DATASETS
from app.kinds.red_blue.rules.final_round import Phase
from app.kinds.red_blue.schemas import OneOffMatch, verdicts_of
from app.kinds.red_blue.web import RedBluePages

if TYPE_CHECKING:
    from fastapi import APIRouter


class RedBlueKind(RedBluePages, RunsAttempts, Kind):
    name: ClassVar[str] = "red_blue"
    title: ClassVar[str] = "Red team vs blue team"
    description: ClassVar[str] = (
        "Blue writes defenses (system prompts), red writes attacks; every match is judged by "
        "the challenge's categories."
    )
    config_model: ClassVar[type[KindConfig]] = RedBlueSections
    # Its boards rank by ratings, not by a strategy over attempts; the one strategy is nominal.
    strategies: ClassVar[tuple[Strategy, ...]] = (Strategy.FIRST,)
    default_strategy: ClassVar[Strategy] = Strategy.FIRST
    limits_model: ClassVar[type[KindLimits]] = RedBlueLimitFields
    # Defenses and attacks, at endpoints of its own; no attempts.
    accepts: ClassVar[Accepts] = Accepts.ENTRIES
    task_modules: ClassVar[tuple[str, ...]] = ("app.kinds.red_blue.tasks",)
    periodic_tasks: ClassVar[Mapping[str, tuple[str, float]]] = {
        "sweep": (SWEEP_TASK, get_settings().sweep_interval_seconds)
    }
    model_modules: ClassVar[tuple[str, ...]] = ("app.kinds.red_blue.models",)
    cards_show_trials: ClassVar[bool] = False
    # Practice and test runs: an attack against a defense, one match that counts for no one.
    unscored_model: ClassVar[type[KindSubmission] | None] = OneOffMatch

    # Configuration ------------------------------------------------------------------------

    def templates(self) -> Sequence[ChallengeTemplate]:
        return (RED_BLUE_GUARD,)

    def entries_hint(self, challenge_id: uuid.UUID) -> str:
        return (
            f"submit defenses at POST /v1/challenges/{challenge_id}/defenses and attacks at "
            f"POST /v1/challenges/{challenge_id}/attacks"
        )

    def entrants(
        self,
        session: Session,
        tenant_id: uuid.UUID,
        challenge_id: uuid.UUID,
        participant_ids: Collection[uuid.UUID],
    ) -> set[uuid.UUID]:
        # Its entries are defenses and attacks (it takes no attempts).
        return service.entrants(session, tenant_id, challenge_id, participant_ids)

    def players(
        self, session: Session, tenant_id: uuid.UUID, challenge_id: uuid.UUID
    ) -> set[uuid.UUID]:
        return service.players(session, tenant_id, challenge_id)

    def private_board_revealed(self, session: Session, challenge: Challenge, now: datetime) -> bool:
        # With a final round, the boards are revealed once final; without one, at the close
        # (nothing private to reveal: the close's own notice says it).
        state = final_round.state_of(session, challenge)
        return state is not None and state.phase == Phase.FINAL

    def prepare(self, config: KindConfig) -> KindConfig:
        sections = sections_of(config)
        api_base = checked_api_base(sections.target.api_base, ["target", "api_base"])
        target = sections.target.model_copy(update={"api_base": api_base})
        return sections.model_copy(update={"target": target})

    def named_models(self, config: KindConfig) -> Sequence[NamedModel]:
        sections = sections_of(config)
        target = sections.target
        models = [
            NamedModel(
                ("target", "model"),
                target.model,
                api_base=target.api_base,
                base_field="target.api_base",
            )
        ]
        for position, category in enumerate(sections.judge_suite.categories):
            if category.verifier.type == "llm_judge":
                judge: tuple[str | int, ...] = ("judge_suite", "categories", position)
                models.append(NamedModel((*judge, "verifier", "model"), category.verifier.model))
        if sections.self_test.verifier.type == "llm_judge":
            models.append(
                NamedModel(("self_test", "verifier", "model"), sections.self_test.verifier.model)
            )
        return models

    def public_sections(self, config: KindConfig) -> dict[str, Any]:
        """The target's model and settings, the categories' names and verifier types, the
        self-test's prompt and verifier type, pairing and points: no pattern, rubric, judge
        model or server address."""
        sections = sections_of(config)
        target = sections.target
        return {
            "target": {
                "model": target.model,
                "temperature": target.temperature,
                "max_tokens": target.max_tokens,
            },
            "judge_suite": {
                "categories": [
                    {"name": c.name, "verifier": public_verifier(c.verifier)}
                    for c in sections.judge_suite.categories
                ]
            },
            "self_test": {
                "prompt": sections.self_test.prompt,
                "verifier": public_verifier(sections.self_test.verifier),
            },
            "pairing": sections.pairing.model_dump(mode="json"),
            "points": sections.points.model_dump(mode="json"),
            "final_round": sections.final_round,
        }

    def web_routers(self) -> Sequence[APIRouter]:
        # The kind's pages load with the web UI's routes, not in the worker.
        from app.kinds.red_blue.pages import router

        return (router,)

    def api_routers(self) -> Sequence[APIRouter]:
        # The kind's endpoints load with the API's routes, not in the worker.
        from app.kinds.red_blue.router import router

        return (router,)

    # Unscored runs ------------------------------------------------------------------------

    def unscored(self, request: UnscoredRequest) -> Submitted:
        """The attack and the defense within the challenge's lengths; a practice run without a
        defense plays against the participant's newest active one."""
        fields = fields_as(request.fields, OneOffMatch)
        defense = fields.system_prompt
        if defense is None:
            if request.purpose is RunPurpose.TEST or request.participant_id is None:
                raise ValidationFailed.at(["system_prompt"], "a test run needs a sample defense")
            defense = service.own_defense_text(
                request.session,
                request.tenant_id,
                request.target.challenge_id,
                request.participant_id,
            )
            if defense is None:
                raise ValidationFailed.at(
                    ["system_prompt"],
                    "you have no active defense to practise against here; give one",
                )
        service.check_entry_lengths(request.target.limits, defense=defense, attack=fields.prompt)
        return Submitted(kind_fields={"prompt": fields.prompt, "system_prompt": defense})

    def shown(self, kind_fields: dict[str, Any] | None) -> ShownFields:
        # The read's `prompt` is the attack; the defense is in its `kind_fields`.
        return ShownFields.prompt_apart(kind_fields)

    async def run(self, context: RunContext) -> AttemptMetrics:
        # The match's call and judging are the worker's: the API loads the kind, never them.
        from app.kinds.red_blue import one_off

        return await one_off.play(context, sections_of(context.job.config))

    def measure_own(
        self, session: Session, job: AttemptJob, metrics: AttemptMetrics
    ) -> KindMetrics | None:
        trials = stored_trials(session, job)
        return verdicts_of(trials[0].judge.details) if trials else None

    # Leaderboards -------------------------------------------------------------------------

    def read_leaderboard(
        self,
        session: Session,
        challenge: Challenge,
        audience: Audience,
        *,
        limit: int,
        offset: int,
        params: Mapping[str, str],
    ) -> BaseModel:
        """`?side=red|blue`: one side's board by rating (required)."""

        side = service.board_side(params)
        return service.read_leaderboard(
            session, challenge, side, audience, limit=limit, offset=offset
        )

    # Exports ------------------------------------------------------------------------------

    def exports(self) -> Sequence[Dataset]:
        """Both boards, defenses, attacks and matches (it has no attempts)."""

        return RED_BLUE_DATASETS

    def freeze_held(self, session: Session, challenge: Challenge) -> bool:
        """A final round keeps a freeze past the close until the boards are final."""
        return final_round.holds(final_round.state_of(session, challenge))


KIND = RedBlueKind()

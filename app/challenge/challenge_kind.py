"""Challenge kinds: what differs between kinds of challenge, behind one interface per layer.

A kind (`prompt`, `benchmark`, ...) is one package under `app/kinds/` holding one object,
`KIND`, whose class implements the interface of every layer that asks about kinds:

- here, the challenge layer's (`ChallengeKind`): its configuration sections and their
  checks, the scoring strategies it allows, what participants may see of it, and the API
  routers, worker task modules and tables it brings;
- `app.leaderboard.leaderboard_kind.LeaderboardKind`: its leaderboard;
- `app.attempt.attempt_kind.AttemptKind`: what a submission must hold, and, for a kind
  whose attempts run, `RunsAttempts`: its run on a worker;
- `app.web.web_kind.WebKind`: its fragments of the web pages.

Each layer asks the registry (`app.challenge.registry`) for the kind of a challenge and sees
it through its own interface, so a layer never imports a kind, and no code outside the kinds
asks `if kind == ...`. Adding a kind is a package and a registration line (docs/architecture.md).
"""

from __future__ import annotations

import uuid
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel, ValidationError

from app.challenge.config import KindLimits
from app.kit.db import STORED
from app.kit.errors import ValidationFailed, error_details
from app.kit.schemas import InputSchema
from app.scoring.schemas import ScoringConfig
from app.scoring.strategies import Strategy

if TYPE_CHECKING:
    from fastapi import APIRouter
    from sqlalchemy.orm import Session

    from app.challenge.models import Challenge


class KindConfig(InputSchema):
    """A kind's sections of a challenge body (`target`, `verifier`, ...), one field each.

    Each section is kept under its name in the challenge's `kind_sections` document
    (`Challenge.store_sections`). A section a participant must not see is left out of
    `public_sections`."""


class Accepts(StrEnum):
    """What participants submit to a kind's challenges: attempts (`POST
    /v1/challenges/{id}/attempts`, run by the core's runner), entries of its own at endpoints
    of its own (red_blue's defenses and attacks), or both. The core refuses attempts to a kind
    that takes none, so no kind implements a method only to refuse it."""

    ATTEMPTS = "attempts"
    ENTRIES = "entries"
    BOTH = "both"

    @property
    def attempts(self) -> bool:
        return self is not Accepts.ENTRIES


@dataclass(frozen=True)
class NamedModel:
    """A model a challenge's configuration names, and where: each is checked when the
    challenge is saved (its id, the server's policy, its provider's key), so a model no worker
    could call is refused with a 422 naming its field rather than at the first attempt."""

    path: tuple[str | int, ...]  # the field holding it (`target.model`)
    model: str
    # The base URL it is called at (it then carries that base's key, not a provider's).
    api_base: str | None = None
    # The field that may hold such a base URL beside it (`target.api_base`), if any.
    base_field: str | None = None
    # A glob of model ids (`openai/gpt-4o-*`): only the provider it names is checked.
    pattern: bool = False


@dataclass(frozen=True)
class ChallengeTemplate:
    """A challenge that works as it is, offline, for an organizer to start from: the body of a
    challenge of the kind without its slug and title, and the body of a test run that shows it
    working (`POST /v1/challenges/{id}/test-runs`)."""

    name: str  # lowercase letters, digits and hyphens: `prompt-injection`
    kind: str
    title: str  # in people's words
    description: str
    body: Mapping[str, Any]
    test_run: Mapping[str, Any]


def validation_failed(
    error: ValidationError,
    within: Sequence[str] = (),
    given: Mapping[str, Any] | None = None,
    model: type[BaseModel] | None = None,
    beside: Collection[str] = (),
) -> ValidationFailed:
    """Every error of a kind's model as a 422, each naming its field path as the body wrote
    it (`within` the body's field that holds the model: `limits`; `given`: what `model`
    validated; `beside`: the fields around it that it does not give, which a misspelling may
    have meant)."""
    return ValidationFailed.of(
        error_details(error.errors(), ["body", *within], given, model, beside)
    )


class ChallengeKind:
    """The challenge layer's view of a kind. Subclasses set the class attributes and override
    the checks they need; the defaults accept."""

    name: ClassVar[str]
    # Its name in people's words ("Red team vs blue team"); empty: made from `name`.
    title: ClassVar[str] = ""
    # One line for people: what a participant submits and how it is judged.
    description: ClassVar[str] = ""
    config_model: ClassVar[type[KindConfig]]
    strategies: ClassVar[tuple[Strategy, ...]]
    default_strategy: ClassVar[Strategy]
    # Its own limits, beside the core's in the challenge's `limits` document (none by
    # default); another kind's are refused, naming the kinds they are for.
    limits_model: ClassVar[type[KindLimits]] = KindLimits
    accepts: ClassVar[Accepts] = Accepts.ATTEMPTS

    def parse(self, sections: Mapping[str, Any], *, stored: bool = False) -> KindConfig:
        """The kind's sections, validated (a 422 naming the field when they are not).
        `stored`: read back from the database (see `app.kit.db.STORED`)."""
        try:
            return self.config_model.model_validate(
                dict(sections), context=STORED if stored else None
            )
        except ValidationError as error:
            raise validation_failed(error, (), dict(sections), self.config_model) from error

    def check(self, config: KindConfig, scoring: ScoringConfig) -> None:
        """Rules across the kind's sections and the scoring, needing nothing outside (raise
        `ValidationFailed.at(path, message)`). The strategy is checked before this."""

    def prepare(self, config: KindConfig) -> KindConfig:
        """Checks that need the world outside (the outbound policy, a benchmark's data),
        when a challenge is saved; returns the configuration to store (normalised)."""
        return config

    def check_edit(
        self, session: Session, challenge: Challenge, before: KindConfig, after: KindConfig
    ) -> None:
        """Refuses an edit of the challenge's sections (`before` to `after`) that the results
        it already stored could not follow (raise `Conflict` naming the field). By default
        every edit applies to new runs only, as the API says."""

    def named_models(self, config: KindConfig) -> Sequence[NamedModel]:
        """Every model the configuration names (targets, judges, critics, patterns of the
        models participants may submit), each with its field path."""
        return ()

    def public_sections(self, config: KindConfig) -> dict[str, Any]:
        """The sections as participants and member keys see them: nothing hidden (system
        prompts, answer keys, judge rubrics, server addresses)."""
        return config.model_dump(mode="json")

    @property
    def people_name(self) -> str:
        """The kind's name in people's words."""
        return self.title or self.name.replace("_", " ").capitalize()

    def templates(self) -> Sequence[ChallengeTemplate]:
        """Challenges of this kind that work as they are, offline (the first is the kind's
        default: a new form opens filled with it)."""
        return ()

    def entries_hint(self, challenge_id: uuid.UUID) -> str:
        """Where a kind that takes entries of its own takes them: the refusal of an attempt
        says so ("submit defenses at POST ...")."""
        return ""

    # What a kind brings besides its challenges' configuration.

    def api_routers(self) -> Sequence[APIRouter]:
        """Its own REST endpoints (mounted by the app after the core's)."""
        return ()

    # Celery modules of its own worker tasks (the worker includes them).
    task_modules: ClassVar[tuple[str, ...]] = ()
    # Its periodic tasks, sent by `gauntlet beat`: name -> (task name, every so many seconds).
    periodic_tasks: ClassVar[Mapping[str, tuple[str, float]]] = {}
    # Modules defining its own tables (imported with the core's models, so SQLAlchemy and
    # Alembic see them; their migrations live in migrations/versions like any other).
    model_modules: ClassVar[tuple[str, ...]] = ()


def strategy_refusal(kind: ChallengeKind, strategy: Strategy, others: Sequence[str]) -> str:
    """Why a strategy does not apply to this kind, and which kinds it is for."""
    allowed = " or ".join(f"'{s}'" for s in kind.strategies)
    where = f" (it is only for {' and '.join(others)} challenges)" if others else ""
    return f"strategy '{strategy}' does not apply to {kind.name} challenges{where}; use {allowed}"

"""The web layer's view of a challenge kind (see `app.challenge.challenge_kind`): its fragments
of the pages every kind shares.

The pages (challenge, attempt, leaderboard) are the web's; where they show something only the
kind knows, they call a macro of the kind's template `kinds/<name>/macros.html` (from the
kind's `templates_dir`) with a value the kind's methods below computed:

- `facts(facts)`: rows of the challenge page's facts list (`facts`);
- `form(form, page)`: the challenge page's attempt form (`form`; None: through the API only);
- `card_verdict(card)`, `card_body(card)`: an attempt card's head and body (`card.extra` is
  the kind's `card_extras`);
- `attempt_summary(card)`, `attempt_details(details, card, page)`: the attempt page
  (`attempt_details`);
- `panel_head(board)`, `panel_note(row)`: the leaderboard panel's participant column;
  `board_lead_head`, `board_lead_cells`, `board_head`, `board_cells`: the full leaderboard's
  own columns (`row.extra` is the kind's `board_extras`, `board.kind_info` its `board_info`).

A kind whose participants do not submit attempts (red_blue: defenses and attacks) plays on a
page part of its own: `play` returns its state and the challenge page shows `play(play, page)`
and `play_side(play, page)` in place of the attempt form, the participant's attempts and the
leaderboard panel; `leaderboard_path` sends the full leaderboard's address to a page of the
kind's own; `admin_panel` adds a section to the tenant admin page (`admin_panel(panel, page)`).

Two pages list challenges of every kind and ask each kind for its figures: the tenant admin
page (`dashboard_counts`: attempts by status, or a kind's own entries) and the tenant's
challenge list (`list_standings`: where the signed-in participant stands).

A kind without templates of its own uses `kind_default.html` (what every kind has: status,
prompt, metrics, trials), whose macros a kind's own template may call. `page` holds what a
fragment may need of the page (`csrf_token`, `submission_id`, `base_url`, `attempt_url`,
`error`).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from fastapi import APIRouter
from pydantic import BaseModel
from sqlalchemy.orm import Session

from app.attempt import service as attempt_service
from app.attempt.attempt_kind import AttemptKind
from app.attempt.models import AttemptStatus
from app.attempt.schemas import AttemptCreate, AttemptRead, UnscoredRunRead
from app.auth.subjects import TenantAdmin
from app.challenge.challenge_kind import KindConfig
from app.challenge.models import Challenge
from app.challenge.registry import find_kind, kind_as
from app.kit.unit_of_work import UnitOfWork
from app.scoring.strategies import Measure, ScoringStrategy
from app.tenant.models import Participant
from app.web.forms import FormError

if TYPE_CHECKING:
    from app.web import charts

DEFAULT_MACROS = "kind_default.html"


@dataclass(frozen=True)
class Spend:
    """One line of a challenge's model spend on its console's overview: what ran, how many
    times, and what its model calls cost (USD)."""

    label: str
    runs: int
    usd: float


@dataclass(frozen=True)
class Entrant:
    """A participant with entries in a challenge (its console's Participants tab): how many,
    and when the newest was made."""

    participant_id: uuid.UUID
    entries: int
    last_entry_at: datetime


@dataclass(frozen=True)
class Count:
    """One figure of a challenge's row on the tenant admin page."""

    label: str
    value: int
    # An error count: marked when it is not zero.
    problem: bool = False
    # Where, under the tenant's admin page, a form re-runs what it counts (a POST).
    rerun_path: str | None = None


@dataclass(frozen=True)
class ListStanding:
    """What the tenant's challenge list says of the signed-in participant on a challenge:
    their rank and its value, linked to where it shows (`path`, under the tenant's address),
    or a note when they played without being ranked yet."""

    rank: int | None = None
    value: str = ""
    path: str | None = None
    note: str | None = None


@dataclass(frozen=True)
class BaselineSubmitted:
    """What submitting a baseline stored: under which handle (as first spelled), and, for a
    new attempt, its kind (counted as queued; None on a replay of the same form)."""

    handle: str
    attempt_kind: str | None = None


# Submits a baseline: (unit of work, the admin, the challenge's id, the body an API client
# would send, `participant` and `baseline` included, the idempotency key). Raises the
# body model's ValidationError or the service's AppError.
SubmitBaseline = Callable[
    [UnitOfWork, TenantAdmin, uuid.UUID, dict[str, Any], str | None], BaselineSubmitted
]


@dataclass(frozen=True)
class BaselineForm:
    """One kind of entry a tenant admin submits as a baseline from the console: its fields
    (`model`, the entry's own as the API names them, `participant` and `baseline` left out)
    and how it is submitted."""

    name: str
    title: str
    button: str
    model: type[BaseModel]
    submit: SubmitBaseline


def _submit_attempt(
    work: UnitOfWork,
    admin: TenantAdmin,
    challenge_id: uuid.UUID,
    body: dict[str, Any],
    idempotency_key: str | None,
) -> BaselineSubmitted:
    stored = attempt_service.submit_attempt(
        work, admin, challenge_id, AttemptCreate.model_validate(body), idempotency_key
    )
    return BaselineSubmitted(stored.participant_handle, stored.kind if stored.created else None)


@dataclass(frozen=True)
class RunVerdict:
    """A practice or test run's verdict in words, and whether it reads as a success of the
    run (shown as passed) or not."""

    text: str
    good: bool


@dataclass(frozen=True)
class StrategyText:
    """How a page names and explains a challenge's ranking."""

    key: str
    label: str
    column: str
    explanation: str
    # What its column shows (the strategy's `measure`, unless the kind says): a board leaves
    # out a column of its own that would show it again (the submission time, the curve at k).
    measure: Measure | None = None


class WebKind:
    """The web layer's interface of a kind; the defaults show what every kind has."""

    name: ClassVar[str]
    # The folder of the kind's templates (its `macros.html`), read as "kinds/<name>/".
    templates_dir: ClassVar[Path | None] = None
    # The form fields its attempt form sends (besides the page's own).
    form_fields: ClassVar[tuple[str, ...]] = ()
    # Whether its attempt cards list trials (loaded for them); a kind whose attempts have
    # many (tasks times k) shows a summary and pages through them on the attempt page.
    cards_show_trials: ClassVar[bool] = True
    # How many columns of its own the full leaderboard has (`board_head`, `board_cells`).
    board_columns: ClassVar[int] = 0
    # Whether it draws a chart beside its leaderboards (`chart`).
    has_chart: ClassVar[bool] = False
    # Its full leaderboard's page, under the challenge's address (None: the web's own).
    leaderboard_path: ClassVar[str | None] = None
    # Its challenge form's fields that come first, by path, after the title, slug, visibility
    # and goal every form starts with; the others are folded under "More settings".
    essential_fields: ClassVar[tuple[str, ...]] = ()
    # Its challenge form's fields that name a model: each suggests the models this server can
    # call (the offline ones, and those of the providers it has keys for).
    model_fields: ClassVar[tuple[str, ...]] = ()

    def run_verdict(self, run: UnscoredRunRead) -> RunVerdict | None:
        """How a practice or test run's verdict reads (None: it has none yet): whether the
        verifier passed, by default."""
        if run.verdict is None:
            return None
        passed = bool(run.verdict.get("success"))
        return RunVerdict("Passed" if passed else "Failed", passed)

    def form_choices(self) -> Mapping[str, Sequence[tuple[str, str]]]:
        """What its challenge form's fields offer, by path: each value with its label in
        people's words (a text field becomes a choice of them)."""
        return {}

    def web_routers(self) -> Sequence[APIRouter]:
        """Pages of its own (mounted with the web's, before its catch-all 404)."""
        return ()

    @property
    def macros(self) -> str:
        """The template holding the kind's fragments."""
        return f"kinds/{self.name}/macros.html" if self.templates_dir else DEFAULT_MACROS

    def play(
        self,
        session: Session,
        challenge: Challenge,
        config: KindConfig,
        participant: Participant | None,
        params: Mapping[str, str],
        fields: Mapping[str, str],
        error: FormError | None,
    ) -> Any | None:
        """The challenge page's part of the kind's own (its forms, the participant's entries,
        its boards), from the query's `params` and a refused form's `fields` and `error`; None:
        the page's attempt form, attempts and leaderboard panel."""
        return None

    def baseline_forms(self) -> Sequence[BaselineForm]:
        """The entries an admin submits as baselines from the console: an attempt, of the
        kind's submission's fields, for a kind that takes attempts; none otherwise."""
        if not find_kind(self.name).accepts.attempts:
            return ()
        kind = kind_as(self.name, AttemptKind)
        return (
            BaselineForm(
                "attempt",
                "A baseline attempt",
                "Submit the baseline",
                kind.submission_model,
                _submit_attempt,
            ),
        )

    def entry_activity(
        self, session: Session, tenant_id: uuid.UUID, challenge_id: uuid.UUID, *, limit: int
    ) -> tuple[Sequence[Entrant], int]:
        """The challenge's participants with entries, the most recently active first (at most
        `limit`), and how many there are: its attempts, for a kind whose entries are attempts."""
        found, total = attempt_service.challenge_entrants(
            session, tenant_id, challenge_id, limit=limit
        )
        return [Entrant(*row) for row in found], total

    def kind_spend(
        self, session: Session, tenant_id: uuid.UUID, challenge_id: uuid.UUID
    ) -> Sequence[Spend]:
        """The model spend of the kind's own runs, beside its attempts, practice and test runs
        (which every kind's overview shows): a red-blue challenge's matches, say."""
        return ()

    def admin_panel(self, session: Session, admin: TenantAdmin) -> Any | None:
        """A section of the tenant admin page (its entries in error, say); None: nothing."""
        return None

    def dashboard_counts(
        self, session: Session, tenant_id: uuid.UUID, challenge_ids: Sequence[uuid.UUID]
    ) -> Mapping[uuid.UUID, Sequence[Count]]:
        """The figures of each challenge's row on the tenant admin page: its attempts by
        status."""
        counts = attempt_service.status_counts(session, tenant_id, challenge_ids)
        return {
            challenge: [
                Count(
                    status.value.capitalize(),
                    counts[challenge].get(status, 0),
                    problem=status is AttemptStatus.ERROR,
                    rerun_path=(
                        f"challenges/{challenge}/rerun-failed"
                        if status is AttemptStatus.ERROR
                        else None
                    ),
                )
                for status in AttemptStatus
            ]
            for challenge in challenge_ids
        }

    def list_standings(
        self, session: Session, participant: Participant, challenges: Sequence[Challenge]
    ) -> Mapping[uuid.UUID, ListStanding] | None:
        """What the tenant's challenge list says of the participant on each challenge; None:
        their best attempt's rank on the leaderboard, or how many attempts they made."""
        return None

    def describe_strategy(
        self, strategy: ScoringStrategy, config: KindConfig
    ) -> StrategyText | None:
        """How the kind names a strategy of its own; None: the pages' usual words."""
        return None

    def facts(self, challenge: Challenge, config: KindConfig) -> Any:
        return config

    def form(
        self,
        challenge: Challenge,
        config: KindConfig,
        fields: Mapping[str, str],
        error_field: str | None,
    ) -> Any | None:
        """The attempt form's state (as typed so far, kept when a submission is refused), or
        None when the kind's attempts are submitted through the API only."""
        return None

    def form_submission(
        self, config: KindConfig, fields: Mapping[str, str], handle: str
    ) -> AttemptCreate:
        """The submission a sent form asks for, checked as the API checks it (`FormError`
        naming the field when it is not)."""
        raise FormError("This page cannot submit attempts at this kind of challenge.")

    def card_extras(
        self,
        session: Session,
        challenge: Challenge,
        config: KindConfig,
        attempts: Sequence[AttemptRead],
    ) -> Mapping[uuid.UUID, Any]:
        """What the kind's cards show of each attempt besides its view (its progress, say)."""
        return {}

    def card_version(self, extra: Any) -> str:
        """Changes whenever what a card shows of its `extra` changes (the live page swaps the
        card in then); the status is part of the version already."""
        return ""

    def board_extras(
        self,
        session: Session,
        challenge: Challenge,
        config: KindConfig,
        attempt_ids: Sequence[uuid.UUID],
    ) -> Mapping[uuid.UUID, Any]:
        """What the leaderboard shows of each ranked attempt in the kind's own columns."""
        return {}

    def board_info(self, challenge: Challenge, config: KindConfig) -> Any:
        """What the kind's leaderboard columns say of the whole board (a heading, say)."""
        return None

    def chart(
        self,
        challenge: Challenge,
        config: KindConfig,
        rows: Sequence[Any],
        *,
        element_id: str,
    ) -> charts.CurveChart | None:
        """A chart beside the leaderboard, from its first page's rows (`LeaderboardRow`s)."""
        return None

    def attempt_details(
        self,
        session: Session,
        challenge: Challenge,
        config: KindConfig,
        card: Any,
        page_number: int,
    ) -> Any:
        """What the attempt page shows below its summary (`card` is the `AttemptCard`)."""
        return None


def by_kind(challenges: Iterable[Challenge]) -> list[tuple[WebKind, list[Challenge]]]:
    """Challenges grouped by their kind, in first-seen order: a page listing challenges of
    every kind asks each kind once for all of its own."""
    groups: dict[str, list[Challenge]] = {}
    for challenge in challenges:
        groups.setdefault(challenge.kind, []).append(challenge)
    return [(kind_as(name, WebKind), listed) for name, listed in groups.items()]

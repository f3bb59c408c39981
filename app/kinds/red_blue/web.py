"""The red_blue kind's web pages: the challenge page's part of its own (pick a side; blue
writes a defense and follows its self-test, red writes attacks; both follow their matches,
the two boards and the team standings, updating live), the full boards, a match's page, and
the admin page's matches in error with a re-run button. The forms, the live fragment and the
routes are `pages.py`'s.

What a page shows is what the service's `Reader` lets its visitor see: a signed-in
participant the texts of their own entries only (and the output of the matches they played),
a visitor no text at all, a tenant admin (on the admin pages) every text; never a category's
pattern or rubric, the self-test's check or another participant's defense.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, ClassVar

from sqlalchemy.orm import Session

from app.kinds.api import (
    ChallengeStatus,
    KindConfig,
    ScoringStrategy,
    TenantAdmin,
    UnitOfWork,
    UnscoredRunRead,
    get_settings,
)
from app.kinds.api.services import Left, as_subject, challenge_status, config_of
from app.kinds.api.storage import Challenge, Participant
from app.kinds.api.web import (
    BaselineForm,
    BaselineSubmitted,
    Count,
    Entrant,
    FormError,
    ListStanding,
    RunVerdict,
    Spend,
    StrategyText,
    WebKind,
    board_audience,
)
from app.kinds.red_blue import final_round, service
from app.kinds.red_blue.config import RedBlueLimitFields, RedBlueSections, sections_of, text_limit
from app.kinds.red_blue.models import DefenseStatus, MatchStatus, Side
from app.kinds.red_blue.repository import Places
from app.kinds.red_blue.schemas import (
    AttackCreate,
    AttackRead,
    BoardItem,
    DefenseCreate,
    DefenseRead,
    MatchRead,
    RedBlueLeaderboard,
    Standings,
)

KIND_TEMPLATE = "kinds/red_blue/macros.html"
SIDES = ("blue", "red")
BOARD_PANEL_SIZE = 10
BOARD_PAGE_SIZE = 50
ENTRIES_SHOWN = 10
MATCHES_SHOWN = 20


@dataclass(frozen=True)
class RedBlueFacts:
    """What the challenge page says of the competition: nothing hidden (categories by name
    and verifier type, the self-test's prompt but not its check)."""

    model: str
    categories: list[tuple[str, str]]
    self_test_prompt: str
    pairing: str
    points: str


@dataclass(frozen=True)
class MatchRow:
    """One of the participant's matches, as the API shows it to them (`MatchRead`: the output
    and their own side's text): the side they played, their entry that played (`entry`: the
    defense or attack, when among the newest shown on the page) and each category's verdict
    (True: breached, False: held, None: not judged yet)."""

    match: MatchRead
    side: str
    opponent: str
    verdicts: list[tuple[str, bool | None]]
    entry: DefenseRead | AttackRead | None = None

    @property
    def entry_kind(self) -> str:
        return "attack" if self.side == "red" else "defense"

    @property
    def entry_id(self) -> uuid.UUID:
        return self.match.attack_id if self.side == "red" else self.match.defense_id


@dataclass(frozen=True)
class BoardRow:
    item: BoardItem
    is_you: bool


@dataclass(frozen=True)
class BoardPanel:
    side: str
    rows: list[BoardRow]
    total: int
    computed_at: Any
    intervals_computed_at: Any
    # When the board froze, if the visitor sees it frozen (None: the live board).
    frozen_at: Any = None


@dataclass(frozen=True)
class RedBluePlay:
    """The challenge page's part of the kind: everything its macros show."""

    signed_in: bool
    status: ChallengeStatus
    opens_at: Any
    closes_at: Any
    side: str | None
    defense_limit: int
    attack_limit: int
    # What the limits leave the signed-in participant on each side (None: no limit).
    defenses_left: Left | None
    attacks_left: Left | None
    defense_text: str
    attack_text: str
    error: str | None
    error_field: str | None
    self_test_prompt: str
    categories: list[str]
    defenses: list[DefenseRead]
    attacks: list[AttackRead]
    matches: list[MatchRow]
    matches_total: int
    standings: Standings
    boards: dict[str, BoardPanel]
    live: bool

    @property
    def summary(self) -> str:
        """What a screen reader hears when it changes (the live fragment announces it)."""
        parts = []
        if self.defenses:
            parts.append(f"Your newest defense is {self.defenses[0].status}.")
        judged = sum(1 for row in self.matches if row.match.status == MatchStatus.COMPLETED)
        if self.matches:
            parts.append(f"{judged} of your {len(self.matches)} newest matches judged.")
        return " ".join(parts)


@dataclass(frozen=True)
class AdminMatches:
    """The admin page's matches in error (full reasons: the reader is a tenant admin)."""

    failed: list[service.FailedMatch]


def _sections(config: KindConfig) -> RedBlueSections:
    return sections_of(config)


def _limits(challenge: Challenge) -> tuple[int, int]:
    cap = get_settings().max_prompt_chars
    limits = RedBlueLimitFields.of(challenge.limits)
    return text_limit(limits.max_defense_chars, cap), text_limit(limits.max_attack_chars, cap)


def _board(
    session: Session,
    challenge: Challenge,
    side: Side,
    participant: Participant | None,
    *,
    limit: int,
    offset: int,
) -> tuple[BoardPanel, RedBlueLeaderboard]:
    audience = board_audience(participant)
    board = service.read_leaderboard(session, challenge, side, audience, limit=limit, offset=offset)
    handle = None
    if participant is not None:  # a member's row is their team's
        handle = service.player_at(session, as_subject(participant), challenge.id)[1]
    rows = [
        BoardRow(item, handle is not None and item.participant == handle) for item in board.items
    ]
    panel = BoardPanel(
        side.value,
        rows,
        board.total,
        board.computed_at,
        board.intervals_computed_at,
        board.frozen_at if board.frozen else None,
    )
    return panel, board


def board_panels(
    session: Session,
    challenge: Challenge,
    participant: Participant | None,
    *,
    limit: int,
    offset: int = 0,
) -> dict[str, BoardPanel]:
    return {
        side.value: _board(session, challenge, side, participant, limit=limit, offset=offset)[0]
        for side in (Side.RED, Side.BLUE)
    }


def _match_rows(
    matches: Sequence[MatchRead],
    handle: str,
    categories: list[str],
    entries: Sequence[DefenseRead | AttackRead] = (),
) -> list[MatchRow]:
    by_id = {entry.id: entry for entry in entries}
    rows = []
    for match in matches:
        side = "red" if match.red_participant == handle else "blue"
        opponent = match.blue_participant if side == "red" else match.red_participant
        judged = match.status == MatchStatus.COMPLETED and match.breached is not None
        breached = set(match.breached or ())
        verdicts = [(name, (name in breached) if judged else None) for name in categories]
        own_entry = by_id.get(match.attack_id if side == "red" else match.defense_id)
        rows.append(MatchRow(match, side, opponent, verdicts, own_entry))
    return rows


@dataclass(frozen=True)
class VerdictRow:
    """One category of a match: breached (True), held (False) or not judged yet (None), its
    points and the verifier's note (its public `raw_eval_output`, for readers of the texts)."""

    category: str
    breached: bool | None
    rating: float | None
    red_points: int | None
    blue_points: int | None
    note: str | None


@dataclass(frozen=True)
class MatchDetail:
    """A match's page: the match as the service let its viewer see it (`MatchRead`: texts
    are None where hidden), each category's verdict, and who is looking, which only chooses
    what the page says in place of a text it was not given.

    `viewer` is "admin" (a tenant admin on the admin page), "red" or "blue" (the signed-in
    participant who played that side) or None (anyone else)."""

    match: MatchRead
    verdicts: list[VerdictRow]
    viewer: str | None

    @property
    def shows_system_prompt(self) -> bool:
        return self.viewer in ("admin", "blue")

    @property
    def shows_user_message(self) -> bool:
        return self.viewer in ("admin", "red")

    @property
    def shows_output(self) -> bool:
        return self.viewer is not None

    @property
    def notes(self) -> bool:
        return any(row.note for row in self.verdicts)


def match_detail(
    challenge: Challenge, match: MatchRead, handle: str | None, *, admin: bool = False
) -> MatchDetail:
    """What the match page shows: the stored verdicts in their order, or (before the match
    is judged) the challenge's categories, each pending."""
    categories = [c.name for c in _sections(config_of(challenge)).judge_suite.categories]
    if match.verdicts is not None:
        verdicts = [
            VerdictRow(
                v.category, v.breached, v.rating, v.red_points, v.blue_points, v.raw_eval_output
            )
            for v in match.verdicts
        ]
    else:
        verdicts = [VerdictRow(name, None, None, None, None, None) for name in categories]
    viewer = None
    if admin:
        viewer = "admin"
    elif handle is not None and handle == match.red_participant:
        viewer = "red"
    elif handle is not None and handle == match.blue_participant:
        viewer = "blue"
    return MatchDetail(match, verdicts, viewer)


def version_of(html: str) -> str:
    return hashlib.sha256(html.encode()).hexdigest()[:16]


# The pairing policies in people's words (docs/redblue.md, "Pairing").
PAIRING_POLICY_WORDS = {
    "round_robin": "Every opponent, newest first (round robin)",
    "latest_best": "The n best rated opponents (latest best)",
    "random_active": "n opponents drawn at random (random active)",
}


class RedBluePages(WebKind):
    templates_dir: ClassVar[Path | None] = Path(__file__).resolve().parent / "templates"
    leaderboard_path: ClassVar[str | None] = "/boards"
    essential_fields: ClassVar[tuple[str, ...]] = (
        "target.model",
        "judge_suite",
        "self_test.prompt",
        "self_test.verifier",
        "pairing.policy",
    )
    model_fields: ClassVar[tuple[str, ...]] = ("target.model",)

    def form_choices(self) -> Mapping[str, Sequence[tuple[str, str]]]:
        return {"pairing.policy": list(PAIRING_POLICY_WORDS.items())}

    def run_verdict(self, run: UnscoredRunRead) -> RunVerdict | None:
        # The trial "succeeds" when the attack breaches: a defense that held is what a test
        # run of a guard hopes to see, not a failure.
        if run.verdict is None:
            return None
        breached = (run.kind_metrics or {}).get("breached") or []
        if not run.verdict.get("success"):
            return RunVerdict("Defense held", True)
        return RunVerdict("Breached: " + ", ".join(str(name) for name in breached), False)

    def describe_strategy(
        self, strategy: ScoringStrategy, config: KindConfig
    ) -> StrategyText | None:
        return StrategyText(
            "rating",
            "Ratings",
            "Rating",
            "each side ranks by its Bradley-Terry rating from the matches, with a 95 % "
            "interval; rank = 1 + the number of participants whose interval lies entirely "
            "above.",
        )

    def entry_activity(
        self, session: Session, tenant_id: uuid.UUID, challenge_id: uuid.UUID, *, limit: int
    ) -> tuple[Sequence[Entrant], int]:
        """Its defenses and attacks, both sides counted."""
        found, total = service.entry_activity(session, tenant_id, challenge_id, limit=limit)
        return [Entrant(*row) for row in found], total

    def kind_spend(
        self, session: Session, tenant_id: uuid.UUID, challenge_id: uuid.UUID
    ) -> Sequence[Spend]:
        """The matches played: each calls the target model, and the judges when they grade."""
        return [Spend("Matches", *service.match_spend(session, tenant_id, challenge_id))]

    def dashboard_counts(
        self, session: Session, tenant_id: uuid.UUID, challenge_ids: Sequence[uuid.UUID]
    ) -> Mapping[uuid.UUID, Sequence[Count]]:
        counts = {}
        for challenge, activity in service.activity(session, tenant_id, challenge_ids).items():
            counts[challenge] = [
                Count("Defenses", activity.defenses),
                Count("Attacks", activity.attacks),
                Count("Matches", sum(activity.matches.values())),
                Count("Match errors", activity.matches.get(MatchStatus.ERROR, 0), problem=True),
                Count("Awaiting ratings", activity.unrated),
            ]
        return counts

    def list_standings(
        self, session: Session, participant: Participant, challenges: Sequence[Challenge]
    ) -> Mapping[uuid.UUID, ListStanding] | None:
        """The participant's best rank over the two sides, with that side's rating (in a
        freeze, on the frozen boards); a note for entries not rated yet."""
        slugs = {challenge.id: challenge.slug for challenge in challenges}
        viewer = as_subject(participant)
        audience = board_audience(participant)
        standings = {}
        for challenge, place in service.places(session, viewer, challenges, audience).items():
            if place.ratings:
                side, rank, rating = place.ratings[0]
                standings[challenge] = ListStanding(
                    rank=rank,
                    value=f"{side} · rating {rating:,.0f}",
                    path=f"challenges/{slugs[challenge]}/boards?side={side}",
                )
            elif place.defenses or place.attacks:
                standings[challenge] = ListStanding(note=f"{_entries(place)}, not rated yet")
        return standings

    def facts(self, challenge: Challenge, config: KindConfig) -> Any:
        sections = _sections(config)
        pairing = sections.pairing
        points = sections.points
        return RedBlueFacts(
            model=sections.target.model,
            categories=[
                (c.name, c.verifier.type.replace("_", " ")) for c in sections.judge_suite.categories
            ],
            self_test_prompt=sections.self_test.prompt,
            pairing=f"{pairing.policy.replace('_', ' ')}, at most "
            f"{pairing.max_matches_per_submission} matches per submission",
            points=f"red +{points.red_per_breach} per category breached, blue "
            f"+{points.blue_per_hold} per category held",
        )

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
        return play_state(session, challenge, config, participant, params, fields, error)

    def admin_panel(self, session: Session, admin: TenantAdmin) -> Any | None:
        return AdminMatches(service.recent_match_errors(session, admin, limit=20))

    def baseline_forms(self) -> Sequence[BaselineForm]:
        return (
            BaselineForm(
                "defense",
                "A baseline defense (blue)",
                "Submit the baseline defense",
                DefenseCreate,
                partial(_submit_entry, Side.BLUE),
            ),
            BaselineForm(
                "attack",
                "A baseline attack (red)",
                "Submit the baseline attack",
                AttackCreate,
                partial(_submit_entry, Side.RED),
            ),
        )


def _submit_entry(
    side: Side,
    work: UnitOfWork,
    admin: TenantAdmin,
    challenge_id: uuid.UUID,
    body: dict[str, Any],
    idempotency_key: str | None,
) -> BaselineSubmitted:
    """A baseline defense (blue) or attack (red), as the API's bodies submit them."""
    if side is Side.BLUE:
        defense = DefenseCreate.model_validate(body)
        stored = service.submit_defense(work, admin, challenge_id, defense, idempotency_key)
    else:
        attack = AttackCreate.model_validate(body)
        stored = service.submit_attack(work, admin, challenge_id, attack, idempotency_key)
    return BaselineSubmitted(stored.participant_handle)


def _entries(place: Places) -> str:
    parts = []
    if place.defenses:
        parts.append(f"{place.defenses} defense{'s' if place.defenses != 1 else ''}")
    if place.attacks:
        parts.append(f"{place.attacks} attack{'s' if place.attacks != 1 else ''}")
    return " and ".join(parts)


def play_state(
    session: Session,
    challenge: Challenge,
    config: KindConfig,
    participant: Participant | None,
    params: Mapping[str, str],
    fields: Mapping[str, str] | None = None,
    error: FormError | None = None,
) -> RedBluePlay:
    fields = fields or {}
    sections = _sections(config)
    categories = [c.name for c in sections.judge_suite.categories]
    defense_limit, attack_limit = _limits(challenge)
    side = fields.get("side") or params.get("side")
    if side not in SIDES:
        side = None
    defenses: list[DefenseRead] = []
    attacks: list[AttackRead] = []
    matches: list[MatchRow] = []
    matches_total = 0
    defenses_left = attacks_left = None
    if participant is not None:
        subject = as_subject(participant)
        # A member plays as their team: its entries, quota and matches are theirs.
        player, name = service.player_at(session, subject, challenge.id)
        defenses_left, attacks_left = service.entries_left(session, challenge, participant.id)
        defenses, attacks = service.participant_entries(
            session, subject, challenge, player, limit=ENTRIES_SHOWN
        )
        listed, matches_total = service.list_match_views(
            session, subject, challenge.id, limit=MATCHES_SHOWN
        )
        matches = _match_rows(listed, name, categories, [*defenses, *attacks])
        if side is None and (defenses or attacks):
            # Back on the page: the side played last.
            newest_defense = defenses[0].created_at if defenses else None
            newest_attack = attacks[0].created_at if attacks else None
            if newest_attack is None or (
                newest_defense is not None and newest_defense >= newest_attack
            ):
                side = "blue"
            else:
                side = "red"
    standings = service.challenge_standings(session, challenge, board_audience(participant))
    boards = board_panels(session, challenge, participant, limit=BOARD_PANEL_SIZE)
    live = participant is not None and (
        any(d.status == DefenseStatus.PENDING for d in defenses)
        or any(a.status == "pending" for a in attacks)
        or any(row.match.status in (MatchStatus.QUEUED, MatchStatus.RUNNING) for row in matches)
        or (standings.pending and bool(matches))
        # The final round under way: its count of matches played moves.
        or final_round.holds(standings.final_round)
    )
    return RedBluePlay(
        signed_in=participant is not None,
        status=challenge_status(challenge),
        opens_at=challenge.opens_at,
        closes_at=challenge.closes_at,
        side=side,
        defense_limit=defense_limit,
        attack_limit=attack_limit,
        defenses_left=defenses_left,
        attacks_left=attacks_left,
        defense_text=fields.get("system_prompt", "") if side == "blue" else "",
        attack_text=fields.get("prompt", "") if side == "red" else "",
        error=error.message if error is not None else None,
        error_field=error.field if error is not None else None,
        self_test_prompt=sections.self_test.prompt,
        categories=categories,
        defenses=defenses,
        attacks=attacks,
        matches=matches,
        matches_total=matches_total,
        standings=standings,
        boards=boards,
        live=live,
    )

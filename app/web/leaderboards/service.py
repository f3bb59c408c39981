"""Leaderboard pages and panels: a page of rows with the participant's own wherever it is,
how the ranking is named, and what the challenge's kind adds (its columns, its chart)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from sqlalchemy.orm import Session

from app.challenge.challenge_kind import KindConfig
from app.challenge.models import Challenge
from app.challenge.registry import kind_as
from app.challenge.service import config_of
from app.leaderboard import service as leaderboards
from app.leaderboard.schemas import LeaderboardItem
from app.scoring.strategies import scoring_strategy
from app.team import service as teams
from app.tenant.models import Participant
from app.web import charts
from app.web.visitors import board_audience
from app.web.web_kind import DEFAULT_MACROS, StrategyText, WebKind

LEADERBOARD_PAGE_SIZE = 50
LEADERBOARD_PANEL_SIZE = 10
# Charts beside a leaderboard draw its top rows.
CHART_ROWS = 8


def strategy_text(challenge: Challenge, config: KindConfig | None = None) -> StrategyText:
    """How the pages name and explain the challenge's ranking (the kind may say it its way)."""
    strategy = scoring_strategy(challenge.strategy)
    kind = kind_as(challenge.kind, WebKind)
    own = kind.describe_strategy(strategy, config if config is not None else config_of(challenge))
    if own is not None:
        return own if own.measure is not None else replace(own, measure=strategy.measure)
    return StrategyText(
        str(strategy.name),
        strategy.label,
        strategy.column,
        strategy.explained(challenge.scoring.plugin_id),
        strategy.measure,
    )


def ranked_value(challenge: Challenge, item: LeaderboardItem) -> str:
    """The value the challenge's strategy ranks this row by, as shown in its column."""
    return scoring_strategy(challenge.strategy).shown(item)


@dataclass(frozen=True)
class LeaderboardRow:
    item: LeaderboardItem
    value: str
    is_you: bool
    extra: Any = None  # what the kind's columns show of the row's attempt
    macros: str = DEFAULT_MACROS


@dataclass(frozen=True)
class LeaderboardView:
    strategy: StrategyText
    rows: list[LeaderboardRow]
    total: int
    own: LeaderboardRow | None  # the participant's row, on this page or not
    own_on_page: bool
    # When the board froze, if the visitor sees it frozen (their own row is then their live
    # result, shown apart); None: the live board.
    frozen_at: Any = None
    # When the public board froze, if the visitor (an admin) sees the live board meanwhile.
    live_in_freeze_since: Any = None
    macros: str = DEFAULT_MACROS  # the kind's fragments: its columns
    kind_info: Any = None  # what the kind's columns say of the whole board
    kind_columns: int = 0


def _row(
    challenge: Challenge, item: LeaderboardItem, handle: str | None, macros: str
) -> LeaderboardRow:
    return LeaderboardRow(
        item, ranked_value(challenge, item), item.participant == handle, macros=macros
    )


def leaderboard_view(
    session: Session,
    challenge: Challenge,
    participant: Participant | None,
    *,
    limit: int,
    offset: int,
) -> LeaderboardView:
    """A page of the leaderboard, and the participant's own row wherever it is; each row with
    what the challenge's kind shows of its attempt (one query for the page)."""
    kind = kind_as(challenge.kind, WebKind)
    config = config_of(challenge)
    strategy = strategy_text(challenge, config)
    board = leaderboards.read_leaderboard(
        session, challenge, board_audience(participant), limit=limit, offset=offset
    )
    # A member's own row is their team's.
    team = None
    if participant is not None:
        team = teams.team_of(session, challenge.tenant_id, challenge.id, participant.id)
    handle = participant.handle if participant is not None else None
    members = None
    if team is not None:
        handle, members = team.name, [member.participant for member in team.members]
    rows = [_row(challenge, item, handle, kind.macros) for item in board.items]
    own = next((row for row in rows if row.is_you), None)
    own_on_page = own is not None
    if participant is not None and handle is not None and (own is None or board.frozen):
        # In a freeze, the participant's own row is their live result, shown apart.
        own_on_page = own is not None and not board.frozen
        player = participant.id if team is None else team.id
        standing = leaderboards.standings(session, challenge.tenant_id, player, [challenge.id]).get(
            challenge.id
        )
        if standing is not None:
            item = leaderboards.item_of(standing.entry, handle, rank=standing.rank, members=members)
            own = _row(challenge, item, handle, kind.macros)
    wanted = [row.item.attempt_id for row in rows]
    if own is not None and not own_on_page:
        wanted.append(own.item.attempt_id)
    extras = kind.board_extras(session, challenge, config, wanted)

    def with_extra(row: LeaderboardRow) -> LeaderboardRow:
        return replace(row, extra=extras.get(row.item.attempt_id))

    return LeaderboardView(
        strategy,
        [with_extra(row) for row in rows],
        board.total,
        with_extra(own) if own is not None else None,
        own_on_page,
        frozen_at=board.frozen_at if board.frozen else None,
        live_in_freeze_since=None if board.frozen else board.frozen_at,
        macros=kind.macros,
        kind_info=kind.board_info(challenge, config),
        kind_columns=kind.board_columns,
    )


def leaderboard_chart(
    session: Session,
    challenge: Challenge,
    participant: Participant | None,
    board: LeaderboardView,
    *,
    first_page: bool,
    element_id: str = "curve-chart",
) -> charts.CurveChart | None:
    """The kind's chart beside the leaderboard, from its top rows (read again when `board` is
    not the first page or holds fewer)."""
    kind = kind_as(challenge.kind, WebKind)
    if not kind.has_chart:
        return None
    top = board
    if not first_page or len(board.rows) < min(board.total, CHART_ROWS):
        top = leaderboard_view(session, challenge, participant, limit=CHART_ROWS, offset=0)
    return kind.chart(challenge, config_of(challenge), top.rows, element_id=element_id)

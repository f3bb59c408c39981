"""A red-blue board row says whether another shares its rank, whatever page it is on."""

from __future__ import annotations

import uuid

import pytest

from app.kinds.red_blue import service
from app.kinds.red_blue.models import Side
from app.kinds.red_blue.repository import BoardLine

RANKS = [1, 1, 3, 4, 4, 4, 7]


class Board:
    """The stored board's positions 1..n, as the repository pages them."""

    def __init__(self, ranks: list[int]) -> None:
        self.lines = [
            BoardLine(f"p{i}", rank, 1000.0 - i, 900.0, 1100.0, 0, 0, 0)
            for i, rank in enumerate(ranks)
        ]

    def ratings_page(
        self, challenge_id: uuid.UUID, side: Side, *, limit: int, offset: int, frozen: bool
    ) -> tuple[list[BoardLine], int]:
        return self.lines[offset : offset + limit], len(self.lines)


@pytest.mark.parametrize(
    ("offset", "limit", "tied"),
    [
        (0, 2, [True, True]),
        (2, 2, [False, True]),
        (4, 2, [True, True]),
        (6, 2, [False]),
        (0, 7, [True, True, False, True, True, True, False]),
        (3, 1, [True]),  # tied with the row after the page only
        (5, 1, [True]),  # with the row before and the row after
        (7, 2, []),
    ],
)
def test_a_shared_rank_is_told_across_page_edges(offset: int, limit: int, tied: list[bool]) -> None:
    rows, total = service.board_page_with_ties(
        Board(RANKS),  # type: ignore[arg-type]
        uuid.uuid4(),
        Side.RED,
        limit=limit,
        offset=offset,
    )
    assert total == len(RANKS)
    assert [line.handle for line, _ in rows] == [f"p{i}" for i in range(offset, offset + len(tied))]
    assert [flag for _, flag in rows] == tied

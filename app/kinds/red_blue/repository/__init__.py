"""SQL of the red_blue kind's request side: reads and writes bound to one tenant, which the
repositories take when made (`RedBlueRepository(session, tenant_id)`) and filter every
statement by.

One module a concern: `rows` (what queries answer with), `scoped` (entries, matches, boards
and what a reader sees of them) and `final_round` (where a final round stands). The worker
side's statements, which take ids from the queue whatever their tenant, are
`app.kinds.red_blue.cross_tenant`'s.
"""

from __future__ import annotations

from app.kinds.red_blue.repository.final_round import FinalRoundRepository
from app.kinds.red_blue.repository.rows import (
    Activity,
    BoardLine,
    EntryModel,
    Places,
    T,
)
from app.kinds.red_blue.repository.scoped import RedBlueRepository

__all__ = [
    "Activity",
    "BoardLine",
    "EntryModel",
    "FinalRoundRepository",
    "Places",
    "RedBlueRepository",
    "T",
]

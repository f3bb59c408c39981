"""The exports' view of a challenge kind (see `app.challenge.challenge_kind`): which datasets
`GET /v1/challenges/{id}/exports` offers for the kind's challenges.

Kinds whose challenges rank attempts on the core's leaderboard keep the default (leaderboard,
attempts, trials). A kind with tables or a leaderboard of its own exports those instead,
as datasets of `app.export.stream` (red_blue: both boards, defenses, attacks, matches).
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy.orm import Session

from app.challenge.models import Challenge
from app.export.datasets import CORE_DATASETS
from app.export.stream import Dataset


class ExportKind:
    def exports(self) -> Sequence[Dataset]:
        """The challenge's datasets, in the order the admin page offers them."""
        return CORE_DATASETS

    def freeze_held(self, session: Session, challenge: Challenge) -> bool:
        """Whether the kind keeps the challenge's freeze past its close now (red_blue: until
        its final round's boards are final), so the exports say so as in a freeze."""
        return False

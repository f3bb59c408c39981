"""The challenge page's competition parts: its pages as tabs, the rules to accept, the
announcements (docs/web.md, "Competition pages")."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from markupsafe import Markup
from sqlalchemy.orm import Session

from app.challenge.models import Challenge
from app.competition import service
from app.competition.markdown import render
from app.competition.schemas import RulesAcceptanceRead
from app.tenant.models import Participant

# The tabs, in order: (name in the address, label).
TABS = (
    ("overview", "Overview"),
    ("rules", "Rules"),
    ("data", "Data"),
    ("evaluation", "Evaluation"),
)
ANNOUNCEMENTS_SHOWN = 20


@dataclass(frozen=True)
class Tab:
    name: str
    label: str
    html: Markup


@dataclass(frozen=True)
class ShownAnnouncement:
    title: str
    html: Markup
    created_at: datetime


@dataclass(frozen=True)
class CompetitionParts:
    # The written pages, in order; `selected` is the one shown (None: no pages).
    tabs: list[Tab] = field(default_factory=list)
    selected: Tab | None = None
    # Whether the challenge has rules, and the participant's newest acceptance of them.
    has_rules: bool = False
    accepted: RulesAcceptanceRead | None = None
    announcements: list[ShownAnnouncement] = field(default_factory=list)

    @property
    def rules_needed(self) -> bool:
        """The challenge has rules the signed-in participant has not accepted (any version)."""
        return self.has_rules and self.accepted is None


def competition_parts(
    session: Session, challenge: Challenge, participant: Participant | None, tab: str | None
) -> CompetitionParts:
    texts = challenge.page_texts
    tabs = [
        Tab(name, label, render(getattr(texts, name)))
        for name, label in TABS
        if getattr(texts, name).strip()
    ]
    selected = next((shown for shown in tabs if shown.name == tab), tabs[0] if tabs else None)
    accepted = None
    if participant is not None and challenge.rules_sha256 is not None:
        accepted = service.accepted_rules(session, challenge, participant.id)
    announcements = [
        ShownAnnouncement(row.title, render(row.body), row.created_at)
        for row in service.announcements_of(session, challenge, ANNOUNCEMENTS_SHOWN)
    ]
    return CompetitionParts(
        tabs=tabs,
        selected=selected,
        has_rules=challenge.rules_sha256 is not None,
        accepted=accepted,
        announcements=announcements,
    )

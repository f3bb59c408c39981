"""SQL for the scorer registry (platform-wide, not tenant-owned)."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.kit.db import page_where
from app.scoring.models import ScorerPlugin


def get_plugin(session: Session, plugin_id: str) -> ScorerPlugin | None:
    return session.get(ScorerPlugin, plugin_id)


def list_plugins(session: Session) -> list[ScorerPlugin]:
    return list(session.scalars(select(ScorerPlugin).order_by(ScorerPlugin.plugin_id)))


def page_plugins(session: Session, limit: int, offset: int) -> tuple[list[ScorerPlugin], int]:
    return page_where(
        session, ScorerPlugin, [], (ScorerPlugin.plugin_id,), limit=limit, offset=offset
    )


def add_plugin(session: Session, plugin: ScorerPlugin) -> None:
    session.add(plugin)
    session.flush()


def delete_plugin(session: Session, plugin: ScorerPlugin) -> None:
    session.delete(plugin)
    session.flush()

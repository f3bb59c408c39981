"""Database engine, sessions and the declarative base.

The same models run on PostgreSQL (production) and SQLite (embedded mode). Differences are kept
here: SQLite gets WAL and a busy timeout so the API and the worker can share one file, and a
UTC datetime type that gives timezone-aware values back on both.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from functools import lru_cache
from typing import Any, Generic, TypeVar

from pydantic import BaseModel
from sqlalchemy import (
    JSON,
    DateTime,
    Engine,
    MetaData,
    String,
    Text,
    create_engine,
    event,
    func,
    select,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import DeclarativeBase, Session, sessionmaker
from sqlalchemy.pool import NullPool
from sqlalchemy.types import TypeDecorator

from app.evaluation.engine.storable import (
    STORED_VALUE_CHARS,
    bounded_value,
    escape_text,
    escape_value,
)
from app.kit.config import get_settings

NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

JSONType = JSON().with_variant(JSONB(), "postgresql")


class UTCDateTime(TypeDecorator[datetime]):
    """Stores aware datetimes; always returns them in UTC (SQLite would hand back naive ones)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given to a UTC column")
        return value.astimezone(UTC)

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)


class ProducedText(TypeDecorator[str]):
    """Text that models or plugins produced (error reasons that quote them): stored with
    unstorable characters escaped (app/evaluation/engine/storable.py), never refused."""

    impl = Text
    cache_ok = True

    def process_bind_param(self, value: str | None, dialect: Dialect) -> str | None:
        return None if value is None else escape_text(value)


class ProducedString(TypeDecorator[str]):
    """`ProducedText` in a `VARCHAR(length)` column (task ids a dataset chose)."""

    impl = String
    cache_ok = True

    def process_bind_param(self, value: str | None, dialect: Dialect) -> str | None:
        return None if value is None else escape_text(value)


class ProducedJSON(TypeDecorator[Any]):
    """JSON holding what models or plugins produced (outputs, judge and critic replies, scorer
    details): stored escaped (app/evaluation/engine/storable.py), so a NUL in an output cannot fail
    the write, and bounded (`STORED_VALUE_CHARS`), so its size cannot either."""

    impl = JSON
    cache_ok = True

    def load_dialect_impl(self, dialect: Dialect) -> Any:
        return dialect.type_descriptor(JSONB() if dialect.name == "postgresql" else JSON())

    def process_bind_param(self, value: Any, dialect: Dialect) -> Any:
        return None if value is None else bounded_value(escape_value(value), STORED_VALUE_CHARS)


E = TypeVar("E", bound=StrEnum)
M = TypeVar("M", bound=BaseModel)
T = TypeVar("T")

# Validation context of configuration read back from the database: it was validated when
# saved, and checks that depend on the operator's current policy (which model providers are
# allowed) must not make a stored challenge unreadable; the worker applies the policy again
# before every call.
STORED = {"stored": True}


class StrEnumColumn(TypeDecorator[E], Generic[E]):
    """A `StrEnum` stored as its value in a `VARCHAR(length)`: the column holds the same
    strings as before it was typed, so no data migration is needed, and reads give members."""

    impl = String
    cache_ok = True

    def __init__(self, enum: type[E], length: int) -> None:
        super().__init__(length)
        self.enum = enum

    def process_bind_param(self, value: E | str | None, dialect: Dialect) -> str | None:
        return None if value is None else self.enum(value).value

    def process_result_value(self, value: str | None, dialect: Dialect) -> E | None:
        return None if value is None else self.enum(value)


class ModelColumn(TypeDecorator[M], Generic[M]):
    """A pydantic model stored as a JSON document: validated when saved, read back as the
    model (with the `STORED` context), so no code re-reads the document with `.get()`."""

    impl = JSON
    cache_ok = True

    def __init__(self, model: type[M], *, exclude_unset: bool = False) -> None:
        super().__init__()
        self.model = model
        # Store only the fields set: a document keeps the keys its writer gave.
        self.exclude_unset = exclude_unset

    def load_dialect_impl(self, dialect: Dialect) -> Any:
        return dialect.type_descriptor(JSONB() if dialect.name == "postgresql" else JSON())

    def process_bind_param(self, value: M | dict[str, Any] | None, dialect: Dialect) -> Any:
        if value is None:
            return None
        model = value if isinstance(value, BaseModel) else self.model.model_validate(value)
        return model.model_dump(mode="json", exclude_unset=self.exclude_unset)

    def process_result_value(self, value: Any, dialect: Dialect) -> M | None:
        return None if value is None else self.model.model_validate(value, context=STORED)


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)


def utcnow() -> datetime:
    return datetime.now(UTC)


# Epoch milliseconds: the wire format of the `*_ms` columns (the leaderboard's order, read by
# SQL tuple comparison) and of scorer plugins' `created_at`. Nothing else holds a time so.
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MILLISECOND = timedelta(milliseconds=1)


def epoch_ms(when: datetime) -> int:
    """The aware datetime as whole milliseconds since the epoch (floored, in exact integer
    arithmetic: the same instant always gives the same number)."""
    return (when - EPOCH) // _MILLISECOND


def from_epoch_ms(milliseconds: int) -> datetime:
    """The UTC datetime of a number of milliseconds since the epoch (exact)."""
    return EPOCH + milliseconds * _MILLISECOND


def new_id() -> uuid.UUID:
    return uuid.uuid4()


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA busy_timeout=10000")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


def make_engine(
    url: str, *, pooled: bool = True, pool_size: int = 10, pool_timeout: float = 10.0
) -> Engine:
    """`pooled=False`: a connection per use and none kept (a process that forks, now and then).
    A pool keeps `pool_size` connections and opens as many more on demand."""
    if url.startswith("sqlite"):
        engine = create_engine(
            url,
            connect_args={"check_same_thread": False, "timeout": 10},
            **({} if pooled else {"poolclass": NullPool}),
        )
        event.listen(engine, "connect", _sqlite_pragmas)
        return engine
    if not pooled:
        return create_engine(url, poolclass=NullPool)
    # No pre-ping: it costs a round trip on every checkout of the hottest paths. A connection
    # that died with the server fails its request once (503, see main.py); SQLAlchemy then
    # discards the whole pool, and the next requests connect afresh.
    return create_engine(
        url,
        pool_size=pool_size,
        max_overflow=pool_size,
        pool_timeout=pool_timeout,
        pool_recycle=1800,
    )


@lru_cache
def get_engine() -> Engine:
    settings = get_settings()
    if settings.resolved_database_url.startswith("sqlite"):
        settings.data_dir.mkdir(parents=True, exist_ok=True)
    return make_engine(
        settings.resolved_database_url,
        pool_size=settings.database_pool_size,
        pool_timeout=settings.database_pool_timeout_seconds,
    )


@lru_cache
def get_sessionmaker() -> sessionmaker[Session]:
    return sessionmaker(bind=get_engine(), expire_on_commit=False)


@lru_cache
def get_autocommit_sessionmaker() -> sessionmaker[Session]:
    """Sessions whose statements each commit on their own: no BEGIN and no COMMIT, two round
    trips fewer. Only for work whose every write stands alone (`autocommits` tells the code
    that must lock rows to ask for a transaction instead). It shares the engine's pool."""
    engine = get_engine().execution_options(isolation_level="AUTOCOMMIT")
    return sessionmaker(bind=engine, expire_on_commit=False)


class TransactionNeeded(Exception):
    """Work that must hold a lock (attempt limits, a quota) was given a session whose
    statements commit one by one (`autocommits`), before it wrote anything: run it again in
    a transaction."""


def autocommits(session: Session) -> bool:
    """Whether the session's statements commit one by one (so no lock outlives a statement)."""
    options = session.connection().get_execution_options()
    return options.get("isolation_level") == "AUTOCOMMIT"


def take_write_lock(session: Session) -> None:
    """SQLite only: takes the database's write lock now, for the rest of the transaction.

    SQLite has no row locks, and pysqlite opens a transaction only at the first write, so reads
    before it see no lock at all. `BEGIN IMMEDIATE` opens the transaction holding the write lock
    (waiting up to the busy timeout for another writer); after a first write, it is held
    already. Other connections still read, but no one else writes until this one ends.
    """
    connection = session.connection()
    driver = connection.connection.driver_connection
    assert driver is not None
    if not driver.in_transaction:
        connection.exec_driver_sql("BEGIN IMMEDIATE")


def count_where(session: Session, entity: Any, *conditions: Any) -> int:
    """How many rows of `entity` match `conditions`."""
    return session.scalar(select(func.count()).select_from(entity).where(*conditions)) or 0


def page_where(
    session: Session,
    entity: type[T],
    conditions: Sequence[Any],
    order_by: Sequence[Any],
    *,
    limit: int,
    offset: int,
) -> tuple[list[T], int]:
    """A page of `entity`'s rows matching `conditions` in `order_by` order, and how many match
    in all (the page's total)."""
    rows = session.scalars(
        select(entity).where(*conditions).order_by(*order_by).limit(limit).offset(offset)
    )
    return list(rows), count_where(session, entity, *conditions)


def lock_some_ids(
    session: Session,
    column: Any,
    *conditions: Any,
    oldest_first: Any = None,
    limit: int,
) -> list[uuid.UUID]:
    """Up to `limit` values of `column` (ids) of the rows matching `conditions`, ordered by
    `oldest_first` when given, their rows locked for this transaction. Rows another transaction
    holds are skipped, so two sweeps running at once never take the same row."""
    statement = select(column).where(*conditions)
    if oldest_first is not None:
        statement = statement.order_by(oldest_first)
    return list(session.scalars(statement.limit(limit).with_for_update(skip_locked=True)))


def insert_for(session: Session) -> Callable[[Any], postgresql.Insert | sqlite.Insert]:
    """The INSERT construct of the session's database: both have ON CONFLICT, the generic one
    does not."""
    return postgresql.insert if session.get_bind().dialect.name == "postgresql" else sqlite.insert


@contextmanager
def session_scope() -> Iterator[Session]:
    """A unit of work for tasks and scripts: commit on success, roll back on error."""
    session = get_sessionmaker()()
    try:
        yield session
        session.commit()
    except BaseException:
        session.rollback()
        raise
    finally:
        session.close()

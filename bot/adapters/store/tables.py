"""The database tables, as SQLAlchemy 2 declarative models; Alembic migrations create them."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, Boolean, DateTime, Integer, LargeBinary, String, Text, UniqueConstraint
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


class Base(DeclarativeBase):
    pass


class DeliveryRow(Base):
    """One accepted webhook delivery; (hook_id, guid) is unique, which is the replay defence."""

    __tablename__ = "deliveries"
    __table_args__ = (UniqueConstraint("hook_id", "guid", name="uq_deliveries_hook_guid"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    hook_id: Mapped[str] = mapped_column(String(40))
    guid: Mapped[str] = mapped_column(String(80))
    event: Mapped[str] = mapped_column(String(80))
    action: Mapped[str | None] = mapped_column(String(80))
    payload: Mapped[bytes] = mapped_column(LargeBinary)
    status: Mapped[str] = mapped_column(String(16), index=True)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    received_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    started_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    error: Mapped[str | None] = mapped_column(Text)


class RepositoryRow(Base):
    """A repository the App is installed on (kept current by installation events)."""

    __tablename__ = "repositories"

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    full_name: Mapped[str] = mapped_column(String(200), index=True)
    installation_id: Mapped[int | None] = mapped_column(BigInteger, index=True)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class ReviewRow(Base):
    """The last risk review published on a pull request."""

    __tablename__ = "reviews"
    __table_args__ = (UniqueConstraint("repo", "number", name="uq_reviews_repo_number"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    repo: Mapped[str] = mapped_column(String(200))
    number: Mapped[int] = mapped_column(Integer)
    head_sha: Mapped[str] = mapped_column(String(64))
    score: Mapped[int] = mapped_column(Integer)
    level: Mapped[str] = mapped_column(String(16))
    comment_id: Mapped[int | None] = mapped_column(BigInteger)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class MergeRow(Base):
    """A merged pull request with the risk it carried when it merged."""

    __tablename__ = "merges"
    __table_args__ = (UniqueConstraint("repo", "number", name="uq_merges_repo_number"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    repo: Mapped[str] = mapped_column(String(200), index=True)
    number: Mapped[int] = mapped_column(Integer)
    title: Mapped[str] = mapped_column(Text)
    merge_sha: Mapped[str | None] = mapped_column(String(64))
    head_sha: Mapped[str] = mapped_column(String(64))
    score: Mapped[int | None] = mapped_column(Integer)
    level: Mapped[str | None] = mapped_column(String(16))
    merged_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    flagged: Mapped[bool] = mapped_column(Boolean, default=False)

"""Initial schema: deliveries, repositories, reviews, merges.

Revision ID: 0001
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

_TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "deliveries",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("hook_id", sa.String(40), nullable=False),
        sa.Column("guid", sa.String(80), nullable=False),
        sa.Column("event", sa.String(80), nullable=False),
        sa.Column("action", sa.String(80)),
        sa.Column("payload", sa.LargeBinary, nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("attempts", sa.Integer, nullable=False),
        sa.Column("received_at", _TS, nullable=False),
        sa.Column("started_at", _TS),
        sa.Column("finished_at", _TS),
        sa.Column("error", sa.Text),
        sa.UniqueConstraint("hook_id", "guid", name="uq_deliveries_hook_guid"),
    )
    op.create_index("ix_deliveries_status", "deliveries", ["status"])
    op.create_table(
        "repositories",
        sa.Column("id", sa.BigInteger, primary_key=True, autoincrement=False),
        sa.Column("full_name", sa.String(200), nullable=False),
        sa.Column("installation_id", sa.BigInteger),
        sa.Column("updated_at", _TS, nullable=False),
    )
    op.create_index("ix_repositories_full_name", "repositories", ["full_name"])
    op.create_index("ix_repositories_installation_id", "repositories", ["installation_id"])
    op.create_table(
        "reviews",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("repo", sa.String(200), nullable=False),
        sa.Column("number", sa.Integer, nullable=False),
        sa.Column("head_sha", sa.String(64), nullable=False),
        sa.Column("score", sa.Integer, nullable=False),
        sa.Column("level", sa.String(16), nullable=False),
        sa.Column("comment_id", sa.BigInteger),
        sa.Column("updated_at", _TS, nullable=False),
        sa.UniqueConstraint("repo", "number", name="uq_reviews_repo_number"),
    )
    op.create_table(
        "merges",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("repo", sa.String(200), nullable=False),
        sa.Column("number", sa.Integer, nullable=False),
        sa.Column("title", sa.Text, nullable=False),
        sa.Column("merge_sha", sa.String(64)),
        sa.Column("head_sha", sa.String(64), nullable=False),
        sa.Column("score", sa.Integer),
        sa.Column("level", sa.String(16)),
        sa.Column("merged_at", _TS),
        sa.Column("flagged", sa.Boolean, nullable=False),
        sa.UniqueConstraint("repo", "number", name="uq_merges_repo_number"),
    )
    op.create_index("ix_merges_repo", "merges", ["repo"])


def downgrade() -> None:
    for table in ("merges", "reviews", "repositories", "deliveries"):
        op.drop_table(table)

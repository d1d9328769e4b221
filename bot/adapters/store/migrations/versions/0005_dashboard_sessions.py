"""Dashboard sessions kept on the server, so that signing out ends them.

Revision ID: 0005
"""

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

_TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "dashboard_sessions",
        sa.Column("key", sa.String(64), primary_key=True),
        sa.Column("login", sa.String(100), nullable=False),
        sa.Column("private_repos", sa.Text, nullable=False),
        sa.Column("created_at", _TS, nullable=False),
        sa.Column("checked_at", _TS, nullable=False),
        sa.Column("expires_at", _TS, nullable=False),
    )
    op.create_index("ix_dashboard_sessions_expires_at", "dashboard_sessions", ["expires_at"])


def downgrade() -> None:
    op.drop_table("dashboard_sessions")

"""The daily GPU budget each charge was weighed against (`gpu_spend.budget`: minutes, or
``unlimited``), so that the dashboard can show a repository's limit beside what it spent without
reading its config.

Revision ID: 0010
"""

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("gpu_spend") as batch:
        batch.add_column(sa.Column("budget", sa.String(16), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("gpu_spend") as batch:
        batch.drop_column("budget")

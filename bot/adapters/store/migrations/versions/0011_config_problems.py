"""The problems of each repository's config as perfbot last read it (`config_problems`), so that the
dashboard can say which keys are invalid, with their "did you mean", and that the runs perfbot
starts on its own are held.

Revision ID: 0011
"""

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "config_problems",
        sa.Column("repo", sa.String(200), primary_key=True),
        sa.Column("source", sa.String(300), nullable=False),
        sa.Column("problems", sa.Text(), nullable=False),
        sa.Column("since", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("config_problems")

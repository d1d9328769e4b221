"""Regressions on the default branch (`regression_cases`: one per change, whoever found it) and the
daily GPU budget's ledger (`gpu_spend`: one row per run charged or skipped).

Revision ID: 0008
"""

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "regression_cases",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("key", sa.String(64), nullable=False, unique=True),
        sa.Column("repo", sa.String(200), nullable=False),
        sa.Column("suite", sa.String(100), nullable=False),
        sa.Column("metric", sa.String(100), nullable=False),
        sa.Column("good_sha", sa.String(64), nullable=False),
        sa.Column("bad_sha", sa.String(64), nullable=False),
        sa.Column("source", sa.String(16), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("installation_id", sa.BigInteger),
        sa.Column("number", sa.Integer),
        sa.Column("change", sa.Float),
        sa.Column("requested_by", sa.String(100)),
        sa.Column("correlation_id", sa.String(64), index=True),
        sa.Column("run_url", sa.Text),
        sa.Column("culprit_sha", sa.String(64)),
        sa.Column("culprit_number", sa.Integer),
        sa.Column("culprit_subject", sa.Text),
        sa.Column("outcome", sa.Text),
        sa.Column("gpu_minutes", sa.Float, nullable=False),
        sa.Column("comment_url", sa.Text),
        sa.Column("issue_number", sa.Integer),
        sa.Column("superseded_by", sa.String(64)),
        sa.Column("note", sa.Text),
        sa.Column("detected_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True)),
        sa.UniqueConstraint(
            "repo", "suite", "metric", "good_sha", "bad_sha", name="uq_regression_cases_change"
        ),
    )
    op.create_index("ix_regression_cases_repo_state", "regression_cases", ["repo", "state"])
    op.create_table(
        "gpu_spend",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("key", sa.String(200), nullable=False, unique=True),
        sa.Column("repo", sa.String(200), nullable=False),
        sa.Column("day", sa.String(10), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("level", sa.String(16), nullable=False),
        sa.Column("minutes", sa.Float, nullable=False),
        sa.Column("allowed", sa.Boolean, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_gpu_spend_repo_day", "gpu_spend", ["repo", "day"])


def downgrade() -> None:
    op.drop_index("ix_gpu_spend_repo_day", table_name="gpu_spend")
    op.drop_table("gpu_spend")
    op.drop_index("ix_regression_cases_repo_state", table_name="regression_cases")
    op.drop_table("regression_cases")

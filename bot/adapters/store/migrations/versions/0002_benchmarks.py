"""Benchmarks: requests dispatched to the runners, their results, the default branch's metric
history, acknowledgements, fork approvals, and the keys of work done once.

Revision ID: 0002
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

_TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "bench_requests",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("correlation_id", sa.String(64), nullable=False, unique=True),
        sa.Column("repo", sa.String(200), nullable=False),
        sa.Column("installation_id", sa.BigInteger),
        sa.Column("number", sa.Integer),
        sa.Column("base_sha", sa.String(64), nullable=False),
        sa.Column("head_sha", sa.String(64), nullable=False),
        sa.Column("suites", sa.Text, nullable=False),
        sa.Column("rounds", sa.Integer),
        sa.Column("max_rounds", sa.Integer),
        sa.Column("trigger", sa.String(16), nullable=False),
        sa.Column("requested_by", sa.String(100)),
        sa.Column("comment_id", sa.BigInteger),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("run_id", sa.BigInteger),
        sa.Column("run_url", sa.Text),
        sa.Column("check_run_id", sa.BigInteger),
        sa.Column("conclusion", sa.String(32)),
        sa.Column("error", sa.Text),
        sa.Column("created_at", _TS, nullable=False),
        sa.Column("updated_at", _TS, nullable=False),
        sa.Column("completed_at", _TS),
    )
    op.create_index("ix_bench_requests_repo_number", "bench_requests", ["repo", "number"])
    op.create_index("ix_bench_requests_head_sha", "bench_requests", ["head_sha"])
    op.create_index("ix_bench_requests_status", "bench_requests", ["status"])
    op.create_index("ix_bench_requests_run_id", "bench_requests", ["run_id"])
    op.create_table(
        "bench_results",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("request_id", sa.Integer, sa.ForeignKey("bench_requests.id", ondelete="SET NULL")),
        sa.Column("repo", sa.String(200), nullable=False),
        sa.Column("number", sa.Integer),
        sa.Column("suite", sa.String(100), nullable=False),
        sa.Column("base_sha", sa.String(64), nullable=False),
        sa.Column("head_sha", sa.String(64), nullable=False),
        sa.Column("verdict", sa.String(16), nullable=False),
        sa.Column("headline_metric", sa.String(100)),
        sa.Column("headline_change", sa.Float),
        sa.Column("comparison", sa.Text, nullable=False),
        sa.Column("on_default_branch", sa.Boolean, nullable=False),
        sa.Column("created_at", _TS, nullable=False),
    )
    op.create_index("ix_bench_results_repo_number", "bench_results", ["repo", "number"])
    op.create_index("ix_bench_results_head_sha", "bench_results", ["head_sha"])
    op.create_table(
        "metric_points",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("result_id", sa.Integer, sa.ForeignKey("bench_results.id", ondelete="CASCADE")),
        sa.Column("repo", sa.String(200), nullable=False),
        sa.Column("suite", sa.String(100), nullable=False),
        sa.Column("metric", sa.String(100), nullable=False),
        sa.Column("unit", sa.String(40), nullable=False),
        sa.Column("better", sa.String(8), nullable=False),
        sa.Column("sha", sa.String(64), nullable=False),
        sa.Column("value", sa.Float, nullable=False),
        sa.Column("measured_at", _TS, nullable=False),
    )
    op.create_index("ix_metric_points_series", "metric_points", ["repo", "suite", "metric", "measured_at"])
    op.create_table(
        "acks",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("repo", sa.String(200), nullable=False),
        sa.Column("number", sa.Integer, nullable=False),
        sa.Column("head_sha", sa.String(64)),
        sa.Column("user", sa.String(100), nullable=False),
        sa.Column("reason", sa.Text, nullable=False),
        sa.Column("comment_id", sa.BigInteger),
        sa.Column("created_at", _TS, nullable=False),
    )
    op.create_index("ix_acks_repo_number", "acks", ["repo", "number"])
    op.create_table(
        "approvals",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("repo", sa.String(200), nullable=False),
        sa.Column("number", sa.Integer, nullable=False),
        sa.Column("head_sha", sa.String(64), nullable=False),
        sa.Column("approved_by", sa.String(100), nullable=False),
        sa.Column("created_at", _TS, nullable=False),
        sa.UniqueConstraint("repo", "number", "head_sha", name="uq_approvals_pr_sha"),
    )
    op.create_table(
        "work_keys",
        sa.Column("key", sa.String(200), primary_key=True),
        sa.Column("created_at", _TS, nullable=False),
    )
    op.create_index("ix_work_keys_created_at", "work_keys", ["created_at"])


def downgrade() -> None:
    for table in ("work_keys", "approvals", "acks", "metric_points", "bench_results", "bench_requests"):
        op.drop_table(table)

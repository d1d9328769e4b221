"""Every step of the example workflow has a timeout of its own, so that a stuck checkout or install
ends in minutes instead of holding a GPU runner for the job's whole bound, and the step timeouts fit
in the job's."""

from __future__ import annotations

from tests.runner.test_example_workflow import INSTALL_MINUTES, JOB, MAX_ROUNDS, ROUND_TIMEOUT_S, TEXT, WARMUP

CHECKOUT_MINUTES = 10  # a full-history checkout of a large engine on a runner's disk


def test_every_step_has_a_timeout_and_they_fit_in_the_job_s():
    checkout, perfbot = JOB["steps"]
    assert checkout["timeout-minutes"] == CHECKOUT_MINUTES
    measuring = 2 * (1 + WARMUP + MAX_ROUNDS) * ROUND_TIMEOUT_S // 60
    assert perfbot["timeout-minutes"] == measuring + INSTALL_MINUTES - CHECKOUT_MINUTES
    assert checkout["timeout-minutes"] + perfbot["timeout-minutes"] == JOB["timeout-minutes"]
    assert "timeout-minutes: 10  # the checkout" in TEXT

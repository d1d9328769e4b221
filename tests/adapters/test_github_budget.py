"""The write budget: bursts up to the limit, then one write per 60/limit seconds."""

from bot.adapters.github_budget import WriteBudget


class Clock:
    def __init__(self):
        self.now = 0.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def test_a_burst_up_to_the_limit_does_not_wait():
    clock = Clock()
    budget = WriteBudget(80, clock, clock.sleep)
    assert [budget.take() for _ in range(80)] == [0.0] * 80


def test_past_the_limit_writes_are_spaced_to_the_refill_rate():
    clock = Clock()
    budget = WriteBudget(60, clock, clock.sleep)
    for _ in range(60):
        budget.take()
    waits = [budget.take() for _ in range(3)]
    assert [round(w, 6) for w in waits] == [1.0, 1.0, 1.0]


def test_an_idle_minute_refills_the_bucket():
    clock = Clock()
    budget = WriteBudget(60, clock, clock.sleep)
    for _ in range(60):
        budget.take()
    clock.now += 60
    assert [budget.take() for _ in range(60)] == [0.0] * 60

"""What a decorator puts in place of the function it decorates: the functions it defines and
returns, followed through a factory's levels."""

from __future__ import annotations

from bot.core.risk import callgraph

SOURCE = """\
def factory(name):
    def decorator(fn):
        def wrapper(*args):
            return fn(*args)

        def spare():
            return wrapper

        return wrapper

    return decorator


def plain(fn):
    return fn


def elsewhere(fn):
    return wrapper


@factory("x")
@plain
def forward(x):
    return x
"""


def test_returns_are_the_plain_names_a_body_returns_not_those_of_nested_functions():
    graph = callgraph.build({"a.py": SOURCE})
    returns = {f.qualname: f.returns for f in graph.functions}
    assert returns["factory"] == {"decorator"}
    assert returns["factory.<locals>.decorator"] == {"wrapper"}
    assert returns["factory.<locals>.decorator.<locals>.spare"] == {"wrapper"}
    assert returns["plain"] == {"fn"} and returns["forward"] == {"x"}


def test_wrappers_follow_returned_nested_functions_only():
    graph = callgraph.build({"a.py": SOURCE})
    forward = graph.function("a.py", "forward")
    assert forward is not None
    assert [f.qualname for f in graph.wrappers(forward)] == [
        "factory",
        "plain",
        "factory.<locals>.decorator",
        "factory.<locals>.decorator.<locals>.wrapper",
    ]
    reached = graph.reach([forward])
    assert graph.function("a.py", "factory.<locals>.decorator.<locals>.wrapper") in reached
    assert graph.function("a.py", "factory.<locals>.decorator.<locals>.spare") not in reached
    assert graph.function("a.py", "elsewhere") not in reached

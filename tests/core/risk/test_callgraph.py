"""The static call graph of a base's source: definitions, calls resolved by name, decorators, reads."""

from __future__ import annotations

import textwrap

from hypothesis import given, settings
from hypothesis import strategies as st

from bot.core.risk import callgraph


def graph(**files: str) -> callgraph.CallGraph:
    return callgraph.build(
        {path.replace("__", "/") + ".py": textwrap.dedent(text) for path, text in files.items()}
    )


def names(functions) -> list[str]:
    return sorted(f"{f.path}:{f.qualname}" for f in functions)


def only(g: callgraph.CallGraph, path: str, qualname: str) -> callgraph.Function:
    found = g.function(path, qualname)
    assert found is not None, (path, qualname)
    return found


MODULE = """
    LIMIT = 4
    a, (b, *rest) = 1, (2, 3)
    COUNT: int = 0
    TOTAL += 1

    def helper(x):
        return x * LIMIT

    class Engine:
        size = 8
        label: str = "e"

        def __init__(self):
            self.ready = True

        def step(self, x):
            def inner(y):
                return helper(y)
            return inner(self.scale(x)) + self.size

        def scale(self, x):
            return x

        class Nested:
            def run(self):
                return 1

    if True:
        def conditional():
            try:
                pass
            except ValueError:
                def in_handler():
                    pass
"""


def test_definitions_carry_pythons_qualified_names_and_def_lines():
    g = graph(m=MODULE)
    assert names(g.functions) == [
        f"m.py:{q}"
        for q in sorted(
            [
                "helper",
                "Engine.__init__",
                "Engine.step",
                "Engine.step.<locals>.inner",
                "Engine.scale",
                "Engine.Nested.run",
                "conditional",
                "conditional.<locals>.in_handler",
            ]
        )
    ]
    assert only(g, "m.py", "helper").line == 7
    assert only(g, "m.py", "Engine.step").owner == "Engine"
    assert only(g, "m.py", "Engine.Nested.run").owner == "Engine.Nested"
    assert only(g, "m.py", "Engine.step.<locals>.inner").owner is None
    assert only(g, "m.py", "Engine.step.<locals>.inner").name == "inner"
    assert sorted(k.qualname for k in g.classes) == ["Engine", "Engine.Nested"]
    engine = g.klass("m.py", "Engine")[0]
    assert (engine.line, engine.attributes, engine.name) == (10, frozenset({"size", "label"}), "Engine")
    assert g.constants == frozenset(("m.py", n) for n in ("LIMIT", "a", "b", "rest", "COUNT", "TOTAL"))
    assert [f.qualname for f in g.named("m.py", "inner")] == ["Engine.step.<locals>.inner"]
    assert g.named("other.py", "inner") == []
    assert g.skipped == ()


def test_a_function_records_what_it_calls_and_reads_but_not_its_parameters_or_locals():
    g = graph(m=MODULE)
    step = only(g, "m.py", "Engine.step")
    assert step.calls == {"inner"}
    assert step.own_methods == {"scale"}
    assert step.methods == frozenset()
    assert step.attributes == {"scale", "size"}
    assert "x" not in step.reads and "inner" not in step.reads
    helper = only(g, "m.py", "helper")
    assert helper.reads == {"LIMIT"}
    inner = only(g, "m.py", "Engine.step.<locals>.inner")
    assert inner.calls == {"helper"} and "y" not in inner.reads


def test_calls_resolve_to_nested_then_same_file_then_the_only_one_of_the_name():
    g = graph(m=MODULE)
    step = only(g, "m.py", "Engine.step")
    assert names(g.callees(step)) == ["m.py:Engine.scale", "m.py:Engine.step.<locals>.inner"]
    inner = only(g, "m.py", "Engine.step.<locals>.inner")
    assert names(g.callees(inner)) == ["m.py:helper"]
    reached = g.reach([step])
    assert names(reached) == [
        "m.py:Engine.scale",
        "m.py:Engine.step",
        "m.py:Engine.step.<locals>.inner",
        "m.py:helper",
    ]
    assert all(root is step for root in reached.values())


def test_a_name_defined_in_two_files_resolves_to_the_callers_own_else_to_none():
    g = graph(
        a="def pad(x):\n    return x\n\ndef run(x):\n    return pad(x)\n",
        b="def pad(x):\n    return x\n",
        c="def go(x):\n    return pad(x)\n",
    )
    assert names(g.callees(only(g, "a.py", "run"))) == ["a.py:pad"]
    assert list(g.callees(only(g, "c.py", "go"))) == []


def test_a_name_defined_once_in_the_graph_resolves_from_another_file():
    g = graph(a="def pad(x):\n    return x\n", c="from a import pad\n\ndef go(x):\n    return pad(x)\n")
    assert names(g.callees(only(g, "c.py", "go"))) == ["a.py:pad"]


def test_a_class_call_reaches_its_init_in_the_file_or_the_only_one():
    g = graph(
        a="class Comm:\n    def __init__(self):\n        pass\n\ndef make():\n    return Comm()\n",
        c="def build():\n    return Comm()\n",
    )
    assert names(g.callees(only(g, "a.py", "make"))) == ["a.py:Comm.__init__"]
    assert names(g.callees(only(g, "c.py", "build"))) == ["a.py:Comm.__init__"]
    two = graph(
        a="class Comm:\n    def __init__(self):\n        pass\n",
        b="class Comm:\n    def __init__(self):\n        pass\n",
        c="def build():\n    return Comm()\n",
    )
    assert list(two.callees(only(two, "c.py", "build"))) == []


def test_a_plain_name_of_one_top_level_function_wins_over_a_class_elsewhere():
    g = graph(
        a="def Comm():\n    return 1\n",
        b="class Comm:\n    def __init__(self):\n        pass\n",
        c="def build():\n    return Comm()\n",
    )
    assert names(g.callees(only(g, "c.py", "build"))) == ["a.py:Comm"]
    g = graph(
        a="def Comm():\n    return 1\n",
        b="def Comm():\n    return 2\n",
        d="class Comm:\n    def __init__(self):\n        pass\n",
        c="def build():\n    return Comm()\n",
    )
    assert list(g.callees(only(g, "c.py", "build"))) == []


def test_method_calls_resolve_by_name_only_when_unambiguous():
    g = graph(
        a="class A:\n    def all_reduce(self, t):\n        return t\n    def run(self, t):\n"
        "        return self.all_reduce(t)\n",
        b="def go(comm, t):\n    return comm.all_reduce(t)\n\ndef other(x):\n    return x.forward()\n",
        c="class B:\n    def forward(self):\n        pass\n\nclass C:\n    def forward(self):\n        pass\n",
    )
    assert names(g.callees(only(g, "b.py", "go"))) == ["a.py:A.all_reduce"]
    assert names(g.callees(only(g, "a.py", "A.run"))) == ["a.py:A.all_reduce"]
    assert list(g.callees(only(g, "b.py", "other"))) == []


def test_a_call_on_self_prefers_the_callers_class_and_falls_back_to_the_only_one():
    g = graph(
        a="class A:\n    def f(self):\n        return self.g()\n    def g(self):\n        pass\n"
        "class B:\n    def g(self):\n        pass\n    def h(self):\n        return self.k()\n"
        "class C:\n    def k(self):\n        pass\n"
    )
    assert names(g.callees(only(g, "a.py", "A.f"))) == ["a.py:A.g"]
    assert names(g.callees(only(g, "a.py", "B.h"))) == ["a.py:C.k"]


def test_calls_on_the_error_path_are_left_out():
    g = graph(
        p="""
        def describe(t):
            return str(t)

        def cleanup():
            pass

        def log_it():
            pass

        def all_reduce(t):
            if t is None:
                raise ValueError(describe(t))
            try:
                return t
            except RuntimeError:
                cleanup()
                raise
            finally:
                log_it()
        """
    )
    assert names(g.callees(only(g, "p.py", "all_reduce"))) == ["p.py:log_it"]


def test_decorators_reach_and_run_in_the_scope_that_defines_the_function():
    g = graph(
        d="""
        import functools

        def timed(fn):
            return fn

        def traced(name):
            return lambda fn: fn

        def default_size():
            return 8

        @timed
        @functools.cache
        @traced("x")
        def forward(x):
            @timed
            def inner(y=default_size()):
                return y
            return inner(x)
        """
    )
    forward = only(g, "d.py", "forward")
    assert forward.decorators == {"timed", "cache", "traced"}
    assert names(g.decorators(forward)) == ["d.py:timed", "d.py:traced"]
    assert names(g.callees(forward)) == ["d.py:default_size", "d.py:forward.<locals>.inner", "d.py:timed"]
    assert names(g.reach([forward])) == [
        "d.py:default_size",
        "d.py:forward",
        "d.py:forward.<locals>.inner",
        "d.py:timed",
        "d.py:traced",
    ]


def test_reach_names_the_first_root_that_gets_there():
    g = graph(a="def f():\n    return h()\n\ndef g():\n    return h()\n\ndef h():\n    return 1\n")
    f, g_, h = (only(g, "a.py", n) for n in ("f", "g", "h"))
    assert g.reach([g_, f]) == {g_: g_, f: f, h: g_}
    assert g.reach([f, f]) == {f: f, h: f}
    assert g.reach([]) == {}


def test_files_that_do_not_parse_are_skipped_and_named():
    g = callgraph.build(
        {
            "bad.py": "def (:\n",
            "nul.py": "x = 1\0",
            "deep.py": "x = " + "(" * 1000 + "1" + ")" * 1000,
            "good.py": "def ok():\n    pass\n",
        }
    )
    assert set(g.skipped) == {"bad.py", "nul.py", "deep.py"}
    assert names(g.functions) == ["good.py:ok"]


def test_async_functions_and_match_cases_count():
    g = graph(
        a="""
        async def fetch():
            pass

        def pick(x):
            match x:
                case 1:
                    def one():
                        pass
            return fetch()
        """
    )
    assert names(g.functions) == ["a.py:fetch", "a.py:pick", "a.py:pick.<locals>.one"]
    assert names(g.callees(only(g, "a.py", "pick"))) == ["a.py:fetch"]


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.text(min_size=1, max_size=10), st.text(max_size=300), max_size=4))
def test_any_text_builds_a_graph_or_is_skipped(sources):
    g = callgraph.build(sources)
    assert set(g.skipped) <= set(sources)
    assert {f.path for f in g.functions} <= set(sources) - set(g.skipped)
    for function in g.functions:
        assert set(g.callees(function)) <= set(g.functions)
    assert set(g.reach(g.functions)) == set(g.functions)


_NAMES = st.sampled_from(["f", "g", "h", "run", "forward", "all_reduce", "Comm"])


@st.composite
def python_modules(draw):
    """Valid Python: nested functions and classes calling each other by plain and method names."""
    lines: list[str] = []
    defined: list[str] = []

    def block(indent: int, depth: int, prefix: str) -> None:
        for _ in range(draw(st.integers(1, 3))):
            kind = draw(st.sampled_from(["def", "class", "call", "method", "raise"]))
            pad = " " * indent
            name = draw(_NAMES)
            if kind in ("def", "class") and depth < 3:
                lines.append(f"{pad}{kind} {name}{'(self, x=0)' if kind == 'def' else ''}:")
                if kind == "def":
                    defined.append(prefix + name)
                block(indent + 4, depth + 1, f"{prefix}{name}.{'<locals>.' if kind == 'def' else ''}")
            elif kind == "method":
                lines.append(f"{pad}x.{name}()")
            elif kind == "raise":
                lines.append(f"{pad}raise ValueError({name}())")
            else:
                lines.append(f"{pad}{name}()")

    block(0, 0, "")
    return "\n".join(lines) + "\n", defined


@settings(max_examples=200, deadline=None)
@given(python_modules())
def test_every_def_of_valid_python_is_in_the_graph_under_its_qualified_name(module):
    text, defined = module
    g = callgraph.build({"m.py": text})
    assert g.skipped == ()
    assert sorted(f.qualname for f in g.functions) == sorted(defined)
    for function in g.functions:
        for callee in g.callees(function):
            assert callee.name in function.calls | function.methods | function.own_methods


def test_a_name_resolves_through_every_enclosing_function():
    g = graph(
        n="""
        def outer():
            def helper():
                pass

            def mid():
                def near():
                    pass

                def inner():
                    return helper() + near()
                return inner()
            return mid()
        """
    )
    inner = only(g, "n.py", "outer.<locals>.mid.<locals>.inner")
    assert names(g.callees(inner)) == ["n.py:outer.<locals>.helper", "n.py:outer.<locals>.mid.<locals>.near"]


def test_a_decorator_resolves_as_a_plain_name_first_then_as_the_only_method_of_its_name():
    g = graph(
        a="""
        def timed(fn):
            return fn

        class Registry:
            def register(self, fn):
                return fn

        registry = Registry()

        @timed
        @registry.register
        def forward(x):
            def inner(*, a, b=size()):
                return a
            return inner(a=x)

        def size():
            return 1
        """,
        b="def timed(fn):\n    return fn\n",
    )
    forward = only(g, "a.py", "forward")
    assert names(g.decorators(forward)) == ["a.py:Registry.register", "a.py:timed"]
    assert "size" in forward.calls

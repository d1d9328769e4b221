"""The static call graph of a commit's Python source: which function calls which, which decorates
which, and which module constants and class attribute defaults each one reads.

The map of a step (`bot.core.stepmap`) names the functions a profiled step ran; a changed function
the profiler did not see can still run on every step when a mapped function calls it, so scoring
follows this graph from the mapped functions. It is built from source text alone (`ast`, nothing
imported or run), and resolves by name: a plain call to the function (or the class's ``__init__``)
of that name in the caller's scope or file, else the one of that name in the whole graph when there
is only one; a method call (``x.name()``) to the method of that name in the caller's class when the
receiver is ``self`` or ``cls``, else to the one function of that name in the graph, if only one.
Calls made only on an error path (inside a ``raise`` statement or an ``except`` handler) are left
out: they do not run on a step that works. A decorator reaches, besides itself, the functions it
defines and returns (``return wrapper``), and theirs in turn: a factory ``@traced("x")`` returns
a decorator that returns the wrapper, and the wrapper is what runs on every call (`wrappers`).

Module-level assignments (also under a module-level ``if``, ``try``, ``with`` or loop) are kept as
`Binding`s with the names and attributes their value reads, and those the ``if`` tests around them
read: the data a module computes at import time from a config default, an environment default
(``os.environ.get(NAME, DEFAULT)``) or another module's constant, which the map's scoring follows
to the functions that read the result.

Qualified names are Python's own (``Class.method``, ``outer.<locals>.inner``), as a profiler
reports them. Files that do not parse are skipped and named in `CallGraph.skipped`.
"""

from __future__ import annotations

import ast
from collections import deque
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import cached_property

_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_RECEIVERS = frozenset({"self", "cls"})


@dataclass(frozen=True, slots=True)
class Function:
    """A ``def`` of the graph: where it is, and what its body calls and reads (error paths left
    out). ``owner``: the qualified name of the class it is a method of, if it is one."""

    path: str
    qualname: str
    line: int
    owner: str | None = None
    calls: frozenset[str] = frozenset()  # called by plain name: ``name(...)``
    methods: frozenset[str] = frozenset()  # called as an attribute of something else: ``x.name(...)``
    own_methods: frozenset[str] = frozenset()  # called on ``self`` or ``cls``
    reads: frozenset[str] = frozenset()  # global names read: not a parameter, not assigned in it
    attributes: frozenset[str] = frozenset()  # attributes read: ``x.name``
    decorators: frozenset[str] = frozenset()  # the last name of each decorator
    returns: frozenset[str] = frozenset()  # plain names its body returns: ``return wrapper``

    @property
    def name(self) -> str:
        return self.qualname.rpartition(".")[2]


@dataclass(frozen=True, slots=True)
class Klass:
    """A ``class`` of the graph and the names its body assigns (attribute defaults)."""

    path: str
    qualname: str
    line: int
    attributes: frozenset[str] = frozenset()

    @property
    def name(self) -> str:
        return self.qualname.rpartition(".")[2]


@dataclass(frozen=True, slots=True)
class Binding:
    """A module-level assignment of ``name`` in ``path``, and what its value (or an ``if`` test
    around it) reads: global names, and attributes (``x.name``)."""

    path: str
    name: str
    line: int
    reads: frozenset[str] = frozenset()
    attributes: frozenset[str] = frozenset()


@dataclass(frozen=True)
class CallGraph:
    """The functions and classes of some files, and the names each file assigns at module level."""

    functions: tuple[Function, ...] = ()
    classes: tuple[Klass, ...] = ()
    constants: frozenset[tuple[str, str]] = frozenset()  # (path, name) assigned at module level
    skipped: tuple[str, ...] = ()  # files that did not parse
    bindings: tuple[Binding, ...] = ()

    @cached_property
    def _by_key(self) -> dict[tuple[str, str], Function]:
        return {(function.path, function.qualname): function for function in self.functions}

    @cached_property
    def _by_name(self) -> dict[str, list[Function]]:
        found: dict[str, list[Function]] = {}
        for function in self.functions:
            found.setdefault(function.name, []).append(function)
        return found

    def function(self, path: str, qualname: str) -> Function | None:
        return self._by_key.get((path, qualname))

    def named(self, path: str, name: str) -> list[Function]:
        """The functions of ``path`` whose own name is ``name`` (a diff names no more)."""
        return [f for f in self._by_name.get(name, ()) if f.path == path]

    def klass(self, path: str, name: str) -> list[Klass]:
        return [k for k in self.classes if k.path == path and k.name == name]

    def callees(self, caller: Function) -> Iterator[Function]:
        """The functions ``caller`` calls, as far as names resolve."""
        for name in sorted(caller.calls):
            found = self._plain(caller, name)
            if found is not None:
                yield found
        for name in sorted(caller.own_methods):
            own = self._by_key.get((caller.path, f"{caller.owner}.{name}")) if caller.owner else None
            found = own or self._unique(name)
            if found is not None:
                yield found
        for name in sorted(caller.methods):
            found = self._unique(name)
            if found is not None:
                yield found

    def decorators(self, function: Function) -> Iterator[Function]:
        """The functions that decorate ``function``, as far as names resolve."""
        for name in sorted(function.decorators):
            found = self._plain(function, name) or self._unique(name)
            if found is not None:
                yield found

    def wrappers(self, function: Function) -> Iterator[Function]:
        """The decorators of ``function`` and, for each, the functions defined in it that it
        returns, and theirs in turn: what a decorator (factory) puts in place of ``function``."""
        seen: set[Function] = set()
        queue = deque(self.decorators(function))
        while queue:
            found = queue.popleft()
            if found in seen:
                continue
            seen.add(found)
            yield found
            for name in sorted(found.returns):
                inner = self._by_key.get((found.path, f"{found.qualname}.<locals>.{name}"))
                if inner is not None:
                    queue.append(inner)

    def reach(self, roots: Iterable[Function]) -> dict[Function, Function]:
        """Every function that runs when one of ``roots`` does (by call, as its decorator or what a
        decorator returns in its place: `wrappers`), each with the first of ``roots`` it is reached
        from; the roots themselves included."""
        reached: dict[Function, Function] = {}
        queue: deque[tuple[Function, Function]] = deque()
        for root in roots:
            if root not in reached:
                reached[root] = root
                queue.append((root, root))
        while queue:
            function, root = queue.popleft()
            for found in (*self.callees(function), *self.wrappers(function)):
                if found not in reached:
                    reached[found] = root
                    queue.append((found, root))
        return reached

    def _plain(self, caller: Function, name: str) -> Function | None:
        """A plain name from ``caller``: a function nested in it or in its enclosing functions,
        then a module-level function or class of its file, then the only one in the graph."""
        scope = caller.qualname
        while scope:
            nested = self._by_key.get((caller.path, f"{scope}.<locals>.{name}"))
            if nested is not None:
                return nested
            scope = scope.rpartition(".<locals>.")[0]  # "" once no function encloses it
        local = self._by_key.get((caller.path, name)) or self._by_key.get((caller.path, f"{name}.__init__"))
        if local is not None:
            return local
        top = [f for f in self._by_name.get(name, ()) if f.qualname == name]
        if len(top) == 1:
            return top[0]
        inits = [f for f in self._by_name.get("__init__", ()) if f.qualname == f"{name}.__init__"]
        return inits[0] if len(inits) == 1 and not top else None

    def _unique(self, name: str) -> Function | None:
        found = self._by_name.get(name, ())
        return found[0] if len(found) == 1 else None


def build(sources: Mapping[str, str]) -> CallGraph:
    """The call graph of ``sources`` (repository path: Python source text)."""
    functions: list[Function] = []
    classes: list[Klass] = []
    constants: set[tuple[str, str]] = set()
    bindings: list[Binding] = []
    skipped = []
    for path, text in sorted(sources.items()):
        try:
            tree = ast.parse(text, filename=path)
            found = _File(path)
            found.module(tree)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            skipped.append(path)
            continue
        functions += found.functions
        classes += found.classes
        constants |= {(path, name) for name in found.constants}
        bindings += found.bindings
    return CallGraph(tuple(functions), tuple(classes), frozenset(constants), tuple(skipped), tuple(bindings))


class _File:
    """The definitions of one parsed file."""

    def __init__(self, path: str):
        self.path = path
        self.functions: list[Function] = []
        self.classes: list[Klass] = []
        self.constants: set[str] = set()
        self.bindings: list[Binding] = []

    def module(self, tree: ast.Module) -> None:
        self._module_level(tree.body, frozenset(), frozenset())
        self._definitions(tree.body, "", None)

    def _module_level(
        self, body: Iterable[ast.stmt], reads: frozenset[str], attributes: frozenset[str]
    ) -> None:
        """Record the assignments among ``body`` and in the blocks under it that run at import
        (not in definitions), with what the ``if`` tests around them read (``reads``,
        ``attributes``)."""
        for statement in body:
            names = _assigned(statement)
            self.constants |= names
            value = getattr(statement, "value", None)
            if names and isinstance(value, ast.expr):
                loaded, attrs = _loads(value)
                for name in sorted(names):
                    self.bindings.append(
                        Binding(self.path, name, statement.lineno, reads | loaded, attributes | attrs)
                    )
            if isinstance(statement, _DEFINITIONS):
                continue
            inner_reads, inner_attributes = reads, attributes
            if isinstance(statement, ast.If | ast.While):
                loaded, attrs = _loads(statement.test)
                inner_reads, inner_attributes = reads | loaded, attributes | attrs
            for block in ("body", "orelse", "finalbody"):
                nested = getattr(statement, block, None)
                if isinstance(nested, list):
                    self._module_level(nested, inner_reads, inner_attributes)
            for handler in getattr(statement, "handlers", ()):
                self._module_level(handler.body, reads, attributes)

    def _definitions(self, body: Iterable[ast.stmt], prefix: str, owner: str | None) -> None:
        """Record the definitions among ``body`` and, through `_nested`, those inside them."""
        for node in _nested(body):
            if isinstance(node, ast.ClassDef):
                qualname = prefix + node.name
                names: set[str] = set()
                for statement in node.body:
                    names |= _assigned(statement)
                self.classes.append(Klass(self.path, qualname, node.lineno, frozenset(names)))
                self._definitions(node.body, qualname + ".", qualname)
            elif isinstance(node, _FUNCTIONS):
                qualname = prefix + node.name
                self.functions.append(_function(self.path, qualname, owner, node))
                self._definitions(node.body, qualname + ".<locals>.", None)


def _nested(body: Iterable[ast.stmt]) -> Iterator[ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef]:
    """The definitions in ``body`` (also under ``if``, ``try``, ``with``, loops), not inside
    other definitions."""
    stack: list[ast.AST] = list(reversed(list(body)))
    while stack:
        node = stack.pop()
        if isinstance(node, _DEFINITIONS):
            yield node
            continue
        if isinstance(node, ast.stmt):
            stack.extend(
                reversed(
                    [
                        child
                        for child in ast.iter_child_nodes(node)
                        if isinstance(child, ast.stmt | ast.excepthandler | ast.match_case)
                    ]
                )
            )
        elif isinstance(node, ast.ExceptHandler | ast.match_case):
            stack.extend(reversed(node.body))


def _function(
    path: str, qualname: str, owner: str | None, node: ast.FunctionDef | ast.AsyncFunctionDef
) -> Function:
    calls: set[str] = set()
    methods: set[str] = set()
    own: set[str] = set()
    loaded: set[str] = set()
    stored: set[str] = {a.arg for a in (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs)}
    stored |= {a.arg for a in (node.args.vararg, node.args.kwarg) if a is not None}
    attributes: set[str] = set()
    returns: set[str] = set()
    for child in _body_nodes(node):
        if isinstance(child, ast.Return) and isinstance(child.value, ast.Name):
            returns.add(child.value.id)
        if isinstance(child, ast.Call):
            target = child.func
            if isinstance(target, ast.Name):
                calls.add(target.id)
            elif isinstance(target, ast.Attribute):
                receiver = target.value
                if isinstance(receiver, ast.Name) and receiver.id in _RECEIVERS:
                    own.add(target.attr)
                else:
                    methods.add(target.attr)
        elif isinstance(child, ast.Name):
            (loaded if isinstance(child.ctx, ast.Load) else stored).add(child.id)
        elif isinstance(child, ast.Attribute) and isinstance(child.ctx, ast.Load):
            attributes.add(child.attr)
        elif isinstance(child, _DEFINITIONS):
            stored.add(child.name)
            for decorator in child.decorator_list:  # applied, that is called, where it is defined
                if isinstance(decorator, ast.Name):
                    calls.add(decorator.id)
                elif isinstance(decorator, ast.Attribute):
                    methods.add(decorator.attr)
    decorators = {name for name in map(_last_name, node.decorator_list) if name is not None}
    return Function(
        path,
        qualname,
        node.lineno,
        owner,
        frozenset(calls),
        frozenset(methods),
        frozenset(own),
        frozenset(loaded - stored),
        frozenset(attributes),
        frozenset(decorators),
        frozenset(returns),
    )


def _body_nodes(node: ast.FunctionDef | ast.AsyncFunctionDef) -> Iterator[ast.AST]:
    """The nodes of a function's body that run when it is called: not those of nested
    definitions (their decorators and defaults do run), not error paths."""
    stack: list[ast.AST] = list(node.body)
    while stack:
        child = stack.pop()
        if isinstance(child, ast.Raise | ast.ExceptHandler):
            continue
        yield child
        if isinstance(child, _DEFINITIONS):
            stack.extend(child.decorator_list)
            if isinstance(child, _FUNCTIONS):
                stack.extend(child.args.defaults)
                stack.extend(d for d in child.args.kw_defaults if d is not None)
            continue
        stack.extend(ast.iter_child_nodes(child))


def _loads(node: ast.expr) -> tuple[frozenset[str], frozenset[str]]:
    """The global names and the attributes an expression reads."""
    names: set[str] = set()
    attributes: set[str] = set()
    for child in ast.walk(node):
        if isinstance(child, ast.Name) and isinstance(child.ctx, ast.Load):
            names.add(child.id)
        elif isinstance(child, ast.Attribute) and isinstance(child.ctx, ast.Load):
            attributes.add(child.attr)
    return frozenset(names), frozenset(attributes)


def _last_name(node: ast.expr) -> str | None:
    """``name`` of a decorator ``@name``, ``@a.name`` or ``@name(...)``."""
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _assigned(statement: ast.stmt) -> set[str]:
    """The plain names a module- or class-level statement assigns."""
    if isinstance(statement, ast.Assign):
        targets = statement.targets
    elif isinstance(statement, ast.AnnAssign | ast.AugAssign):
        targets = [statement.target]
    else:
        return set()
    names = set()
    for target in targets:
        stack: list[ast.expr] = [target]
        while stack:
            item = stack.pop()
            if isinstance(item, ast.Name):
                names.add(item.id)
            elif isinstance(item, ast.Tuple | ast.List):
                stack.extend(item.elts)
            elif isinstance(item, ast.Starred):
                stack.append(item.value)
    return names

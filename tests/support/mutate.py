"""Mutation testing of the core's decision modules: would the tests notice if the code were wrong?

For each module, every small change a slip of the keyboard could make is tried, one at a time: a
comparison turned around or made strict (``<`` / ``<=``, ``==`` / ``!=``, ``in`` / ``not in``),
``and`` / ``or`` swapped, a ``not`` dropped, an arithmetic operator swapped (``+`` / ``-``,
``*`` / ``/``), a number moved by one (an integer) or doubled (a float), ``True`` / ``False``
swapped. Each *mutant* is the module with that one change, run against the module's tests
(`TESTS`) in a scratch copy of the repository (the work tree is never touched); the tests *kill*
it when they fail or time out, and a mutant they let pass *survives*. The score is the share
killed. Docstrings, annotations, decorators and the ``__future__`` import are left alone; a mutant whose
change cannot alter behaviour (an equivalent mutant) survives too, and is listed for a person to
judge (docs/testing.md names the known ones).

    .venv/bin/python -m tests.support.mutate                           # every module of TESTS
    .venv/bin/python -m tests.support.mutate bot/core/bisect/plan.py   # some of them
    .venv/bin/python -m tests.support.mutate --changed origin/main     # those a change touches

`make mutation` runs the first; CI runs the last, on the modules its change touches.
"""

from __future__ import annotations

import argparse
import ast
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# The decision modules, and the tests that judge each.
_STATS_TESTS = (
    "tests/core/judge/test_stats_edges.py",
    "tests/core/judge/test_stats.py",
    "tests/core/bisect/test_report.py",
    "tests/core/judge/test_speculation.py",
    "tests/core/judge/test_results.py",
    "tests/core/judge/test_replays.py",
    "tests/core/judge/test_outliers.py",
)
TESTS: dict[str, tuple[str, ...]] = {
    "bot/core/commands/grammar.py": ("tests/core/commands",),
    "bot/core/bisect/plan.py": ("tests/core/bisect/test_plan.py",),
    # Quickest first: most mutants are killed by the first test that runs them (-x).
    "bot/core/risk/scoring.py": (
        "tests/core/risk/test_scoring.py",
        "tests/core/risk/test_scoring_edges.py",
        "tests/core/render/test_risk.py",
        "tests/core/render/test_comment.py",
        "tests/core/risk/test_changes.py",
        "tests/core/risk/test_report_json.py",
    ),
    # The report, its words and its JSON, and where a line sits: split off scoring.py, judged by its tests.
    "bot/core/risk/places.py": (
        "tests/core/risk/test_scoring.py",
        "tests/core/risk/test_scoring_edges.py",
        "tests/core/render/test_risk.py",
        "tests/core/risk/test_report_json.py",
    ),
    "bot/core/risk/reasons.py": (
        "tests/core/risk/test_scoring_edges.py",
        "tests/core/risk/test_scoring.py",
        "tests/core/render/test_risk.py",
        "tests/core/render/test_comment.py",
        "tests/core/risk/test_report_json.py",
    ),
    "bot/core/risk/report.py": (
        "tests/core/risk/test_scoring.py",
        "tests/core/risk/test_scoring_edges.py",
        "tests/core/render/test_risk.py",
        "tests/core/render/test_comment.py",
        "tests/core/risk/test_report_json.py",
    ),
    # What a hunk is (cosmetic, rename, move, sweep, import-time set-up), the pins a manifest moves,
    # the rules themselves (every weight and pattern is in the docs' rule table) and triage's order.
    "bot/core/risk/changes.py": (
        "tests/core/risk/test_gate_rules.py",
        "tests/core/risk/test_changes.py",
        "tests/core/risk/test_scoring.py",
        "tests/core/risk/test_scoring_edges.py",
    ),
    "bot/core/risk/manifests.py": (
        "tests/core/risk/test_manifests.py",
        "tests/core/risk/test_gate_rules.py",
        "tests/core/risk/test_scoring.py",
    ),
    "bot/core/risk/profiles.py": (
        "tests/core/risk/test_gate_rules.py",
        "tests/core/render/test_risk.py",
        "tests/core/risk/test_scoring.py",
    ),
    "bot/core/risk/triage.py": ("tests/core/risk/test_triage.py", "tests/core/risk/test_gate_rules.py"),
    "bot/core/risk/serialise.py": (
        "tests/core/risk/test_report_json.py",
        "tests/cli/test_score_triage_config.py",
    ),
    # The per-step map's rules and the call graph they follow.
    "bot/core/risk/callgraph.py": (
        "tests/core/risk/test_callgraph.py",
        "tests/core/risk/test_callgraph_wrappers.py",
        "tests/core/risk/test_stepmap_scoring.py",
        "tests/core/risk/test_stepmap_scoring_data.py",
    ),
    "bot/core/risk/stepmap_scoring.py": (
        "tests/core/risk/test_stepmap_scoring.py",
        "tests/core/risk/test_stepmap_scoring_lines.py",
        "tests/core/risk/test_stepmap_scoring_wrappers.py",
        "tests/core/risk/test_stepmap_scoring_data.py",
        "tests/cli/test_score_map.py",
    ),
    # Which changed lines of a mapped function ran in the profiled steps (the map's recorded lines).
    "bot/core/risk/map_lines.py": (
        "tests/core/risk/test_stepmap_scoring_lines.py",
        "tests/runner/test_step_lines.py",
    ),
    "bot/core/risk/map_rules.py": (
        "tests/core/risk/test_stepmap_scoring.py",
        "tests/cli/test_score_map.py",
    ),
    **{
        # the comparison's statistics, split by concern: each judged by the same tests
        f"bot/core/judge/{module}.py": _STATS_TESTS
        for module in ("stats", "estimate", "verdicts", "multiplicity", "notes")
    },
    # What opens a regression case of the default branch, and what a later point does to the cases.
    "bot/core/watch/opening.py": (
        "tests/core/watch/test_opening.py",
        "tests/core/watch/test_opening_boundaries.py",
        "tests/core/watch/test_opening_wild_points.py",
        "tests/core/watch/test_opening_quantised_wild.py",
        "tests/service/test_watch_streams.py",
    ),
    "bot/core/watch/cases.py": ("tests/core/watch/test_cases.py", "tests/core/watch/test_opening.py"),
    # The direction rule and the minimum effect the comparison and the history share.
    "bot/core/vocabulary.py": (
        "tests/core/test_vocabulary.py",
        "tests/core/judge/test_stats_edges.py",
        "tests/core/judge/test_stats.py",
        "tests/core/history/test_changepoints.py",
        "tests/core/config/test_schema.py",
    ),
    "bot/core/bench/artifact.py": ("tests/core/bench/test_artifact.py",),
    # The per-step map: its file, a torch-profiler trace made into one, the command that makes it.
    "bot/core/stepmap.py": ("tests/core/test_stepmap.py", "tests/core/risk/test_stepmap_scoring_lines.py"),
    "bot/runner/trace_map.py": (
        "tests/runner/test_trace_map.py",
        "tests/cli/test_score_map.py",
        "tests/cli/test_map.py",
    ),
    "bot/cli/map_cmd.py": ("tests/cli/test_map.py",),
    # The bot's own jobs: a stored step read back, queued once.
    "bot/service/chain.py": ("tests/service/test_chain.py",),
    # What each side may change between its rounds: the trees' and the import path's manifests.
    "bot/runner/integrity.py": ("tests/runner/test_integrity.py", "tests/runner/test_manifest_walk.py"),
}
_SWAPS: dict[type, type] = {
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
    ast.And: ast.Or,
    ast.Or: ast.And,
    ast.Add: ast.Sub,
    ast.Sub: ast.Add,
    ast.Mult: ast.Div,
    ast.Div: ast.Mult,
    ast.FloorDiv: ast.Div,
}


@dataclass(frozen=True)
class Mutant:
    module: str
    number: int
    line: int
    change: str


@dataclass(frozen=True)
class Outcome:
    mutant: Mutant
    killed: bool


def _skipped(tree: ast.Module) -> set[int]:
    """Ids of the nodes that never change behaviour: docstrings, annotations, __future__."""
    skipped: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (
            isinstance(body, list)
            and body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
        ):
            skipped.update(id(n) for n in ast.walk(body[0]))
        for annotation in _annotations(node):
            skipped.update(id(n) for n in ast.walk(annotation))
        for decorator in getattr(node, "decorator_list", ()):  # @dataclass(frozen=True): a declaration
            skipped.update(id(n) for n in ast.walk(decorator))
        if isinstance(node, ast.ImportFrom) and node.module == "__future__":
            skipped.add(id(node))
    return skipped


def _annotations(node: ast.AST) -> Iterator[ast.AST]:
    if isinstance(node, ast.AnnAssign):
        yield node.annotation
    if isinstance(node, ast.arg) and node.annotation is not None:
        yield node.annotation
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.returns is not None:
        yield node.returns


def _sites(tree: ast.Module) -> list[tuple[ast.AST, str]]:
    """Every place a mutation applies, in a fixed order, with a description of the change."""
    skipped = _skipped(tree)
    found: list[tuple[ast.AST, str]] = []
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Compare):
            found += [
                (node, f"comparison {i}: {type(op).__name__} -> {_SWAPS[type(op)].__name__}")
                for i, op in enumerate(node.ops)
                if type(op) in _SWAPS
            ]
        elif isinstance(node, ast.BoolOp | ast.BinOp) and type(node.op) in _SWAPS:
            found.append((node, f"{type(node.op).__name__} -> {_SWAPS[type(node.op)].__name__}"))
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            found.append((node, "not dropped"))
        elif isinstance(node, ast.Constant) and type(node.value) in (int, float, bool):
            found.append((node, f"{node.value!r} -> {_mutated_constant(node.value)!r}"))
    return found


def _mutated_constant(value: int | float | bool) -> int | float | bool:
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    return value * 2 if value else 1.0


class _Apply(ast.NodeTransformer):
    """Applies the mutation at one site (found by position in the walk of a fresh copy)."""

    def __init__(self, target: ast.AST, change: str):
        self.target, self.change = target, change

    def visit(self, node: ast.AST) -> ast.AST:
        if node is not self.target:
            return self.generic_visit(node)
        if isinstance(node, ast.Compare):
            index = int(self.change.split(":")[0].split()[1])
            node.ops[index] = _SWAPS[type(node.ops[index])]()
        elif isinstance(node, ast.BoolOp | ast.BinOp):
            node.op = _SWAPS[type(node.op)]()
        elif isinstance(node, ast.UnaryOp):
            return node.operand
        elif isinstance(node, ast.Constant):
            node.value = _mutated_constant(node.value)
        return node


def mutants(module: str) -> list[tuple[Mutant, str]]:
    """Every mutant of ``module`` (a path under ROOT) with its source."""
    source = (ROOT / module).read_text()
    tree = ast.parse(source)
    made = []
    for number, (_, change) in enumerate(_sites(tree)):
        fresh = ast.parse(source)
        node, _ = _sites(fresh)[number]
        line = getattr(node, "lineno", 0)
        mutated = ast.fix_missing_locations(_Apply(node, change).visit(fresh))
        made.append((Mutant(module, number, line, change), ast.unparse(mutated)))
    return made


def _scratch() -> Path:
    """A copy of what the tests need, where mutants are written: the work tree stays as it is."""
    scratch = Path(tempfile.mkdtemp(prefix="perfbot-mutants-"))
    for name in ("bot", "tests", "examples", "benchmarks", "docs"):
        shutil.copytree(ROOT / name, scratch / name, ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml",):
        shutil.copy2(ROOT / name, scratch / name)
    return scratch


def _run_tests(where: Path, tests: tuple[str, ...], timeout: float) -> tuple[bool, float]:
    """Whether the tests pass in ``where``, and how long they took."""
    env = {**os.environ, "PYTHONPATH": str(where), "PYTHONDONTWRITEBYTECODE": "1"}
    began = time.monotonic()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *tests],
            cwd=where,
            env=env,
            capture_output=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return False, timeout
    return done.returncode == 0, time.monotonic() - began


def run_module(
    module: str, workers: int, most: int | None = None, only: set[tuple[int, str]] | None = None
) -> list[Outcome]:
    """Try every mutant of ``module`` (or ``most`` of them, spread evenly over the file; or those
    whose (line, change) is in ``only``), ``workers`` at a time, each in a scratch copy of its own."""
    tests = TESTS[module]
    made = mutants(module)
    if only is not None:
        made = [(m, text) for m, text in made if (m.line, m.change) in only]
    if most is not None and len(made) > most:
        made = [made[round(i * (len(made) - 1) / max(1, most - 1))] for i in range(most)]
    scratches = [_scratch() for _ in range(workers)]
    try:
        # The module as the mutants are written (unparsed: no comments), unmutated, must pass.
        original = ast.unparse(ast.parse((ROOT / module).read_text()))
        (scratches[0] / module).write_text(original)
        passed, seconds = _run_tests(scratches[0], tests, 900)
        if not passed:
            raise SystemExit(f"{module}: its tests fail before any mutation; fix them first")
        timeout = max(30.0, 3 * seconds)
        free = list(scratches)

        def judge(item: tuple[Mutant, str]) -> Outcome:
            mutant, text = item
            where = free.pop()
            try:
                (where / module).write_text(text)
                survived, _ = _run_tests(where, tests, timeout)
            finally:
                (where / module).write_text(original)
                free.append(where)
            return Outcome(mutant, not survived)

        with ThreadPoolExecutor(workers) as pool:
            return list(pool.map(judge, made))
    finally:
        for scratch in scratches:
            shutil.rmtree(scratch, ignore_errors=True)


def changed_modules(base: str) -> list[str]:
    """The modules of `TESTS` that differ from ``base`` (a git revision)."""
    done = subprocess.run(
        ["git", "diff", "--name-only", base, "--", *TESTS],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:  # a shallow clone, a first commit: nothing to compare with
        print(f"cannot compare with {base} ({done.stderr.strip()[:200]}): no module mutated")
        return []
    return [path for path in done.stdout.split() if path in TESTS]


def _survivors(path: Path, module: str) -> set[tuple[int, str]]:
    """(line, change) of the survivors of ``module`` an earlier run printed."""
    found = set()
    for line in path.read_text().splitlines():
        prefix = f"<!-- survived {module}:"
        if line.startswith(prefix) and line.endswith(" -->"):
            number, _, change = line[len(prefix) : -4].partition(": ")
            found.add((int(number), change))
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("modules", nargs="*", help=f"modules to mutate (default: {', '.join(TESTS)})")
    parser.add_argument("--changed", metavar="REV", help="only the modules that differ from REV")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument(
        "--fail-under",
        type=float,
        default=0.0,
        metavar="PCT",
        help="exit 1 when a module scores below PCT percent",
    )
    parser.add_argument(
        "--max-mutants",
        type=int,
        metavar="N",
        help="at most N mutants per module, spread evenly over it (a reduced run)",
    )
    parser.add_argument(
        "--survivors",
        metavar="FILE",
        help="only the mutants an earlier run's output (FILE) lists as survivors",
    )
    args = parser.parse_args(argv)
    modules = changed_modules(args.changed) if args.changed else (args.modules or list(TESTS))
    unknown = [m for m in modules if m not in TESTS]
    if unknown:
        parser.error(f"{unknown[0]}: not a module this knows the tests of ({', '.join(TESTS)})")
    if not modules:
        print("no mutated module changed")
        return 0
    print("| module | mutants | killed | survived | score |\n|---|---:|---:|---:|---:|")
    below, survivors = False, []
    for module in modules:
        began = time.monotonic()
        only = _survivors(Path(args.survivors), module) if args.survivors else None
        outcomes = run_module(module, args.workers, args.max_mutants, only)
        killed = sum(o.killed for o in outcomes)
        score = 100 * killed / len(outcomes) if outcomes else 100.0
        below |= score < args.fail_under
        survivors += [o.mutant for o in outcomes if not o.killed]
        print(
            f"| `{module}` | {len(outcomes)} | {killed} | {len(outcomes) - killed} | {score:.0f}% |"
            f" <!-- {time.monotonic() - began:.0f} s -->",
            flush=True,
        )
        for outcome in outcomes:
            if not outcome.killed:
                print(
                    f"<!-- survived {module}:{outcome.mutant.line}: {outcome.mutant.change} -->", flush=True
                )
    print("\nSurvivors:")
    for m in survivors:
        print(f"- {m.module}:{m.line}: {m.change}")
    return 1 if below else 0


if __name__ == "__main__":
    sys.exit(main())

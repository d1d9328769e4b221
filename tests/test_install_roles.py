"""What each install role gets: the hashed lock files in requirements/ match pyproject.toml, torch is
no dependency of perfbot, the server runs without the runner's dependencies, and a verb whose extra
is missing says which extra to install.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from bot.cli.missing import MODULE_EXTRAS

ROOT = Path(__file__).resolve().parents[1]
REQUIREMENTS = ROOT / "requirements"
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
ROLES = ("server", "runner", "test")
# Installed beside the test lock, not from it (requirements/README.md says why).
OUTSIDE_THE_LOCK = {"torch"}


@dataclass
class Pin:
    version: str
    hashes: list[str] = field(default_factory=list)
    via: set[str] = field(default_factory=set)


def read_lock(path: Path) -> dict[str, Pin]:
    """The pins of a pip-compile output: `name==version \\`, its `--hash` lines, its `# via` lines."""
    pins: dict[str, Pin] = {}
    current: Pin | None = None
    for line in path.read_text().splitlines():
        if match := re.match(r"([A-Za-z0-9._-]+)==(\S+)", line):
            current = pins[canonicalize_name(match[1])] = Pin(match[2])
        elif current is not None and (match := re.match(r"\s+--hash=sha256:([0-9a-f]{64})", line)):
            current.hashes.append(match[1])
        elif current is not None and (match := re.match(r"\s+#\s+(?:via\s+)?(\S.*)", line)):
            if match[1] != "via":
                current.via.add(match[1])
        elif not line.startswith(" "):
            current = None
    return pins


def requirements_of(extra: str | None) -> dict[str, Requirement]:
    """pyproject's requirements for the base install plus ``extra``, `perfbot[...]` expanded."""
    found: dict[str, Requirement] = {}
    pending = list(PYPROJECT["dependencies"]) + list(PYPROJECT["optional-dependencies"].get(extra, []))
    while pending:
        requirement = Requirement(pending.pop())
        if canonicalize_name(requirement.name) == "perfbot":
            for inner in requirement.extras:
                pending += PYPROJECT["optional-dependencies"][inner]
        else:
            found[canonicalize_name(requirement.name)] = requirement
    return found


@pytest.mark.parametrize("role", ROLES)
def test_every_dependency_of_a_role_is_locked_at_its_pin_with_hashes(role):
    lock = read_lock(REQUIREMENTS / f"{role}.txt")
    assert lock, f"requirements/{role}.txt holds no pins"
    for name, requirement in requirements_of(role).items():
        if name in OUTSIDE_THE_LOCK:
            assert name not in lock
            continue
        assert name in lock, f"{name} ({requirement}) is missing from requirements/{role}.txt: run make lock"
        assert requirement.specifier.contains(lock[name].version, prereleases=True), (
            f"pyproject.toml asks for {requirement}, requirements/{role}.txt pins {lock[name].version}: "
            "run make lock"
        )
    unhashed = [name for name, pin in lock.items() if not pin.hashes]
    assert not unhashed, f"requirements/{role}.txt pins without a hash: {unhashed}"


@pytest.mark.parametrize("role", ROLES)
def test_a_lock_holds_no_dependency_that_pyproject_dropped(role):
    wanted = requirements_of(role)
    for name, pin in read_lock(REQUIREMENTS / f"{role}.txt").items():
        if pin.via & {"perfbot", "perfbot (pyproject.toml)"}:
            assert name in wanted, f"requirements/{role}.txt still pins {name}, which pyproject.toml dropped"


@pytest.mark.parametrize("role", ["server", "runner"])
def test_the_server_and_runner_locks_pin_what_the_test_lock_pins(role):
    """So one environment can hold several roles, and the tests run what is deployed."""
    test_lock = read_lock(REQUIREMENTS / "test.txt")
    for name, pin in read_lock(REQUIREMENTS / f"{role}.txt").items():
        assert test_lock[name].version == pin.version, (
            f"{name}: {role} pins {pin.version}, test {test_lock[name].version}"
        )


def test_the_maintenance_tools_are_locked_at_their_pins():
    lock = read_lock(REQUIREMENTS / "tools.txt")
    for line in (REQUIREMENTS / "tools.in").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            requirement = Requirement(line)
            assert requirement.specifier.contains(lock[canonicalize_name(requirement.name)].version)
    assert all(pin.hashes for pin in lock.values())


def test_torch_is_a_test_dependency_only_installed_at_its_pin():
    assert "torch" not in requirements_of(None)
    for extra in ("server", "runner"):
        assert "torch" not in requirements_of(extra), f"the {extra} extra must not pull torch"
    (pinned,) = [
        Requirement(line)
        for line in (REQUIREMENTS / "torch.txt").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    assert str(pinned.specifier) == str(requirements_of("test")["torch"].specifier)


def test_the_server_lock_has_no_torch():
    lock = read_lock(REQUIREMENTS / "server.txt")
    assert "torch" not in lock


# Named in an extra for another package's sake; perfbot itself never imports it.
NEVER_IMPORTED = {"async-timeout"}  # redis's, on Python before 3.11.3 (pyproject.toml says why)


def _distributions_of(extra: str) -> set[str]:
    return {canonicalize_name(Requirement(text).name) for text in PYPROJECT["optional-dependencies"][extra]}


@pytest.mark.parametrize("extra", ["server", "runner"])
def test_the_cli_knows_which_extra_brings_each_module(extra):
    """Each module that `perfbot` names in a missing-extra error comes from that extra, and each
    distribution of the extra is known by at least one of its modules."""
    providers = {
        module: {canonicalize_name(dist) for dist in dists}
        for module, dists in metadata.packages_distributions().items()
    }
    named = {module for module, owner in MODULE_EXTRAS.items() if owner == extra}
    for module in named:
        assert providers[module] & _distributions_of(extra), f"{module} is not installed by the {extra} extra"
    # A distribution two extras share (NumPy, SciPy) is named once, for the smaller install.
    covered = set().union(*(providers[module] for module in MODULE_EXTRAS))
    assert _distributions_of(extra) - NEVER_IMPORTED <= covered


def _run_python(code: str, cwd: Path) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("PERFBOT_")}
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        env={**environ, "PYTHONPATH": str(ROOT)},
    )


def test_the_server_and_worker_load_no_git_or_torch(tmp_path):
    """The server image has neither git nor torch: its whole import graph, third-party libraries
    included, must do without them. (NumPy and SciPy it has: the dashboard's change points and the
    judging of the results that runners send back use them.)"""
    probe = f"""
import sys
from bot.cli import serve
from bot.settings import Settings
from bot.web import server
from bot.web.app import create_app
from bot import bootstrap, worker
settings = Settings.from_env({{"PERFBOT_WEBHOOK_SECRET": "s", "PERFBOT_DATABASE_URL": "sqlite:///{tmp_path}/p.db"}})
app = create_app(settings, bootstrap.build(settings).services)
app.test_client().get("/healthz")
print(" ".join(sorted(sys.modules)))
"""
    result = _run_python(probe, tmp_path)
    assert result.returncode == 0, result.stderr
    loaded = {name.partition(".")[0] for name in result.stdout.split()}
    assert not loaded & {"git", "torch"}


@pytest.mark.parametrize(
    ("argv", "absent", "extra"),
    [
        (["compare", "results.json"], ["numpy", "scipy"], "runner"),
        (["serve"], ["flask", "gunicorn"], "server"),
    ],
)
def test_a_verb_whose_extra_is_not_installed_names_the_extra(tmp_path, argv, absent, extra):
    blocked = "".join(f"sys.modules[{name!r}] = None\n" for name in absent)  # as if not installed
    probe = (
        f"import os, sys\n{blocked}os.environ['PERFBOT_WEBHOOK_SECRET'] = 's'\n"
        f"from bot.cli.main import main\nsys.exit(main({argv!r}))\n"
    )
    result = _run_python(probe, tmp_path)
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip().splitlines() == [
        f"perfbot: error: this command needs the Python module '{absent[0]}', which perfbot's '{extra}' "
        f"extra installs: pip install 'perfbot[{extra}]'"
    ]


def test_a_missing_module_no_extra_installs_is_not_explained_away(tmp_path):
    config = tmp_path / "perfbot.yml"
    config.write_text("version: 1\n")
    result = _run_python(
        "import sys\nsys.modules['yaml'] = None\nfrom bot.cli.main import main\n"
        f"sys.exit(main(['config', 'validate', {str(config)!r}]))\n",
        tmp_path,
    )
    assert result.returncode == 1 and "Traceback" in result.stderr and "yaml" in result.stderr

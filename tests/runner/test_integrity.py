"""A side's tree and the engine's import path are checked entry by entry (`bot.runner.integrity`): every
way of changing a file is seen, ignored files included, and in the engine only what Python writes
on import passes. Where a round has a mount namespace, what it must not change is read-only to it,
as root and as an unprivileged user."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

import bot
from bot.runner import integrity, scope
from bot.runner.integrity import Guard, TreeChanged, changes, manifest
from bot.runner.scope import STRATEGY_VARIABLE, ScopeError

from .test_rounds import round_of

ROOT = Path(__file__).resolve().parents[2]


def tree(folder: Path) -> Path:
    for name, text in {
        "work.py": "SPEED = 10\n",
        "pkg/__init__.py": "",
        "pkg/mod.py": "X = 1\n",
        ".gitignore": "build/\n",
        "build/lib/fast.so": "binary",
        ".git": "gitdir: x\n",
    }.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    return folder


def same_size_rewrite_with_the_old_mtime(folder: Path) -> None:
    path = folder / "work.py"
    before = path.stat()
    path.write_text("SPEED = 20\n")
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))  # only the ctime tells


def replaced_by_a_renamed_copy(folder: Path) -> None:
    copy = folder / "copy.tmp"
    shutil.copy2(folder / "pkg" / "mod.py", copy)  # same content, size and mtime; a new inode
    copy.replace(folder / "pkg" / "mod.py")


def added_and_removed_again(folder: Path) -> None:
    (folder / "pkg" / "planted.py").write_text("")
    (folder / "pkg" / "planted.py").unlink()  # no path differs; the folder's mtime does


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (lambda f: (f / "build" / "lib" / "fast.so").write_text("slower"), "changed build/lib/fast.so"),
        (lambda f: (f / "pkg" / "__pycache__").mkdir(), "added pkg/__pycache__"),
        (lambda f: (f / "sitecustomize.py").write_text(""), "added sitecustomize.py"),
        (lambda f: (f / "pkg" / "mod.py").unlink(), "removed pkg/mod.py"),
        (same_size_rewrite_with_the_old_mtime, "changed work.py"),
        (replaced_by_a_renamed_copy, "changed pkg/mod.py"),
        (lambda f: (f / "work.py").chmod(0o777), "changed work.py"),
        (lambda f: (f / ".git").write_text("gitdir: y\n"), "changed .git"),
        (added_and_removed_again, "changed pkg"),
    ],
)
def test_every_way_of_changing_a_tree_is_seen(tmp_path, change, expected):
    folder = tree(tmp_path / "t")
    before = manifest(folder)
    change(folder)
    assert changes(before, manifest(folder))[0] == expected


def test_an_unchanged_tree_has_no_changes_and_reading_it_changes_nothing(tmp_path):
    folder = tree(tmp_path / "t")
    before = manifest(folder)
    for path in folder.rglob("*"):
        if path.is_file():
            path.read_bytes()
    assert changes(before, manifest(folder)) == []
    assert len(before) == 10  # the root, 6 files, pkg/, build/ and build/lib/: ignored ones too


def test_in_the_engine_only_what_python_writes_on_import_passes(tmp_path):
    site = tree(tmp_path / "site-packages")
    before = manifest(site)
    subprocess.run(
        [sys.executable, "-c", "import work, pkg.mod"],
        cwd=site,
        check=True,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": ""},
    )
    after = manifest(site)
    assert any("__pycache__" in path for path in after)  # Python wrote bytecode, in two folders
    assert changes(before, after, python_writes=True) == []
    assert changes(before, after)  # which a worktree's check would see
    for planted, expected in [("zz.pth", "added zz.pth"), ("sitecustomize.py", "added sitecustomize.py")]:
        (site / planted).write_text("import os\n")
        assert changes(after, manifest(site), python_writes=True) == [expected, "changed ."]
        (site / planted).unlink()
    cached = next(site.glob("pkg/__pycache__/mod.*.pyc"))
    now = manifest(site)
    cached.write_bytes(cached.read_bytes())  # a .pyc rewritten (forged) in place
    assert changes(now, manifest(site), python_writes=True) == [f"changed pkg/__pycache__/{cached.name}"]


def test_the_guard_names_the_side_and_the_path_and_takes_a_sides_own_changes(tmp_path):
    trees = {"base": tree(tmp_path / "base"), "head": tree(tmp_path / "head")}
    guard = Guard(trees)
    for side in trees:
        guard.seal(side)
    (trees["base"] / "build" / "out.o").write_text("")  # base's own round: sealed after it
    guard.seal("base")
    guard.check("base")
    (trees["base"] / "work.py").write_text("SPEED = 20\n")  # then a round of head
    guard.seal("head")
    with pytest.raises(
        TreeChanged,
        match=r"^the base worktree changed between its rounds, after a round of "
        r"head: changed work\.py \(in .*base\); no round of this run is "
        r"trusted$",
    ):
        guard.check("base")


def test_the_guard_watches_the_engine_and_accepts_its_bytecode(tmp_path):
    site = tree(tmp_path / "engine" / "site-packages")
    guard = Guard({"base": tree(tmp_path / "base")}, shared=[site])
    guard.seal_shared()
    (site / "pkg" / "__pycache__").mkdir()
    (site / "pkg" / "__pycache__" / "mod.cpython-311.pyc").write_bytes(b"")
    guard.check("base")
    (site / "pkg" / "__pycache__" / "mod.cpython-311.pyc").write_bytes(b"forged")  # now it is the reference
    guard.seal("base")
    with pytest.raises(
        TreeChanged,
        match=r"^the engine's import path changed after a round of base: changed "
        r"pkg/__pycache__/mod\.cpython-311\.pyc \(in .*site-packages\)",
    ):
        guard.check("base")


def test_a_fenced_import_path_is_walked_at_the_ends_and_an_unfenced_folder_before_every_round(tmp_path):
    """Where the rounds' scope makes the import path read-only (`shared_fenced`), a round cannot
    write it: `check` walks only the folders that could not be made read-only (one that did not
    exist after the set-up: a user's site-packages a round creates and fills), and the end's
    `check_shared` walks them all. A set-up's fence leaves the import path writable."""
    site = tree(tmp_path / "engine" / "site-packages")
    user = tmp_path / "home" / "site-packages"  # not there yet
    guard = Guard({"base": tree(tmp_path / "base"), "head": tree(tmp_path / "head")}, [site, user])
    guard.shared_fenced = True
    assert site in guard.round_fence("base") and user in guard.round_fence("base")
    assert site not in guard.fence("base") and tmp_path / "head" in guard.fence("base")
    guard.seal_shared()
    assert guard.unfenced == [user]
    (site / "planted.pth").write_text("")  # what no round could do: only the end's walk sees it
    guard.check("base")
    with pytest.raises(TreeChanged, match=r"added planted\.pth"):
        guard.check_shared()
    (site / "planted.pth").unlink()
    guard.seal_shared()
    user.mkdir(parents=True)
    (user / "hook.pth").write_text("")
    with pytest.raises(TreeChanged, match=r"the engine's import path changed.*added "):
        guard.check("base")


def test_an_unfenced_import_path_is_walked_before_every_round(tmp_path):
    site = tree(tmp_path / "engine" / "site-packages")
    guard = Guard({"base": tree(tmp_path / "base")}, [site])
    assert guard.round_fence("base") == guard.fence("base")
    guard.seal_shared()
    (site / "planted.pth").write_text("")
    with pytest.raises(TreeChanged, match=r"added planted\.pth"):
        guard.check("base")


def test_the_engine_s_import_path_is_asked_of_its_interpreter(tmp_path):
    venv = tmp_path / "engine"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    worktree = tmp_path / "base"
    worktree.mkdir()
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "PYTHONPATH": f"{worktree}:{tmp_path / 'extra'}",
    }
    (tmp_path / "extra").mkdir()
    found = integrity.import_path(str(venv / "bin" / "python"), env, [worktree])
    assert next(venv.glob("lib/python3*/site-packages")).resolve() in found
    assert (tmp_path / "extra").resolve() in found  # the rounds' PYTHONPATH, as they see it
    assert worktree.resolve() not in found  # a worktree is checked as its side's
    assert integrity.import_path(str(tmp_path / "no-such-python"), env, []) == []


def test_perfbot_s_own_files_are_fenced_off_unless_the_engine_imports_from_them(tmp_path):
    package = Path(bot.__file__).resolve().parent
    prefix = Path(sys.prefix).resolve()
    assert set(integrity.perfbot_files([])) == set(integrity.outermost([package, prefix]))
    engine_inside = next(prefix.glob("lib/python3*/site-packages"))
    assert prefix not in integrity.perfbot_files([engine_inside])
    guard = Guard({"base": tmp_path / "base", "head": tmp_path / "head"}, fences=[package])
    assert guard.fence("head") == tuple(sorted([(tmp_path / "head").parent.resolve() / "base", package]))
    outer = Guard({"base": tmp_path / "base", "head": tmp_path / "head"}, fences=[tmp_path])
    assert outer.fence("head") == ((tmp_path / "base").resolve(),)  # never what holds its own tree


def _strategy_with_mounts() -> bool:
    try:
        return scope._strategy("pid-namespace").read_only
    except ScopeError:
        return False


@pytest.mark.skipif(not _strategy_with_mounts(), reason="no PID namespace with mounts of its own here")
def test_a_round_cannot_write_what_it_gets_read_only(tmp_path, monkeypatch):
    monkeypatch.setenv(STRATEGY_VARIABLE, "pid-namespace")
    other = tree(tmp_path / "base")
    before = manifest(other)
    package = Path(bot.__file__).resolve().parent
    planted = package / f"perfbot-test-{os.getpid()}"
    try:
        result = round_of(
            tmp_path / "head-tree",
            f"echo 20 > {other}/work.py; touch {other}/new {planted}; echo 'PERFBOT_METRIC t=1 better=lower'",
            read_only=(other, package),
        )
        assert result.ok, result.error
        assert not planted.exists()
    finally:
        planted.unlink(missing_ok=True)
    assert changes(before, manifest(other)) == []
    assert "Read-only file system" in (tmp_path / "head-tree" / "round" / "0-cmd.stderr").read_text()


# Run as an unprivileged user: a command in a namespace (``--user --map-current-user --keep-caps``)
# whose init made a folder read-only, trying every way to write it or get it writable again.
_UNPRIVILEGED = r"""
import json, os, sys
from pathlib import Path
from bot.runner import scope
folder, out = Path(sys.argv[1]), Path(sys.argv[2])
chosen = scope.strategy()
attempts = (f"grep CapEff /proc/self/status; echo x > {folder}/f && echo WROTE; "
            f"umount {folder} && echo UNMOUNTED; mount -o remount,rw,bind {folder} && echo REMOUNTED; "
            f"unshare -U -m -r sh -c 'umount {folder} && echo NESTED-UNMOUNTED; "
            f"mount -o remount,rw,bind {folder} && echo NESTED-REMOUNTED; echo y > {folder}/f && echo NESTED-WROTE'")
with open(out / "stdout", "wb") as stdout, open(out / "stderr", "wb") as stderr:
    s = scope.Scope(chosen)
    s.popen(["sh", "-c", attempts], out, dict(os.environ), stdout, stderr, read_only=[folder]).wait()
    s.end()
print(json.dumps({"uid": os.getuid(), "strategy": chosen.name, "read_only": chosen.read_only,
                  "unshare": chosen.unshare, "returncode": s.returncode()}))
"""


@pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which("setpriv") or not os.path.exists("/usr/bin/python3"),
    reason="needs root, to become another user with setpriv",
)
def test_unprivileged_in_a_user_namespace_the_folder_stays_read_only():
    work = Path(tempfile.mkdtemp(prefix="perfbot-unprivileged-"))
    try:
        work.chmod(0o777)
        folder = work / "other-side"
        folder.mkdir()
        (folder / "f").write_text("base\n")
        folder.chmod(0o777)
        (folder / "f").chmod(0o666)
        done = subprocess.run(
            [
                "setpriv",
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                "/usr/bin/python3",
                "-c",
                _UNPRIVILEGED,
                str(folder),
                str(work),
            ],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=work,
            env={"PATH": os.environ["PATH"], "PYTHONPATH": str(ROOT), "HOME": str(work)},
        )
        if done.returncode != 0 and "pid-namespace" not in done.stdout:
            pytest.skip(f"an unprivileged user cannot run it here: {done.stderr.strip()[-200:]}")
        answer = json.loads(done.stdout)
        if answer["strategy"] != "pid-namespace":
            pytest.skip("unprivileged user namespaces are refused here")
        assert answer["uid"] == 65534 and "--user" in answer["unshare"] and answer["read_only"]
        said = (work / "stdout").read_text()
        assert answer["returncode"] == 2, said + (work / "stderr").read_text()  # the last attempt's status
        assert "CapEff:\t0000000000000000" in said  # the command has no capability left
        assert not {
            "WROTE",
            "UNMOUNTED",
            "REMOUNTED",
            "NESTED-UNMOUNTED",
            "NESTED-REMOUNTED",
            "NESTED-WROTE",
        } & set(said.split()), said
        assert (folder / "f").read_text() == "base\n"
    finally:
        shutil.rmtree(work, ignore_errors=True)


def test_a_summary_names_the_first_change_and_counts_the_rest():
    assert integrity.summary(["added a"]) == "added a"
    assert integrity.summary(["added a", "changed b"]) == "added a (and 1 more)"
    assert integrity.summary(["added a", "changed b", "changed c"]) == "added a (and 2 more)"


def test_changes_list_what_came_and_went_first_then_files_then_folders():
    folder, file = (0o40755, 0, 1, 1, 1), (0o100644, 1, 1, 1, 2)
    before = {"": folder, "a": file, "gone": file, "sub": folder}
    after = {
        "": (0o40755, 0, 2, 2, 1),
        "a": (0o100644, 2, 2, 2, 2),
        "zz": file,
        "sub": (0o40755, 0, 2, 2, 1),
    }
    assert changes(before, after) == ["removed gone", "added zz", "changed a", "changed .", "changed sub"]


def test_only_python_s_own_bytecode_writes_pass_in_the_engine():
    cache, pyc = (0o40755, 0, 1, 1, 7), (0o100644, 1, 1, 1, 8)
    before = {"pkg": (0o40755, 0, 1, 1, 5), "pkg/__pycache__": cache}
    # A new .pyc in an existing cache: the cache folder's times change, nothing else.
    later = {**before, "pkg/__pycache__": (0o40755, 0, 2, 2, 7), "pkg/__pycache__/m.pyc": pyc}
    assert changes(before, later, python_writes=True) == []
    # The cache folder replaced by another (a new inode): not what Python does on import.
    replaced = {**later, "pkg/__pycache__": (0o40755, 0, 2, 2, 99)}
    assert changes(before, replaced, python_writes=True) == ["changed pkg/__pycache__"]
    # A folder that did not get a new cache but changed: a change even to an importing interpreter.
    touched = {**before, "pkg": (0o40755, 0, 2, 2, 5)}
    assert changes(before, touched, python_writes=True) == ["changed pkg"]


def test_a_side_s_own_change_is_not_blamed_on_the_other_side(tmp_path):
    guard = Guard({"base": tree(tmp_path / "base"), "head": tree(tmp_path / "head")})
    guard.seal("base")
    (tmp_path / "base" / "work.py").write_text("SPEED = 20\n")
    with pytest.raises(TreeChanged, match=r"^the base worktree changed between its rounds: changed work\.py"):
        guard.check("base")


@pytest.mark.parametrize(
    ("text", "nanoseconds"),
    [(b"12.5", 12_500_000_000), (b"12", 12_000_000_000), (b"1.0000000019", 1_000_000_001)],
)
def test_find_s_times_are_read_to_the_nanosecond(text, nanoseconds):
    assert integrity._ns(text) == nanoseconds


@pytest.mark.parametrize("text", [b"1x.5", b"1.5x", b"-1.5", b""])
def test_a_time_find_did_not_write_is_refused(text):
    with pytest.raises(ValueError):
        integrity._ns(text)

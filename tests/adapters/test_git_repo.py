"""Reading ranges from real git repositories built in the test."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.adapters import git_repo
from bot.adapters.git_repo import GitRepo, RepoError
from bot.core.config.schema import CONFIG_PATH
from bot.core.config.source import WORK_TREE, ConfigSource

PREAMBLE = "".join(f"import m{i}\n" for i in range(8))


def build_history(git_builder):
    base = git_builder.commit(
        "base",
        {
            "engine/pynccl.py": PREAMBLE + "class C:\n    def all_reduce(self, x):\n"
            "        a = 1\n        b = 2\n        c = 3\n"
            "        return x\n",
            "docs/a.md": "a\n",
            "logo.png": b"\x89PNG\x00\x01",
        },
    )
    git_builder.commit(
        "edit the allreduce",
        {
            "engine/pynccl.py": PREAMBLE + "class C:\n    def all_reduce(self, x):\n"
            "        a = 1\n        b = 2\n        c = 3\n"
            "        y = x.clone()\n        return y\n"
        },
    )
    git_builder.commit(
        "rename docs and swap the logo",
        {"docs/a.md": None, "docs/b.md": "a\n", "logo.png": b"\x89PNG\x00\x02"},
    )
    git_builder.commit("latin-1 bytes", {"engine/legacy.py": b"# caf\xe9\n"})
    return base


def read(git_builder, base, head="HEAD"):
    repo = GitRepo.open(git_builder.root)
    base_sha, head_sha, count = repo.count_range(base, head)
    commits = list(repo.range_patches(base_sha, head_sha))
    assert len(commits) == count
    return commits


def test_a_range_is_read_newest_first_with_patches(git_builder):
    base = build_history(git_builder)
    commits = read(git_builder, base)
    assert [c.subject for c in commits] == [
        "latin-1 bytes",
        "rename docs and swap the logo",
        "edit the allreduce",
    ]
    assert all(len(c.sha) == 40 and len(c.parents) == 1 for c in commits)
    assert "+        y = x.clone()" in commits[2].diff
    assert "rename from docs/a.md" in commits[1].diff and "Binary files" in commits[1].diff
    assert "caf\ufffd" in commits[0].diff


def test_hunk_headers_name_the_enclosing_python_method(git_builder):
    base = build_history(git_builder)
    edit = read(git_builder, base)[2]
    assert "@@ def all_reduce(self, x):\n" in edit.diff


def test_merge_commits_are_listed_with_both_parents(git_builder):
    base = git_builder.commit("base", {"a.py": "a\n"})
    git_builder.git("checkout", "-q", "-b", "side")
    git_builder.commit("side", {"b.py": "b\n"})
    git_builder.git("checkout", "-q", "main")
    git_builder.commit("main", {"c.py": "c\n"})
    git_builder.git("merge", "-q", "--no-edit", "side")
    commits = read(git_builder, base)
    assert len(commits) == 3 and len(commits[0].parents) == 2


def test_an_unknown_revision_is_a_one_line_error(git_builder):
    build_history(git_builder)
    repo = GitRepo.open(git_builder.root)
    with pytest.raises(RepoError, match="unknown revision 'nope'"):
        repo.count_range("nope", "HEAD")


def test_an_option_disguised_as_a_revision_is_refused(git_builder):
    build_history(git_builder)
    repo = GitRepo.open(git_builder.root)
    with pytest.raises(RepoError, match="not a revision"):
        repo.resolve("--output=/tmp/x")


def test_an_empty_range_is_an_error(git_builder):
    build_history(git_builder)
    repo = GitRepo.open(git_builder.root)
    with pytest.raises(RepoError, match="has no commits"):
        repo.count_range("HEAD", "HEAD~1")


def test_a_folder_that_is_not_a_repository_is_an_error(tmp_path):
    with pytest.raises(RepoError, match="not a git repository"):
        GitRepo.open(tmp_path)
    with pytest.raises(RepoError, match="no such directory"):
        GitRepo.open(tmp_path / "missing")


@pytest.mark.parametrize("text, expected", [("a..b", ("a", "b")), ("v1..", ("v1", "HEAD"))])
def test_ranges_are_split(text, expected):
    assert git_repo.split_range(text) == expected


@pytest.mark.parametrize("text", ["a", "a...b", "..b", "a..b..c"])
def test_malformed_ranges_are_refused(text):
    with pytest.raises(RepoError):
        git_repo.split_range(text)


def test_existing_paths_reports_what_the_commit_has(git_builder):
    build_history(git_builder)
    repo = GitRepo.open(git_builder.root)
    assert repo.existing_paths("HEAD", ["engine/", "vllm/", "docs/b.md"]) == ["engine/", "docs/b.md"]


def test_rev_list_gives_the_range_oldest_first_parents_before_children(git_builder):
    base = git_builder.commit("base", {"a.py": "a\n"})
    first = git_builder.commit("first", {"a.py": "b\n"})
    git_builder.git("checkout", "-q", "-b", "side")
    side = git_builder.commit("side", {"b.py": "b\n"})
    git_builder.git("checkout", "-q", "main")
    main = git_builder.commit("main", {"c.py": "c\n"})
    git_builder.git("merge", "-q", "--no-edit", "side")
    merge = git_builder.git("rev-parse", "HEAD")
    order = GitRepo.open(git_builder.root).rev_list(base, merge)
    assert order[0] == first and order[-1] == merge and set(order) == {first, side, main, merge}


def test_a_file_is_read_at_a_revision_or_from_the_work_tree(git_builder):
    old = git_builder.commit("old", {"conf.yml": "a: 1\r\n", "gone.txt": "x"})
    git_builder.commit("new", {"conf.yml": "a: 2\n", "gone.txt": None})
    (git_builder.root / "conf.yml").write_text("a: 3\n")
    repo = GitRepo.open(git_builder.root)
    assert repo.show(old, "conf.yml") == "a: 1\r\n"  # as committed, line ends and all
    assert repo.show("HEAD", "conf.yml") == "a: 2\n"
    assert repo.show("HEAD", "gone.txt") is None
    assert repo.read_file("conf.yml") == "a: 3\n"
    assert repo.read_file("gone.txt") is None and repo.is_dirty()


def test_the_config_is_read_where_its_source_says(git_builder):
    old = git_builder.commit("config", {CONFIG_PATH: "version: 1\n"})
    git_builder.commit("drop it", {CONFIG_PATH: None})
    (git_builder.root / CONFIG_PATH).parent.mkdir(parents=True, exist_ok=True)
    (git_builder.root / CONFIG_PATH).write_text("local\n")
    repo = GitRepo.open(git_builder.root)
    assert repo.config_text(WORK_TREE) == "local\n"
    assert repo.config_text(ConfigSource.at_revision(old)) == "version: 1\n"
    assert repo.config_text(ConfigSource.at_revision(repo.resolve("HEAD"))) is None
    with pytest.raises(ValueError, match="not in a local repository"):
        repo.config_text(ConfigSource.default_branch("main"))


def test_worktrees_are_added_detached_and_removed_again(git_builder, tmp_path):
    first = git_builder.commit("first", {"a.txt": "1\n"})
    git_builder.commit("second", {"a.txt": "2\n"})
    repo = GitRepo.open(git_builder.root)
    tree = tmp_path / "trees" / "first"
    repo.add_worktree(tree, first)
    assert (tree / "a.txt").read_text() == "1\n"
    assert len(git_builder.git("worktree", "list").splitlines()) == 2
    repo.remove_worktree(tree)
    repo.prune_worktrees()
    assert not tree.exists() and len(git_builder.git("worktree", "list").splitlines()) == 1


def test_a_worktree_git_cannot_remove_is_deleted_and_pruned(git_builder, tmp_path):
    first = git_builder.commit("first", {"a.txt": "1\n"})
    repo = GitRepo.open(git_builder.root)
    tree = tmp_path / "tree"
    repo.add_worktree(tree, first)
    (tree / ".git").unlink()  # no longer a worktree git knows how to remove
    repo.remove_worktree(tree)
    repo.prune_worktrees()
    assert not tree.exists() and len(git_builder.git("worktree", "list").splitlines()) == 1


def test_an_empty_repository_has_no_head_and_a_named_folder(git_builder):
    repo = GitRepo.open(git_builder.root)
    assert repo.head_sha() is None and repo.name == "repo" and repo.work_tree == git_builder.root


RECORD = (
    b"\x1e"
    + b"\x1f".join([b"a" * 40, b"b" * 40, b"Ann", b"2026-01-01T00:00:00+00:00", b"one"])
    + b"\n\ndiff --git a/x b/x\n+\x1eembedded separator in a line\n"
)


@given(st.lists(st.integers(1, 50), min_size=1, max_size=20))
def test_log_output_splits_the_same_whatever_the_chunking(cuts):
    raw = RECORD + RECORD.replace(b"one", b"two")
    chunks, at = [], 0
    for cut in cuts:
        chunks.append(raw[at : at + cut])
        at += cut
    chunks.append(raw[at:])
    commits = list(git_repo.parse_log(chunk for chunk in chunks if chunk))
    assert [c.subject for c in commits] == ["one", "two"]
    assert commits[0].diff.endswith("embedded separator in a line")

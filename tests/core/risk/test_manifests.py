"""Version moves read from dependency manifests: which package, from what, to what."""

from __future__ import annotations

import pytest

from bot.core.risk import diff as diffs
from bot.core.risk import manifests


def moves(
    path: str, removed: list[str], added: list[str], before: tuple[str, ...] = (), after: tuple[str, ...] = ()
) -> list[str]:
    lines = [
        f"diff --git a/{path} b/{path}",
        f"--- a/{path}",
        f"+++ b/{path}",
        f"@@ -10,{len(before) + len(removed) + len(after)} +10,{len(before) + len(added) + len(after)} @@",
        *(" " + line for line in before),
        *("-" + line for line in removed),
        *("+" + line for line in added),
        *(" " + line for line in after),
    ]
    change = diffs.parse("\n".join(lines) + "\n").files[0]
    return [move.describe() for move in manifests.version_changes(change)]


@pytest.mark.parametrize(
    ("path", "removed", "added", "expected"),
    [
        (
            "python/pyproject.toml",
            ['  "torch==2.8.0",', '  "flashinfer_python==0.2.5",'],
            ['  "torch==2.9.1",', '  "flashinfer-python==0.3.0",'],
            ["torch 2.8.0 -> 2.9.1", "flashinfer-python 0.2.5 -> 0.3.0"],
        ),
        (
            "requirements/cuda.txt",
            ["torch >= 2.5.1", "xformers==0.0.28; sys_platform == 'linux'"],
            ["torch >= 2.6.0", "xformers==0.0.29; sys_platform == 'linux'"],
            ["torch >=2.5.1 -> >=2.6.0", "xformers 0.0.28 -> 0.0.29"],
        ),
        (
            "docker/Dockerfile",
            ["ARG CUDA_VERSION=12.8.1", "FROM nvidia/cuda:12.8.1-devel-ubuntu22.04"],
            ["ARG CUDA_VERSION=12.9.1", "FROM nvidia/cuda:12.9.1-devel-ubuntu22.04"],
            ["cuda 12.8.1 -> 12.9.1", "nvidia/cuda 12.8.1-devel-ubuntu22.04 -> 12.9.1-devel-ubuntu22.04"],
        ),
        (
            "Dockerfile",
            ["RUN pip install x --index-url https://download.pytorch.org/whl/cu128"],
            ["RUN pip install x --index-url https://download.pytorch.org/whl/cu129"],
            ["cuda cu128 -> cu129"],
        ),
        (
            "CMakeLists.txt",
            ['set(CUTLASS_REVISION "v3.9.2" CACHE STRING "CUTLASS")'],
            ['set(CUTLASS_REVISION "v4.0.0" CACHE STRING "CUTLASS")'],
            ["cutlass v3.9.2 -> v4.0.0"],
        ),
        ("pyproject.toml", ['torch = "2.1.0"'], ['torch = "^2.2.0"'], ["torch 2.1.0 -> ^2.2.0"]),
    ],
)
def test_pins_in_the_forms_engines_write_them(path, removed, added, expected):
    assert moves(path, removed, added) == expected


def test_a_fetched_dependency_is_named_by_its_declaration():
    found = moves(
        "CMakeLists.txt",
        ["      GIT_TAG 9732b0ce005d1e6216864788502d5570004678f5"],
        ["      GIT_TAG d4e09037abf588af1ec47d0e966b237ee376876c"],
        before=(
            "  FetchContent_Declare(",
            "      vllm-flash-attn",
            "      GIT_REPOSITORY https://github.com/vllm-project/flash-attention.git",
        ),
        after=("  )",),
    )
    assert found == ["vllm-flash-attn 9732b0ce005d -> d4e09037abf5"]
    # Without the declaration in sight, the file names it.
    assert moves("cmake/external_projects/flashmla.cmake", ["  GIT_TAG aaa1"], ["  GIT_TAG bbb2"]) == [
        "flashmla aaa1 -> bbb2"
    ]


def test_added_removed_or_unchanged_pins_and_code_are_not_moves():
    assert moves("requirements.txt", ["torch==2.1"], ["torch==2.1", "triton==3.0"]) == []
    assert moves("requirements.txt", ["triton==3.0"], []) == []
    assert moves("setup.py", ["if sys.version_info >= (3, 8):"], ["if sys.version_info >= (3, 9):"]) == []


def test_hostile_manifest_lines_are_read_in_linear_time():
    long_name = "a" * 100_000  # a name that never reaches an operator
    removed = [long_name, "pad " * 20_000 + "torch==2.1", "x" + "[" * 50_000]
    added = [long_name, "pad " * 20_000 + "torch==2.2", "x" + "[" * 50_000]
    assert moves("requirements.txt", removed, added) == ["torch 2.1 -> 2.2"]


def test_a_declaration_opened_on_a_hunks_last_line_and_a_long_version():
    assert moves("CMakeLists.txt", ["GIT_TAG v1"], ["GIT_TAG v2"], after=("FetchContent_Declare(",)) == [
        "cmakelists v1 -> v2"
    ]
    long_old, long_new = "1." + "0" * 70, "2." + "0" * 70
    assert moves("requirements.txt", [f"torch=={long_old}"], [f"torch=={long_new}"]) == [
        f"torch {long_old[:60]} -> {long_new[:60]}"
    ]

"""A results artifact is untrusted: only top-level results and summary files are read, and every
read is capped (zip bombs, links, paths that climb out, lies in the archive's headers)."""

from __future__ import annotations

import io
import json
import tracemalloc
import zipfile

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.core.bench import artifact, judging
from tests.core.bench.zips import archive, bomb, lying_sizes


def test_top_level_results_and_summary_are_read():
    read = artifact.read(
        archive({"results.json": b"{}", "results.verify-step.json": b"[]", "summary.md": "# s"})
    )
    assert read.files == {"results.json": b"{}", "results.verify-step.json": b"[]", "summary.md": b"# s"}
    assert read.skipped == ()


@pytest.mark.parametrize(
    "name",
    [
        "../results.json",
        "/etc/results.json",
        "sub/results.json",
        "..\\results.json",
        "C:\\results.json",
        "results.exe",
        ".json",
        "a b.json",
    ],
)
def test_entries_outside_the_top_level_or_not_results_are_skipped_and_named(name):
    read = artifact.read(archive({name: b"{}", "results.json": b"{}"}))
    assert set(read.files) == {"results.json"}
    assert len(read.skipped) == 1


def test_links_and_folders_are_skipped():
    read = artifact.read(
        archive({"results.json": b"{}"}, links={"summary.md": "/etc/passwd"}, folders=("x",))
    )
    assert set(read.files) == {"results.json"}
    assert any("not a regular file" in line for line in read.skipped)
    assert any("a folder" in line for line in read.skipped)


def test_a_zip_bomb_stops_at_the_cap_and_says_so():
    data = bomb(40 * 2**20)
    assert len(data) < 200_000
    read = artifact.read(data, max_file=8 * 2**20)
    assert read.files == {}
    assert "larger than 8,388,608 bytes" in read.skipped[0]


def test_an_entry_that_claims_a_small_size_is_still_read_no_further_than_the_cap():
    read = artifact.read(lying_sizes("results.json", b"x" * 5000, claimed=10), max_file=1000)
    assert "results.json" not in read.files


def test_the_total_across_entries_is_capped():
    files = {f"results.s{i}.json": b"x" * 600 for i in range(5)}
    read = artifact.read(archive(files), max_file=1000, max_total=1500)
    assert len(read.files) == 2 and read.skipped


@pytest.mark.parametrize("data", [b"", b"not a zip", b"PK\x03\x04garbage"])
def test_anything_but_a_zip_is_one_clear_error(data):
    with pytest.raises(artifact.ArtifactError, match="not a readable zip archive"):
        artifact.read(data)


def test_too_many_entries_are_refused():
    with pytest.raises(artifact.ArtifactError, match="entries"):
        artifact.read(archive({f"f{i}.json": b"" for i in range(artifact.MAX_ENTRIES + 1)}))


def uploaded(files: dict[str, bytes], mode: int = 0o100644) -> bytes:
    """A zip as actions/upload-artifact writes it: every entry with its Unix file mode."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, content in files.items():
            info = zipfile.ZipInfo(name)
            info.external_attr = mode << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, content)
    return out.getvalue()


def test_regular_files_with_their_unix_mode_are_read_and_other_types_are_not():
    assert artifact.read(uploaded({"results.json": b"{}"})).files == {"results.json": b"{}"}
    fifo = artifact.read(uploaded({"results.json": b"{}"}, mode=0o010644))
    assert fifo.files == {} and fifo.skipped == ("results.json: not a regular file (a link or a device)",)


def test_each_file_is_capped_on_its_own_and_one_over_the_cap_leaves_the_others_read():
    files = {"results.a.json": b"x" * 1000, "results.b.json": b"y" * 1001, "summary.md": b"z" * 10}
    read = artifact.read(uploaded(files), max_file=1000)
    assert set(read.files) == {"results.a.json", "summary.md"}
    assert read.skipped == ("results.b.json: larger than 1,000 bytes uncompressed",)


def test_once_the_total_is_spent_the_remaining_entries_are_not_read():
    files = {f"results.s{i}.json": b"x" * 600 for i in range(4)}
    read = artifact.read(uploaded(files), max_file=1000, max_total=1300)
    assert list(read.files) == ["results.s0.json", "results.s1.json"]
    assert read.skipped == ("results.s2.json: larger than 100 bytes uncompressed",)


def test_exactly_the_most_entries_are_read_and_an_encrypted_entry_is_skipped():
    most = {f"f{i}.json": b"" for i in range(artifact.MAX_ENTRIES)}
    assert len(artifact.read(uploaded(most)).files) == artifact.MAX_ENTRIES
    data = bytearray(uploaded({"results.json": b"{}"}))
    central = data.index(b"PK\x01\x02")
    data[central + 8] |= 0x1  # the general-purpose flag of the central directory: encrypted
    assert artifact.read(bytes(data)).skipped == ("results.json: encrypted",)


def test_the_caps_are_the_documented_ones():
    assert (artifact.MAX_ENTRIES, artifact.MAX_FILE_BYTES, artifact.MAX_TOTAL_BYTES) == (
        64,
        32 * 2**20,
        64 * 2**20,
    )


def test_a_file_of_exactly_the_cap_is_read_whole():
    assert (
        artifact.read(uploaded({"results.json": b"y" * 1000}), max_file=1000).files["results.json"]
        == b"y" * 1000
    )


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("sub/results.json", "not at the top level of the artifact"),
        ("..\\results.json", "not at the top level of the artifact"),
        ("..results.json", "not at the top level of the artifact"),
        ("results.exe", "not a *.json or *.md file"),
    ],
)
def test_each_skipped_entry_says_why(name, why):
    assert artifact.read(uploaded({name: b"{}"})).skipped == (f"{name}: {why}",)


def test_a_long_entry_name_is_clipped_to_80_characters_in_what_was_skipped():
    name = "r" * 150 + ".exe"
    (line,) = artifact.read(uploaded({name: b"{}"})).skipped
    assert line.endswith(": not a *.json or *.md file") and len(line.split(":")[0]) == 80


def deflated(files: dict[str, str]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as made:
        for name, text in files.items():
            made.writestr(name, text)
    return buffer.getvalue()


def peak_mib(work) -> float:
    """The most memory Python allocated while ``work`` ran (tracemalloc), in MiB."""
    tracemalloc.start()
    try:
        work()
        return tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize(
    "text",
    [
        '{"schema": "perfbot.results/1", "rounds": [' + "{}," * 10_000_000 + "{}]}",
        '{"schema": "perfbot.results/1", "rounds": [' + '{"a":0},' * 3_000_000 + "{}]}",
        # within the value cap: the most a parse may cost
        '{"schema": "perfbot.results/1", "suite": "x", "base": {"sha": "a"}, "rounds": ['
        + '{"a":0},' * 300_000
        + "{}]}",
    ],
    ids=["10M empty objects", "3M small objects", "just under the cap"],
)
def test_a_small_artifact_within_the_byte_caps_costs_its_reader_bounded_memory(text):
    """Issue 35: a 60 KB artifact within the caps (30 MB of tiny JSON values) cost a consumer about
    0.9 GB to read and judge (785 MB for one parse; the step maps parse it again). Failed before."""
    data = deflated({"results.json": text})
    assert len(data) < 64_000 and len(text) < artifact.MAX_FILE_BYTES

    def consume() -> None:
        judging.judge(artifact.read(data), "a" * 40, "b" * 40, ["x"])

    assert peak_mib(consume) < 150


json_values_strategy = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=5), children, max_size=5)
    ),
    max_leaves=40,
)


def count_values(value) -> int:
    """Values, keys and containers, as parsing makes them."""
    if isinstance(value, list):
        return 1 + sum(count_values(v) for v in value)
    if isinstance(value, dict):
        return 1 + sum(1 + count_values(v) for v in value.values())
    return 1


@given(value=json_values_strategy, compact=st.booleans())
def test_the_count_before_parsing_is_never_below_what_parsing_makes(value, compact):
    text = json.dumps(value, separators=(",", ":") if compact else None).encode()
    assert artifact.json_values(text) >= count_values(value)


def test_a_json_file_over_the_value_cap_is_skipped_and_named_and_the_others_read(monkeypatch):
    monkeypatch.setattr(artifact, "MAX_JSON_VALUES", 10)
    read = artifact.read(archive({"results.json": b"[" + b"0," * 10 + b"0]", "summary.md": b"a,b,c," * 9}))
    assert read.files == {"summary.md": b"a,b,c," * 9}
    assert read.skipped == ("results.json: holds over 10 JSON values",)

"""The diff reader: real git diff shapes, damaged input, and properties over generated diffs."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from unidiff import PatchSet

from bot.core.risk import diff as diffs

SIMPLE = """\
diff --git a/engine/pynccl.py b/engine/pynccl.py
index 1111111..2222222 100644
--- a/engine/pynccl.py
+++ b/engine/pynccl.py
@@ -10,3 +10,4 @@ class PyNcclCommunicator:
     def all_reduce(self, tensor):
-        out = tensor
+        out = tensor.clone()
+        torch.cuda.synchronize()
         return out
"""


def only_file(text):
    parsed = diffs.parse(text)
    assert len(parsed.files) == 1, parsed
    return parsed.files[0]


def test_a_plain_git_diff_gives_paths_counts_types_and_line_numbers():
    change = only_file(SIMPLE)
    assert (change.path, change.status, change.added, change.removed) == (
        "engine/pynccl.py",
        "modified",
        2,
        1,
    )
    hunk = change.hunks[0]
    assert hunk.section == "class PyNcclCommunicator:"
    assert hunk.types == " -++ "
    assert [hunk.line_number(i) for i in range(5)] == [10, 11, 11, 12, 13]
    assert hunk.texts[2] == "        out = tensor.clone()\n"


def test_a_binary_change_is_a_file_with_no_hunks():
    change = only_file(
        "diff --git a/w.bin b/w.bin\nindex 1..2 100644\nBinary files a/w.bin and b/w.bin differ\n"
    )
    assert change.is_binary and change.hunks == [] and change.path == "w.bin"


def test_a_git_binary_patch_is_read_without_its_payload():
    text = (
        "diff --git a/w.bin b/w.bin\nindex 1..2 100644\nGIT binary patch\nliteral 5\n"
        "McmZ?wbaTFX\n\nliteral 0\nHcmV?d00001\n\n"
    )
    change = only_file(text)
    assert change.is_binary and change.added == change.removed == 0


def test_a_pure_rename_keeps_both_paths():
    change = only_file(
        "diff --git a/old.py b/new.py\nsimilarity index 100%\nrename from old.py\nrename to new.py\n"
    )
    assert (change.status, change.old_path, change.path) == ("renamed", "old.py", "new.py")


def test_a_copy_is_reported_as_a_copy():
    change = only_file(
        "diff --git a/a.py b/c.py\nsimilarity index 90%\ncopy from a.py\ncopy to c.py\n"
        "--- a/a.py\n+++ b/c.py\n@@ -1 +1 @@\n-x\n+y\n"
    )
    assert (change.status, change.old_path, change.path) == ("copied", "a.py", "c.py")


def test_a_mode_only_change_has_no_lines():
    change = only_file("diff --git a/run.sh b/run.sh\nold mode 100644\nnew mode 100755\n")
    assert (change.path, change.added, change.removed, change.hunks) == ("run.sh", 0, 0, [])


def test_no_newline_markers_take_no_line_number():
    text = (
        "diff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n@@ -1,2 +1,2 @@\n a\n-b\n"
        "\\ No newline at end of file\n+c\n\\ No newline at end of file\n"
    )
    hunk = only_file(text).hunks[0]
    assert hunk.types == " -\\+\\"
    assert hunk.line_number(3) == 2 and hunk.line_number(1) == 2


def test_crlf_line_ends_read_like_lf():
    crlf = only_file(SIMPLE.replace("\n", "\r\n"))
    assert crlf.path == "engine/pynccl.py" and crlf.status == "modified"
    assert crlf.hunks[0].types == only_file(SIMPLE).hunks[0].types


def test_non_utf8_bytes_are_replaced_not_fatal():
    data = SIMPLE.encode().replace(b"out = tensor\n", b"out = t\xff\xfe\n")
    change = only_file(data)
    assert "\ufffd" in change.hunks[0].texts[1]


def test_an_empty_diff_has_no_files_and_no_warning():
    assert diffs.parse("") == diffs.ParsedDiff([], [])
    assert diffs.parse(b"\n\n").files == []


def test_text_that_is_not_a_diff_says_so():
    parsed = diffs.parse("hello\nworld\n")
    assert parsed.files == [] and "no file changes" in parsed.warnings[0]


def test_a_truncated_last_hunk_is_read_leniently_with_a_warning():
    truncated = SIMPLE.rsplit("\n", 3)[0] + "\n"  # the last two lines of the hunk are gone
    parsed = diffs.parse(truncated)
    change = parsed.files[0]
    assert change.damaged and "Hunk is shorter than expected" in change.damaged
    assert change.added == 1 and change.removed == 1
    assert change.hunks[0].texts[-1] == "        out = tensor.clone()\n"
    assert "engine/pynccl.py" in parsed.warnings[0]


def test_one_damaged_file_does_not_cost_the_others():
    damaged = "diff --git a/b.py b/b.py\n--- a/b.py\n+++ b/b.py\n@@ -1,9 +1,9 @@\n-x\n"
    parsed = diffs.parse(damaged + SIMPLE)
    assert [f.path for f in parsed.files] == ["b.py", "engine/pynccl.py"]
    assert parsed.files[0].damaged and parsed.files[1].damaged is None


def test_a_plain_diff_without_git_headers_is_read():
    text = "--- a/x.py\t2024-01-01\n+++ b/x.py\t2024-01-02\n@@ -1 +1 @@\n-a\n+b\n"
    change = only_file(text)
    assert (change.path, change.added, change.removed) == ("x.py", 1, 1)


def test_trailing_text_after_the_last_hunk_is_not_part_of_it():
    change = only_file(SIMPLE + "-- \n2.39.5\n")  # a format-patch signature
    assert change.hunks[0].types == " -++ "


# --- properties ------------------------------------------------------------------------------

_line = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\n\r"), max_size=40)


@st.composite
def hunks(draw):
    """A well-formed hunk body: (types, texts)."""
    kinds = draw(st.lists(st.sampled_from(" +-"), min_size=1, max_size=25))
    return [(k, draw(_line)) for k in kinds]


@st.composite
def git_diffs(draw):
    files = []
    for number in range(draw(st.integers(1, 4))):
        path = f"{draw(st.sampled_from(['src', 'engine/dist', 'docs']))}/f{number}.py"
        body, source_start, target_start = [], 1, 1
        expected = []
        for hunk in draw(st.lists(hunks(), min_size=1, max_size=3)):
            src = sum(k in " -" for k, _ in hunk)
            tgt = sum(k in " +" for k, _ in hunk)
            body.append(f"@@ -{source_start},{src} +{target_start},{tgt} @@ def f{number}():")
            body += [k + text for k, text in hunk]
            expected.append((source_start, target_start, "".join(k for k, _ in hunk)))
            source_start += src + 5
            target_start += tgt + 5
        files.append(
            (
                path,
                [
                    f"diff --git a/{path} b/{path}",
                    "index 1..2 100644",
                    f"--- a/{path}",
                    f"+++ b/{path}",
                    *body,
                ],
                expected,
            )
        )
    return files


@given(git_diffs())
@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
def test_well_formed_diffs_are_read_exactly(files):
    text = "\n".join(line for _, lines, _ in files for line in lines) + "\n"
    parsed = diffs.parse(text)
    assert parsed.warnings == []
    assert [f.path for f in parsed.files] == [path for path, _, _ in files]
    for change, (_, _, expected) in zip(parsed.files, files, strict=True):
        assert [(h.source_start, h.target_start, h.types) for h in change.hunks] == expected
        assert change.added == sum(t.count("+") for _, _, t in expected)


@given(git_diffs())
@settings(max_examples=100, suppress_health_check=[HealthCheck.too_slow])
def test_the_quick_reader_agrees_with_unidiffs_full_parse(files):
    text = "\n".join(line for _, lines, _ in files for line in lines) + "\n"
    for section in diffs.split_sections(text):
        quick = diffs._quick(section)
        full = diffs._from_unidiff(PatchSet(section))
        assert quick is not None
        assert [
            (f.path, f.added, f.removed, [(h.texts, h.types, h.section) for h in f.hunks]) for f in quick
        ] == [(f.path, f.added, f.removed, [(h.texts, h.types, h.section) for h in f.hunks]) for f in full]


@given(st.binary(max_size=400) | st.text(max_size=400))
@settings(max_examples=300)
def test_any_input_reads_without_raising(data):
    parsed = diffs.parse(data)
    for change in parsed.files:
        for hunk in change.hunks:
            assert len(hunk.types) == len(hunk.texts)
            for index in range(len(hunk.types)):
                hunk.line_number(index)


@given(git_diffs(), st.integers(1, 200))
@settings(max_examples=100, suppress_health_check=[HealthCheck.too_slow])
def test_any_truncation_of_a_diff_reads_without_raising(files, keep):
    text = "\n".join(line for _, lines, _ in files for line in lines) + "\n"
    parsed = diffs.parse(text[: max(1, len(text) * keep // 200)])
    assert all(change.path for change in parsed.files)

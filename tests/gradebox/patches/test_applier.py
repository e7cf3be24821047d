"""The in-memory applier and the trees it writes: the path vetted is the path written.

The hostile corpus (``tests/cases/hostile_patches.jsonl``) holds headers that
``git apply`` and GNU ``patch`` read differently from each other: C-quoted and
octal-escaped names, names in junk lines (``Index:``, ``***``), names without a
slash, disagreeing header lines, renames and copies into ``.git``, links into
and out of the tree. For each, either the parser refuses it, or the tree
written to disk differs from base in exactly the paths the parser vetted, and
nothing is written outside the destination.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from gradebox.patches.applier import ApplyFailed, apply_patch
from gradebox.patches.diff import PatchRefused, parse_patch
from gradebox.patches.tree import (
    Entry,
    PathRefused,
    check_path,
    escaping_links,
    materialize,
    read_tree_from_disk,
)

CASES = Path(__file__).parents[2] / "cases" / "hostile_patches.jsonl"
BASE = {
    "calc/ops.py": Entry("100644", b"a = 1\nb = 2\nc = 3\nd = 4\ne = 5\nf = 6\ng = 7\n"),
    "calc/__init__.py": Entry("100644", b""),
    "tests/test_ops.py": Entry("100644", b"def test_a():\n    assert True\n"),
    "README": Entry("100644", b"hello\n"),
}


def corpus() -> list[dict[str, str]]:
    return [json.loads(ln) for ln in CASES.read_text().splitlines() if ln.strip()]


@pytest.mark.parametrize("case", corpus(), ids=lambda c: c["id"])
def test_the_paths_written_are_the_paths_vetted(case, tmp_path):
    try:
        parsed = parse_patch(case["patch"])
        after = apply_patch(BASE, parsed).tree
    except (PatchRefused, ApplyFailed) as exc:
        assert case["expect"] == "refused", f"refused unexpectedly: {exc}"
        return
    assert case["expect"] == "applied", f"applied: {sorted(parsed.paths)}"
    vetted = set(parsed.paths)
    for p in vetted:
        assert check_path(p) == p
    outside = tmp_path / "outside"
    dest = outside / "tree"
    dest.mkdir(parents=True)
    materialize(after, dest)
    assert sorted(os.listdir(outside)) == ["tree"]  # nothing next to it
    written = read_tree_from_disk(dest)
    assert written == after
    changed = {p for p in set(BASE) | set(written) if BASE.get(p) != written.get(p)}
    assert changed <= vetted, changed - vetted
    assert not any(part.lower() == ".git" for p in written for part in p.split("/"))
    assert case.get("paths") is None or sorted(changed) == sorted(case["paths"])


def test_the_ladder_exact_offset_fuzz_and_failure():
    fix = "--- a/calc/ops.py\n+++ b/calc/ops.py\n@@ -3,3 +3,3 @@\n c = 3\n-d = 4\n+d = 40\n e = 5\n"
    assert apply_patch(BASE, parse_patch(fix)).strategy == "exact"
    moved = apply_patch(BASE, parse_patch(fix.replace("@@ -3,3 +3,3 @@", "@@ -1,3 +1,3 @@")))
    assert moved.strategy == "offset" and moved.tree["calc/ops.py"].data.count(b"d = 40") == 1
    fuzzy = apply_patch(BASE, parse_patch(fix.replace(" c = 3", " c = 333")))
    assert fuzzy.strategy == "fuzz" and b"d = 40\n" in fuzzy.tree["calc/ops.py"].data
    with pytest.raises(ApplyFailed, match="does not match"):
        apply_patch(BASE, parse_patch(fix.replace("-d = 4", "-d = 99")))


def test_three_way_uses_the_preimage_blob_and_refuses_conflicts():
    later = Entry("100644", BASE["calc/ops.py"].data.replace(b"c = 3\n", b"c = 3  # later\n"))
    patch = (
        "diff --git a/calc/ops.py b/calc/ops.py\nindex abc1234..def5678 100644\n"
        "--- a/calc/ops.py\n+++ b/calc/ops.py\n@@ -2,5 +2,5 @@\n b = 2\n c = 3  # later\n"
        " d = 4\n-e = 5\n+e = 50\n f = 6\n"
    )
    blobs = {"abc1234": later.data}
    got = apply_patch(BASE, parse_patch(patch), blob=blobs.get)
    assert got.strategy in ("3way", "fuzz")
    assert got.tree["calc/ops.py"].data == BASE["calc/ops.py"].data.replace(b"e = 5", b"e = 50")
    clash = (
        "diff --git a/calc/ops.py b/calc/ops.py\nindex abc1234..def5678 100644\n"
        "--- a/calc/ops.py\n+++ b/calc/ops.py\n@@ -2,3 +2,3 @@\n b = 2\n-c = 3  # later\n"
        "+c = 30  # later\n d = 4\n"
    )
    with pytest.raises(ApplyFailed, match="does not match"):
        apply_patch(BASE, parse_patch(clash), blob=blobs.get)


def test_links_are_resolved_in_the_tree_not_on_disk(tmp_path):
    tree = {
        "a/l1": Entry("120000", b"../b/l2"),
        "b/l2": Entry("120000", b"../../outside"),
        "c/ok": Entry("120000", b"../calc/ops.py"),
        "loop": Entry("120000", b"loop"),
    }
    assert escaping_links(tree) == ["a/l1", "b/l2", "loop"]
    with pytest.raises(PathRefused, match="below the file"):
        materialize({"x": Entry("120000", b"/etc"), "x/passwd": Entry("100644", b"")}, tmp_path)
    assert not (tmp_path / "x").exists() or (tmp_path / "x").is_symlink()


def test_a_path_below_a_link_or_file_is_refused():
    patch = (
        "diff --git a/README/x.py b/README/x.py\nnew file mode 100644\n--- /dev/null\n"
        "+++ b/README/x.py\n@@ -0,0 +1 @@\n+x = 1\n"
    )
    with pytest.raises(ApplyFailed, match="below the file"):
        apply_patch(BASE, parse_patch(patch))


def test_the_diff_of_two_trees_applies_back_modes_included():
    from gradebox.patches.changes import tree_changes

    before = {**BASE, "run.sh": Entry("100755", b"echo\n"), "empty": Entry("100644", b"")}
    after = {
        **{k: v for k, v in BASE.items() if k != "README"},
        "calc/ops.py": Entry("100644", b"a = 1\nb = 20\n"),
        "tool.sh": Entry("100755", b"#!/bin/sh\n"),
        "link": Entry("120000", b"calc/ops.py"),
        "run.sh": Entry("100644", b"echo\n"),
    }
    text = "".join(c.text for c in tree_changes(before, after))
    assert "new file mode 100755" in text and "deleted file mode 100644" in text
    assert apply_patch(before, parse_patch(text)).tree == after

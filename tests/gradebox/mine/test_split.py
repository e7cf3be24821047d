"""Splitting a commit: the gold patch and the test patch read back to the very same trees."""

from __future__ import annotations

import pytest

from gradebox.mine.model import Dropped
from gradebox.mine.split import (
    NOOP_LINE,
    Split,
    noop_patch,
    patch_text,
    prefilter,
    reverse_patch,
    split_commit,
)
from gradebox.patches.applier import apply_patch
from gradebox.patches.changes import tree_changes
from gradebox.patches.diff import parse_patch
from gradebox.patches.protect import DEFAULT_PROTECT, protection
from gradebox.patches.tree import Entry


def e(text: str | bytes, mode: str = "100644") -> Entry:
    return Entry(mode, text.encode() if isinstance(text, str) else text)  # type: ignore[arg-type]


BEFORE = {
    "calc/ops.py": e("def f():\n    return 1\n"),
    "calc/old.py": e("gone = True\n"),
    "calc/empty.py": e(""),
    "tests/test_ops.py": e("def test_f():\n    assert True\n"),
    "tests/helper.txt": e("x\n"),
    "tox.ini": e("[pytest]\n"),
    "pyproject.toml": e('[project]\nname = "calc"\n'),
    "README.md": e("hi\n"),
}


def split(after: dict[str, Entry], before: dict[str, Entry] | None = None, **kw: int) -> Split:
    got = split_commit(before or BEFORE, after, max_lines=kw.get("max_lines", 500),
                       max_files=kw.get("max_files", 20))  # fmt: skip
    assert isinstance(got, Split), got
    return got


def test_the_parts_read_back_to_the_commit_new_deleted_empty_executable_and_links():
    after = dict(BEFORE)
    after["calc/ops.py"] = e("def f():\n    return 2\n")
    after["calc/run.sh"] = e("#!/bin/sh\necho\n", "100755")
    after["calc/link.py"] = e("ops.py", "120000")
    after["calc/new_empty.py"] = e("")
    del after["calc/old.py"], after["calc/empty.py"]
    after["README.md"] = e("hi\nthere")  # no newline at the end
    after["tests/test_ops.py"] = e("def test_f():\n    assert True\n\n\ndef test_g():\n    pass\n")
    after["tests/test_new.py"] = e("def test_h():\n    pass\n")
    after["tox.ini"] = e("[pytest]\naddopts = -q\n")
    s = split(after)
    assert set(s.test_paths) == {"tests/test_ops.py", "tests/test_new.py", "tox.ini"}
    assert "calc/run.sh" in s.source_paths and "calc/old.py" in s.source_paths
    gold = apply_patch(BEFORE, parse_patch(s.patch)).tree
    assert apply_patch(gold, parse_patch(s.test_patch)).tree == after
    assert gold["calc/run.sh"].mode == "100755" and "calc/empty.py" not in gold
    assert s.base_tree == apply_patch(BEFORE, parse_patch(s.test_patch)).tree
    assert "new file mode 100755" in s.patch and "deleted file mode 100644" in s.patch


def test_the_gold_patch_never_touches_what_the_gate_protects():
    after = {**BEFORE, "calc/ops.py": e("x = 2\n"), "tests/test_ops.py": e("def test_f(): 1\n"),
             ".github/ci.yml": e("on: push\n"), "setup.cfg": e("[tool:pytest]\n")}  # fmt: skip
    s = split(after)
    gold = apply_patch(BEFORE, parse_patch(s.patch)).tree
    changes = tree_changes(BEFORE, gold)
    prot = protection(changes, BEFORE, gold, DEFAULT_PROTECT)
    assert prot.touched == () and prot.added_tests == ()
    assert {".github/ci.yml", "setup.cfg"} <= set(s.test_paths)


def test_pyproject_goes_with_the_tests_only_when_its_pytest_table_changes():
    tests = e("def test_f():\n    assert 1\n")
    plain = split({**BEFORE, "calc/ops.py": e("x = 1\n"), "tests/test_ops.py": tests,
                   "pyproject.toml": e('[project]\nname = "calc2"\n')})  # fmt: skip
    assert "pyproject.toml" in plain.source_paths
    table = '[project]\nname = "calc"\n[tool.pytest.ini_options]\naddopts = "-q"\n'
    pytest_table = split({**BEFORE, "calc/ops.py": e("x = 1\n"), "tests/test_ops.py": tests,
                          "pyproject.toml": e(table)})  # fmt: skip
    assert "pyproject.toml" in pytest_table.test_paths


def test_the_head_tree_holds_root_ini_files_as_at_base_unless_the_test_patch_changes_them():
    after = {**BEFORE, "calc/ops.py": e("x = 1\n"), "tests/test_ops.py": e("def test_f(): 1\n"),
             "pyproject.toml": e('[project]\nname = "renamed"\n')}  # fmt: skip
    s = split(after)
    assert s.head_tree["pyproject.toml"] == BEFORE["pyproject.toml"]  # as the gate decides
    assert s.head_tree["calc/ops.py"] == after["calc/ops.py"]


@pytest.mark.parametrize(
    ("after", "reason"),
    [
        ({**BEFORE, "calc/ops.py": e("x = 1\n")}, "no_tests"),
        ({**BEFORE, "tests/test_ops.py": e("def test_f(): 1\n")}, "no_source"),
        ({**BEFORE, "README.md": e("x\n"), "tests/test_ops.py": e("def test_f(): 1\n")},
         "no_source"),
        ({**BEFORE, "calc/ops.py": e("x = 1\n"), ".github/ci.yml": e("x\n")}, "no_tests"),
        ({**BEFORE, "calc/ops.py": e("\n".join(map(str, range(600)))),
          "tests/test_ops.py": e("def test_f(): 1\n")}, "too_big"),
        ({**BEFORE, "calc/ops.py": e("x = 1\n"), "calc/logo.png": e(b"\x89PNG\0\1"),
          "tests/test_ops.py": e("def test_f(): 1\n")}, "does_not_apply"),
        ({**BEFORE, "calc/ops.py": e(b"x = '\xe9'\n"),
          "tests/test_ops.py": e("def test_f(): 1\n")}, "does_not_apply"),
    ],
    ids=["no-tests", "no-source", "docs-only-source", "ci-is-not-a-test", "too-big", "binary",
         "not-utf8"],
)  # fmt: skip
def test_why_a_commit_is_not_split(after: dict[str, Entry], reason: str) -> None:
    got = split_commit(BEFORE, after, max_lines=500, max_files=20)
    assert isinstance(got, Dropped) and got.reason == reason, got


def test_too_many_files_is_too_big():
    after = {**BEFORE, **{f"calc/m{i}.py": e("x = 1\n") for i in range(3)},
             "tests/test_ops.py": e("def test_f(): 1\n")}  # fmt: skip
    got = split_commit(BEFORE, after, max_lines=500, max_files=2)
    assert isinstance(got, Dropped) and got.reason == "too_big"


def test_a_lone_carriage_return_cannot_be_carried_and_is_dropped_not_guessed():
    before = {**BEFORE, "calc/mac.py": e(b"a = 1\rb = 2\r")}
    after = {
        **before,
        "calc/mac.py": e(b"a = 1\rb = 3\r"),
        "tests/test_ops.py": e("def test(): 1\n"),
    }
    got = split_commit(before, after, max_lines=500, max_files=20)
    if isinstance(got, Dropped):
        assert got.reason == "does_not_apply"
    else:  # if it is carried, it is carried exactly
        assert (
            apply_patch(before, parse_patch(got.patch)).tree["calc/mac.py"] == after["calc/mac.py"]
        )


def test_prefilter_reads_paths_only():
    assert prefilter(["README.md", "calc/ops.py"]) == "no_tests"
    assert prefilter(["tests/test_ops.py", "docs/x.rst"]) == "no_source"
    assert prefilter(["tests/test_ops.py", "calc/ops.py"]) is None
    assert prefilter(["calc/conftest.py", "calc/ops.py"]) is None


def test_noop_and_reverse_patches():
    after = {**BEFORE, "calc/ops.py": e("def f():\n    return 2\n"), "calc/added.py": e("y = 1\n"),
             "tests/test_ops.py": e("def test_f():\n    assert 2\n")}  # fmt: skip
    s = split(after)
    noop = apply_patch(BEFORE, parse_patch(noop_patch(BEFORE, s))).tree
    assert noop["calc/ops.py"].data == BEFORE["calc/ops.py"].data + NOOP_LINE
    back = apply_patch(after, parse_patch(reverse_patch(BEFORE, after, s))).tree
    assert back == s.base_tree  # the commit without its fix: base with the tests
    only_new = split({**BEFORE, "calc/added.py": e("y = 1\n"),
                      "tests/test_ops.py": e("def test_f():\n    assert 2\n")})  # fmt: skip
    assert noop_patch(BEFORE, only_new) == ""  # nothing to append to: the empty patch


def test_patch_text_of_identical_trees_is_empty():
    assert patch_text(BEFORE, dict(BEFORE)) == ""

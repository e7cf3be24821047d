"""Parsing and vetting a patch, protected paths, the tamper scan: no sandbox needed."""

from __future__ import annotations

import pytest

from gradebox.patches.applier import LinkRefused, apply_patch
from gradebox.patches.changes import tree_changes
from gradebox.patches.diff import PatchRefused, parse_patch, without
from gradebox.patches.protect import DEFAULT_PROTECT, glob_matches, protection
from gradebox.patches.tamper import scan
from gradebox.patches.tree import Entry


def tree(**files: str) -> dict[str, Entry]:
    return {k.replace("__", "/"): Entry("100644", v.encode()) for k, v in files.items()}


PATCH = (
    "diff --git a/pkg/mod.py b/pkg/mod.py\n--- a/pkg/mod.py\n+++ b/pkg/mod.py\n"
    "@@ -1,3 +1,4 @@\n a = 1\n-b = 2\n+b = 3\n+c = 4\n d = 5\n"
    "diff --git a/tests/conftest.py b/tests/conftest.py\nnew file mode 100644\n"
    "--- /dev/null\n+++ b/tests/conftest.py\n@@ -0,0 +1 @@\n+import pytest\n"
)


def test_files_and_line_sets_come_from_the_trees():
    parsed = parse_patch(PATCH)
    assert parsed.paths == ("pkg/mod.py", "tests/conftest.py")
    before = tree(pkg__mod_py="a = 1\nb = 2\nd = 5\n")
    before = {k.replace("_py", ".py"): v for k, v in before.items()}
    after = apply_patch(before, parsed).tree
    mod, conf = tree_changes(before, after)
    assert (mod.path, mod.kind, mod.added, mod.removed) == ("pkg/mod.py", "modified", 2, 1)
    assert mod.added_lines == {2, 3} and mod.hunk_lines == {1, 2, 3, 4}
    assert mod.removed_lines == {2}
    assert (conf.path, conf.kind, conf.old_path) == ("tests/conftest.py", "added", None)
    assert without(parsed, {"tests/conftest.py"}).paths == ("pkg/mod.py",)


@pytest.mark.parametrize(
    ("patch", "why"),
    [
        ("--- a/../x.py\n+++ b/../x.py\n@@ -1 +1 @@\n-a\n+b\n", "outside the repository"),
        ("--- /etc/passwd\n+++ /etc/passwd\n@@ -1 +1 @@\n-a\n+b\n", "outside the repository"),
        ("--- a/.git/config\n+++ b/.git/config\n@@ -1 +1 @@\n-a\n+b\n", "git's own files"),
        (
            "diff --git a/l b/l\nnew file mode 120000\n--- /dev/null\n+++ b/l\n@@ -0,0 +1 @@\n"
            "+/etc\n",
            "symbolic link",
        ),
        (
            "diff --git a/x.bin b/x.bin\nindex 1..2 100644\n"
            "Binary files a/x.bin and b/x.bin differ\n",
            "binary",
        ),
        ("this is not a diff at all\n", "does not parse"),
    ],
    ids=["dotdot", "absolute", "dot-git", "symlink-out", "binary", "garbage"],
)
def test_refusals(patch, why):
    with pytest.raises(PatchRefused, match=why):
        parse_patch(patch)


def test_a_link_inside_the_repository_is_fine_and_one_leaving_it_is_refused():
    patch = (
        "diff --git a/a/l b/a/l\nnew file mode 120000\n--- /dev/null\n+++ b/a/l\n"
        "@@ -0,0 +1 @@\n+../b\n\\ No newline at end of file\n"
    )
    assert apply_patch({}, parse_patch(patch)).tree["a/l"] == Entry("120000", b"../b")
    with pytest.raises(LinkRefused, match="symbolic link"):
        apply_patch({}, parse_patch(patch.replace("+../b", "+../../etc")))


@pytest.mark.parametrize(
    ("path", "protected"),
    [
        ("tests/test_x.py", True), ("conftest.py", True), ("src/pkg/conftest.py", True),
        ("pkg/tests/data.json", True), ("pytest.ini", True), ("tox.ini", True),
        ("setup.cfg", True), (".github/workflows/ci.yml", True), ("pkg/test_util.py", True),
        ("pkg/mod.py", False), ("docs/testing.md", False), ("pkg/contest.py", False),
        ("latest/x.py", False),
    ],
)  # fmt: skip
def test_default_protected_globs(path, protected):
    assert any(glob_matches(p, path) for p in DEFAULT_PROTECT if "#" not in p) is protected


PYPROJECT = '[project]\nname = "x"\nversion = "1"\n\n[tool.pytest.ini_options]\naddopts = "-q"\n'


def test_only_the_pytest_table_of_pyproject_is_protected_dotted_keys_included():
    before = {"pyproject.toml": Entry("100644", PYPROJECT.encode())}

    def touched(text: str) -> tuple[str, ...]:
        after = {"pyproject.toml": Entry("100644", text.encode())}
        return protection(tree_changes(before, after), before, after, DEFAULT_PROTECT).touched

    assert touched(PYPROJECT.replace('version = "1"', 'version = "2"')) == ()
    assert touched(PYPROJECT.replace('"-q"', '"-p evil"')) == ("pyproject.toml",)
    dotted = PYPROJECT.replace("[project]", 'tool.pytest.ini_options.minversion = "1"\n[project]')
    assert touched(dotted) == ("pyproject.toml",)
    assert touched(PYPROJECT + "[tool]\npytest.x = 1\n") in ((), ("pyproject.toml",))


TAMPER = """import sys
import os


def f(x):
    sys.modules["calc"] = None
    return x


def g():
    import pytest
    os._exit(0)
    return getattr(os, name)
"""


def test_tamper_scan_reports_only_added_lines():
    hits = scan("pkg/m.py", TAMPER, frozenset({6, 11, 12, 13}))
    assert [(h.line, h.rule) for h in hits] == [
        (6, "T002"),
        (11, "T001"),
        (12, "T004"),
        (13, "T006"),
    ]
    assert scan("pkg/m.py", TAMPER, frozenset({1, 2, 7})) == []
    assert scan("pkg/m.py", "def broken(:\n", frozenset({1})) == []


def test_readonly_paths_cover_whole_test_dirs_and_config_files(tmp_path):
    from gradebox.patches.protect import readonly_paths

    for rel in ("tests/a/test_x.py", "pkg/tests/data.txt", "pkg/mod.py", "conftest.py",
                "pyproject.toml", "sitecustomize.py", "pkg/test_util.py"):  # fmt: skip
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x")
    assert readonly_paths(str(tmp_path), DEFAULT_PROTECT) == [
        "conftest.py", "pkg/test_util.py", "pkg/tests", "pyproject.toml", "sitecustomize.py",
        "tests",
    ]  # fmt: skip


def test_a_module_shadowing_the_standard_library_is_a_tamper_risk():
    from gradebox.patches.tamper import shadows

    assert shadows("json").rule == "T007"
    assert shadows("re").what == "shadows the standard library module re"
    assert shadows("calc") is None and shadows("jsonx") is None


def test_tamper_scan_sees_exit_hooks_argv_namespaces_and_literal_getattr():
    code = (
        "import os, sys, weakref\n"
        "weakref.finalize(object(), print)\n"
        "path = sys.argv[1]\n"
        "vars(os)\n"
        "os.__dict__\n"
        "getattr(os, '_exit')\n"
        "getattr(os, 'path')\n"
        "import ctypes\n"
        "type(path).__dict__\n"
        "sys.modules['x'].__dict__\n"
        "import json as j\n"
        "j.__dict__\n"
    )
    hits = scan("pkg/m.py", code, frozenset(range(1, 13)))
    assert [(h.line, h.rule) for h in hits] == [
        (2, "T004"), (3, "T002"), (4, "T006"), (5, "T006"), (6, "T004"), (8, "T004"),
        (9, "T006"), (10, "T002"), (10, "T006"), (12, "T006"),
    ]  # fmt: skip


def test_an_objects_own_dict_in_a_descriptor_is_not_a_tamper_risk():
    """cachetools 86352ae, as functools.cached_property does: the object's own state."""
    code = (
        "class cachedmethod:\n"
        "    def __get__(self, obj, objtype=None):\n"
        "        wrapper = self._wrap(obj)\n"
        "        try:\n"
        "            wrapper = obj.__dict__.setdefault(self.__attrname, wrapper)\n"
        "        except AttributeError:\n"
        "            raise TypeError(\"No '__dict__' attribute\") from None\n"
        "        return wrapper\n"
    )
    assert scan("src/cachetools/_cachedmethod.py", code, frozenset(range(1, 9))) == []

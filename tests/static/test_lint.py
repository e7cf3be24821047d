"""Tests for static.lint: ruff's default groups, severities, suppressions and a broken ruff."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from static.batch import StaticConfig
from static.findings import Finding, ToolError
from static.lint import LintConfig, check, find_tool, severity

STYLE_ONLY = """\
import sys,os
def f( x ):
    l = 'a very long line that goes on and on and on and on and on and on and on and on and on'
    if (x == 1): return os.sep+sys.platform+l
    return None
"""

UNDOCUMENTED_COMPLEX = """\
def grade(score, curve):
    if score > 90:
        return "A"
    elif score > 80:
        return "B"
    elif score > 70:
        return "C"
    elif score > 60:
        return "D"
    elif curve and score > 50:
        return "D-"
    elif curve and score > 40:
        return "E"
    elif curve and score > 30:
        return "E-"
    elif score > 20:
        return "F"
    elif score > 10:
        return "F-"
    elif score > 5:
        return "G"
    return "-"
"""


def script(tmp_path: Path, name: str, body: str) -> str:
    """A real executable standing in for a broken tool."""
    path = tmp_path / name
    path.write_text(f"#!{sys.executable}\n{body}", encoding="utf-8")
    path.chmod(0o755)
    return str(path)


def lint(tmp_path: Path, code: str, **options: object) -> list[Finding]:
    path = tmp_path / "c-1.py"
    path.write_text(code, encoding="utf-8")
    config = StaticConfig(lint=LintConfig(**options))  # type: ignore[arg-type]
    return check([path], config)[path]


def rules(findings: list[Finding]) -> list[str]:
    return sorted(f.rule for f in findings)


def test_style_alone_is_not_reported(tmp_path: Path) -> None:
    assert lint(tmp_path, STYLE_ONLY) == []


def test_bugs_are_reported_with_positions(tmp_path: Path) -> None:
    code = "def f(items=[]):\n    return itemz\n"
    findings = lint(tmp_path, code)
    assert [(f.rule, f.line, f.col, f.severity) for f in findings] == [
        ("B006", 1, 13, "medium"),
        ("F821", 2, 12, "high"),
    ]
    assert all(f.layer == "lint" for f in findings)


@pytest.mark.parametrize(
    ("groups", "expected"),
    [
        (frozenset({"bugs"}), []),
        (frozenset({"complexity"}), ["C901"]),
        (frozenset({"docs"}), ["D103"]),
        (frozenset({"annotations"}), ["ANN001", "ANN001", "ANN201"]),
        (frozenset({"complexity", "docs"}), ["C901", "D103"]),
    ],
)
def test_groups_are_separately_reportable(
    tmp_path: Path, groups: frozenset[str], expected: list[str]
) -> None:
    assert rules(lint(tmp_path, UNDOCUMENTED_COMPLEX, select_groups=groups)) == expected


def test_complexity_limit_is_configurable(tmp_path: Path) -> None:
    findings = lint(tmp_path, UNDOCUMENTED_COMPLEX, select_groups={"complexity"}, max_complexity=20)
    assert findings == []


def test_docs_group_uses_google_convention(tmp_path: Path) -> None:
    code = 'def f(x: int) -> int:\n    """Double it.\n\n    Args:\n        x: a number.\n    """\n'
    code += "    return 2 * x\n"
    assert lint(tmp_path, code, select_groups={"docs"}) == []


def test_extend_select_and_ignore(tmp_path: Path) -> None:
    code = "import os\nprint(os.sep)\n"
    assert rules(lint(tmp_path, code, extend_select=("T20",))) == ["T201"]
    assert rules(lint(tmp_path, "import os\n", ignore=("F401",))) == []


def test_noqa_comments_hide_nothing(tmp_path: Path) -> None:
    code = "# ruff: noqa\nimport os  # noqa: F401\n\n\ndef f(x=[]):  # noqa\n    return x\n"
    assert rules(lint(tmp_path, code)) == ["B006", "F401"]


def test_syntax_error_is_a_high_finding(tmp_path: Path) -> None:
    findings = lint(tmp_path, "def f(:\n    pass\n")
    assert findings
    assert {(f.rule, f.severity) for f in findings} == {("invalid-syntax", "high")}


def test_findings_are_split_per_file(tmp_path: Path) -> None:
    first, second, third = (tmp_path / f"c-{i}.py" for i in range(3))
    first.write_text("import os\n", encoding="utf-8")
    second.write_text("x = 1\n", encoding="utf-8")
    third.write_text("print(undefined)\n", encoding="utf-8")
    result = check([first, second, third], StaticConfig())
    assert {path: rules(found) for path, found in result.items()} == {
        first: ["F401"],
        second: [],
        third: ["F821"],
    }


def test_no_groups_means_no_run(tmp_path: Path) -> None:
    path = tmp_path / "c-1.py"
    path.write_text("import os\n", encoding="utf-8")
    config = StaticConfig(lint=LintConfig(select_groups=frozenset()), ruff="/nonexistent/ruff")
    assert check([path], config) == {path: []}


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("invalid-syntax", "high"),
        ("E902", "high"),
        ("F821", "high"),
        ("F706", "high"),
        ("PLE1142", "high"),
        ("F632", "medium"),
        ("B006", "medium"),
        ("E722", "medium"),
        ("PLW2901", "medium"),
        ("RUF012", "medium"),
        ("F401", "low"),
        ("F841", "low"),
        ("C901", "low"),
        ("T201", "low"),
        ("D103", "info"),
        ("ANN001", "info"),
    ],
)
def test_severity_table(code: str, expected: str) -> None:
    assert severity(code) == expected


def test_unknown_group_is_rejected() -> None:
    with pytest.raises(ValueError, match="unknown lint groups"):
        LintConfig(select_groups=frozenset({"style"}))  # type: ignore[arg-type]


def test_garbage_output_is_a_tool_error(tmp_path: Path) -> None:
    ruff = script(tmp_path, "ruff", "print('all good, nothing to see')\n")
    path = tmp_path / "c-1.py"
    path.write_text("import os\n", encoding="utf-8")
    with pytest.raises(ToolError, match="not its JSON"):
        check([path], StaticConfig(ruff=ruff))


def test_crash_is_a_tool_error(tmp_path: Path) -> None:
    ruff = script(tmp_path, "ruff", "import sys\nsys.stderr.write('panic')\nsys.exit(2)\n")
    path = tmp_path / "c-1.py"
    path.write_text("import os\n", encoding="utf-8")
    with pytest.raises(ToolError, match="exit code 2: panic"):
        check([path], StaticConfig(ruff=ruff))


def test_missing_ruff_says_what_to_install(tmp_path: Path) -> None:
    with pytest.raises(ToolError, match="fix the path or install ruff"):
        find_tool(StaticConfig(ruff=str(tmp_path / "no-such-ruff")))

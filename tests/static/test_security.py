"""Tests for static.security: bandit as a process and in-process, severities, a broken bandit."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from static.batch import StaticConfig
from static.findings import Finding, ToolError
from static.security import InProcess, SecurityConfig, check, find_tool, to_severity

# bandit's plugin loader calls stevedore with an argument stevedore deprecates.
pytestmark = pytest.mark.filterwarnings("ignore:The verify_requirements argument")

CORPUS = Path(__file__).parent / "corpus"

RISKY = """\
import subprocess


def run(cmd: str, data: bytes) -> object:
    assert cmd
    subprocess.call(cmd, shell=True)  # nosec
    return eval(cmd)  # nosec B307
"""


def script(tmp_path: Path, name: str, body: str) -> str:
    """A real executable standing in for a broken tool."""
    path = tmp_path / name
    path.write_text(f"#!{sys.executable}\n{body}", encoding="utf-8")
    path.chmod(0o755)
    return str(path)


def scan(tmp_path: Path, code: str, config: StaticConfig | None = None) -> list[Finding]:
    path = tmp_path / "c-1.py"
    path.write_text(code, encoding="utf-8")
    return check([path], config or StaticConfig())[path]


def test_findings_keep_bandit_ids_positions_and_confidence(tmp_path: Path) -> None:
    findings = scan(tmp_path, RISKY)
    assert [(f.rule, f.line, f.col, f.severity) for f in findings] == [
        ("B404", 1, 1, "low"),
        ("B602", 6, 5, "high"),
        ("B307", 7, 12, "medium"),
    ]
    assert all(f.layer == "security" for f in findings)
    assert findings[1].message.endswith("(confidence: high)")


def test_nosec_hides_nothing_and_assert_is_skipped_by_default(tmp_path: Path) -> None:
    assert "B101" not in {f.rule for f in scan(tmp_path, RISKY)}
    everything = StaticConfig(security=SecurityConfig(skip=()))
    assert "B101" in {f.rule for f in scan(tmp_path, RISKY, everything)}


def test_random_is_skipped_by_default(tmp_path: Path) -> None:
    code = "import random\n\n\ndef pick(xs: list[int]) -> int:\n    return random.choice(xs)\n"
    assert scan(tmp_path, code) == []


def test_syntax_error_is_not_a_tool_error(tmp_path: Path) -> None:
    assert scan(tmp_path, "def f(:\n    pass\n") == []


def test_in_process_equals_the_process(tmp_path: Path) -> None:
    files = sorted(CORPUS.glob("*.py"))
    config = StaticConfig()
    assert InProcess(config).check(files) == check(files, config)


def test_in_process_runs_again_with_fresh_state(tmp_path: Path) -> None:
    path = tmp_path / "c-1.py"
    path.write_text(RISKY, encoding="utf-8")
    scanner = InProcess(StaticConfig())
    assert scanner.check([path]) == scanner.check([path])


@pytest.mark.parametrize(
    ("severity", "confidence", "expected"),
    [
        ("HIGH", "HIGH", "high"),
        ("HIGH", "MEDIUM", "high"),
        ("HIGH", "LOW", "medium"),
        ("MEDIUM", "HIGH", "medium"),
        ("MEDIUM", "LOW", "medium"),
        ("LOW", "HIGH", "low"),
        ("LOW", "LOW", "low"),
    ],
)
def test_severity_mapping(severity: str, confidence: str, expected: str) -> None:
    assert to_severity(severity, confidence) == expected


def test_unknown_severity_is_rejected() -> None:
    with pytest.raises(ValueError, match="unknown severity"):
        to_severity("CRITICAL", "HIGH")


def test_garbage_output_is_a_tool_error(tmp_path: Path) -> None:
    bandit = script(tmp_path, "bandit", "print('[]')\n")
    with pytest.raises(ToolError, match="not its JSON"):
        scan(tmp_path, "x = 1\n", StaticConfig(bandit=bandit))


def test_exit_code_2_is_a_tool_error(tmp_path: Path) -> None:
    bandit = script(tmp_path, "bandit", "import sys\nsys.exit(2)\n")
    with pytest.raises(ToolError, match="exit code 2"):
        scan(tmp_path, "x = 1\n", StaticConfig(bandit=bandit))


def test_skipped_file_for_another_reason_is_a_tool_error(tmp_path: Path) -> None:
    report = '{"errors": [{"filename": "c-1.py", "reason": "exception while scanning file"}], '
    report += '"results": []}'
    bandit = script(tmp_path, "bandit", f"print({report!r})\n")
    with pytest.raises(ToolError, match="exception while scanning file"):
        scan(tmp_path, "x = 1\n", StaticConfig(bandit=bandit))


def test_missing_bandit_says_what_to_install(tmp_path: Path) -> None:
    with pytest.raises(ToolError, match="install"):
        find_tool(StaticConfig(bandit=str(tmp_path / "no-such-bandit")))

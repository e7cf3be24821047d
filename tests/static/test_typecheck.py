"""Tests for static.typecheck: the prepared text, mypy in batch and in a warm worker."""

from __future__ import annotations

import ast
import json
import os
import re
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from static import typecheck as typecheck_module
from static.batch import StaticConfig
from static.findings import Finding, ToolError
from static.typecheck import PRESCREEN_ABOVE, Worker, check, find_tool, prepare

CORPUS = Path(__file__).parent / "corpus"
EXPECTED = json.loads((CORPUS / "expected.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def config(tmp_path_factory: pytest.TempPathFactory) -> StaticConfig:
    return StaticConfig(cache_dir=tmp_path_factory.mktemp("mypy-cache"))


@pytest.fixture(scope="module")
def worker(
    tmp_path_factory: pytest.TempPathFactory, config: StaticConfig
) -> Iterator[tuple[Worker, Path]]:
    workdir = tmp_path_factory.mktemp("worker")
    running = Worker(config, workdir)
    yield running, workdir
    running.close()


def script(tmp_path: Path, name: str, body: str) -> str:
    """A real executable standing in for a broken tool."""
    path = tmp_path / name
    path.write_text(f"#!{sys.executable}\n{body}", encoding="utf-8")
    path.chmod(0o755)
    return str(path)


def write(directory: Path, name: str, code: str, fn: str, signature: str | None) -> Path:
    path = directory / f"{name}.py"
    path.write_text(prepare(code, fn, signature), encoding="utf-8")
    return path


def typecheck(
    tmp_path: Path, config: StaticConfig, code: str, fn: str = "f", signature: str | None = None
) -> list[Finding]:
    path = write(tmp_path, "c-1", code, fn, signature)
    return check([path], config)[path]


def summary(findings: list[Finding]) -> list[tuple[str, int]]:
    return [(f.rule, f.line) for f in findings]


# prepare: what mypy sees


def test_unannotated_function_gets_the_signature() -> None:
    code = "def is_even(n):\n    return n % 2 == 0\n"
    prepared = prepare(code, "is_even", "def is_even(n: int) -> bool")
    assert prepared.splitlines()[0] == "def is_even(n: int) -> bool:"
    assert prepared.splitlines()[1] == code.splitlines()[1]


def test_own_annotations_are_kept() -> None:
    code = "def is_even(n: int) -> int:\n    return n % 2\n"
    prepared = prepare(code, "is_even", "def is_even(n: int) -> bool")
    assert prepared.startswith(code)


def test_multiline_header_and_decorator() -> None:
    code = "@staticmethod\ndef f(\n    a,\n    key=lambda x: (x, {1: 2}),\n):\n    return a\n"
    prepared = prepare(code, "f", "def f(a: int, key: Callable[[int], object]) -> int").splitlines()
    assert prepared[:6] == [
        "@staticmethod",
        "def f(",
        "    a: int,",
        "    key: _gbx_Callable[[int], object]=lambda x: (x, {1: 2}),",
        ") -> int:",
        "    return a",
    ]
    assert "from typing import Callable as _gbx_Callable" in prepared


def test_names_the_candidate_binds_are_not_aliased() -> None:
    code = "from typing import Optional\n\n\ndef f(x):\n    return x\n"
    prepared = prepare(code, "f", "def f(x: Optional[int]) -> Optional[int]")
    assert "_gbx_Optional" not in prepared
    assert "def f(x: Optional[int]) -> Optional[int]:" in prepared


def test_suppression_comments_are_blanked_in_place() -> None:
    code = "# mypy: ignore-errors\nx: int = 'a'  # type: ignore[assignment]\ny = 1  # keep me\n"
    lines = prepare(code, "f", None).splitlines()
    assert lines == ["#" + " " * 20, "x: int = 'a'  #" + " " * 25, "y = 1  # keep me"]


@pytest.mark.parametrize(
    ("fn", "signature"),
    [
        ("f", None),
        ("f", ""),
        ("missing", "def missing(x: int) -> int"),
        ("f", "def f(x: UnknownClass) -> int"),
        ("f", "def f(x, y)"),
        ("f", "this is not a signature"),
    ],
)
def test_no_check_without_a_usable_signature(fn: str, signature: str | None) -> None:
    code = "def f(x, y=2):\n    return x\n"
    assert prepare(code, fn, signature) == code


def test_syntax_errors_pass_through() -> None:
    assert prepare("def f(:\n", "f", "def f(x: int) -> int") == "def f(:\n"


def header_lines(code: str, fn: str) -> set[int]:
    """Line numbers of the def header of the last top-level ``fn``, where annotations go."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return set()
    defs = [n for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
    node = [n for n in defs if n.name == fn][-1]
    return set(range(node.lineno, node.body[0].lineno))


def test_corpus_lines_keep_their_numbers() -> None:
    for name, task in EXPECTED.items():
        code = (CORPUS / name).read_text(encoding="utf-8")
        original = code.splitlines()
        prepared = prepare(code, task["fn"], task["signature"]).splitlines()
        changed = header_lines(code, task["fn"]) | {
            number
            for number, line in enumerate(original, start=1)
            if re.search(r"type\s*:\s*ignore|mypy\s*:", line)
        }
        assert len(prepared) >= len(original)
        for number, (before, after) in enumerate(zip(original, prepared, strict=False), start=1):
            assert before == after or number in changed, (name, number)


identifiers = st.from_regex(r"[a-z][a-z0-9]{0,6}", fullmatch=True).filter(
    lambda s: s not in {"def", "if", "in", "is", "or", "and", "not", "for", "as", "del", "try"}
)


@settings(max_examples=60, deadline=None)
@given(params=st.lists(identifiers, min_size=0, max_size=4, unique=True), body=identifiers)
def test_prepared_text_compiles_and_keeps_the_body(params: list[str], body: str) -> None:
    code = f"def target({', '.join(params)}):\n    {body} = 1\n    return {body}\n"
    signature = f"def target({', '.join(f'{p}: int' for p in params)}) -> int"
    prepared = prepare(code, "target", signature)
    compile(prepared, "prepared", "exec", dont_inherit=True)
    assert prepared.splitlines()[1:3] == code.splitlines()[1:3]
    assert ast.parse(prepared).body[-1].name == "_gbx_signature_check"  # type: ignore[attr-defined]


# check: mypy in batch


def test_wrong_return_of_unannotated_function(tmp_path: Path, config: StaticConfig) -> None:
    code = "def is_even(n):\n    return 'yes' if n % 2 == 0 else 'no'\n"
    findings = typecheck(tmp_path, config, code, "is_even", "def is_even(n: int) -> bool")
    assert summary(findings) == [("return-value", 2)]
    assert findings[0].col == 12
    assert findings[0].severity == "medium"


def test_contradicting_annotation_is_gbx001_on_the_def(
    tmp_path: Path, config: StaticConfig
) -> None:
    code = "\n\ndef is_even(n: int) -> int:\n    return n % 2\n"
    findings = typecheck(tmp_path, config, code, "is_even", "def is_even(n: int) -> bool")
    assert summary(findings) == [("GBX001", 3)]
    assert "does not fit the task's signature" in findings[0].message
    assert "[return-value]" in findings[0].message


def test_required_parameters_beyond_the_signature(tmp_path: Path, config: StaticConfig) -> None:
    code = "def f(a: int, b: int, c: int) -> int:\n    return a + b + c\n"
    findings = typecheck(tmp_path, config, code, "f", "def f(a: int, b: int = 0) -> int")
    assert {f.rule for f in findings} == {"GBX001"}
    assert all("call-arg" in f.message for f in findings)


def test_third_party_imports_are_not_findings(tmp_path: Path, config: StaticConfig) -> None:
    code = (
        "import numpy as np\nimport requests\nimport yaml\nimport surely_not_a_real_package\n\n\n"
        "def f(x: int) -> int:\n    return int(np.sum(requests.get(yaml.dump(x)).json()))\n"
    )
    assert typecheck(tmp_path, config, code) == []


def test_own_packages_are_invisible(tmp_path: Path, config: StaticConfig) -> None:
    code = "from static.findings import Finding\n\n\ndef f(x: int) -> int:\n    return Finding(x)\n"
    assert typecheck(tmp_path, config, code) == []


def test_candidates_do_not_see_each_other(tmp_path: Path, config: StaticConfig) -> None:
    one = write(tmp_path, "c-one", "def helper() -> str:\n    return 'x'\n", "helper", None)
    two = write(tmp_path, "c-two", "import importlib\n\nx = helper()\n", "x", None)
    both = check([one, two], config)
    assert summary(both[one]) == []
    assert summary(both[two]) == [("name-defined", 3)]
    assert check([two], config)[two] == both[two]


@pytest.mark.parametrize("fine", [0, PRESCREEN_ABOVE], ids=["whole", "prescreened"])
def test_a_syntax_error_does_not_stop_the_others(
    tmp_path: Path, config: StaticConfig, fine: int
) -> None:
    bad_type = "def f() -> int:\n    return 'x'\n"
    files = [
        write(tmp_path, "c-a", bad_type, "f", None),
        write(tmp_path, "c-b", "def f(:\n    pass\n", "f", None),
        write(tmp_path, "c-c", "for x in []:\n    pass\nelse:\n    break\n", "f", None),
        write(tmp_path, "c-e", "x = (\n", "f", None),
        write(tmp_path, "c-d", bad_type, "f", None),
    ]
    others = [
        write(tmp_path, f"c-f{i}", "def f() -> int:\n    return 1\n", "f", None)
        for i in range(fine)
    ]
    result = check(files + others, config)
    assert [sorted({f.rule for f in result[path]}) for path in files] == [
        ["return-value"],
        ["syntax"],
        ["misc"],
        ["syntax"],
        ["return-value"],
    ]
    assert {(f.line, f.severity) for f in result[files[1]]} == {(1, "high")}
    assert all(result[path] == [] for path in others)
    assert {p: check([p], config)[p] for p in files} == {p: result[p] for p in files}


def test_only_a_large_batch_pays_for_the_prescreen(
    tmp_path: Path, config: StaticConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The prescreen is a child process: a small batch never starts it when every
    file compiles, and compiles only the files mypy could not parse when one does not."""
    screened: list[list[str]] = []
    real = typecheck_module.uncompilable

    def spy(files: list[Path], **kwargs: object) -> set[Path]:
        if files:  # with no file it starts nothing
            screened.append(sorted(p.name for p in files))
        return real(files, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(typecheck_module, "uncompilable", spy)
    code = "def f() -> int:\n    return 1\n"
    small = [write(tmp_path, f"c-s{i}", code, "f", None) for i in range(PRESCREEN_ABOVE)]
    check(small, config)
    assert screened == []
    broken = write(tmp_path, "c-broken", "def f(:\n", "f", None)
    assert {f.rule for f in check([*small[:3], broken], config)[broken]} == {"syntax"}
    assert screened == [["c-broken.py"]]
    screened.clear()
    check([*small, broken], config)  # one more than the threshold: screened first, whole
    assert screened == [sorted(p.name for p in [*small, broken])]


def test_garbage_output_is_a_tool_error(tmp_path: Path) -> None:
    mypy = script(tmp_path, "mypy", "print('no errors, probably')\nraise SystemExit(1)\n")
    with pytest.raises(ToolError, match="unparseable"):
        typecheck(tmp_path, StaticConfig(mypy=mypy), "x = 1\n")


def test_plain_text_syntax_errors_are_understood(tmp_path: Path) -> None:
    body = "import sys\nprint(sys.argv[-1] + ':2: error: invalid syntax  [syntax]')\nsys.exit(2)\n"
    mypy = script(tmp_path, "mypy", body)
    # Code that does not compile: on code that compiles, a syntax error is mypy's failure.
    findings = typecheck(tmp_path, StaticConfig(mypy=mypy), "x = 1\ny = (\n")
    assert [(f.rule, f.line, f.col, f.message) for f in findings] == [
        ("syntax", 2, 0, "invalid syntax")
    ]


def test_internal_error_is_a_tool_error(tmp_path: Path) -> None:
    body = "import sys\nprint(sys.argv[-1] + ': error: INTERNAL ERROR -- report it')\nsys.exit(2)\n"
    mypy = script(tmp_path, "mypy", body)
    with pytest.raises(ToolError, match="crashed"):
        typecheck(tmp_path, StaticConfig(mypy=mypy), "x = 1\n")


def test_fatal_error_without_output_is_a_tool_error(tmp_path: Path) -> None:
    mypy = script(tmp_path, "mypy", "import sys\nsys.stderr.write('bad flag')\nsys.exit(2)\n")
    with pytest.raises(ToolError, match="bad flag"):
        typecheck(tmp_path, StaticConfig(mypy=mypy), "x = 1\n")


def test_missing_mypy_says_what_to_install(tmp_path: Path) -> None:
    with pytest.raises(ToolError, match="install mypy"):
        find_tool(StaticConfig(mypy=str(tmp_path / "no-such-mypy")))


# Worker: the warm single-candidate path


def test_worker_agrees_with_batch(worker: tuple[Worker, Path], config: StaticConfig) -> None:
    running, workdir = worker
    for name, task in EXPECTED.items():
        code = (CORPUS / name).read_text(encoding="utf-8")
        path = write(workdir, "c-" + name.removesuffix(".py"), code, task["fn"], task["signature"])
        assert running.check([path]) == check([path], config), name
        path.unlink()


def test_worker_survives_a_syntax_error(worker: tuple[Worker, Path]) -> None:
    running, workdir = worker
    broken = write(workdir, "c-broken", "def f(:\n", "f", None)
    fine = write(workdir, "c-fine", "def f() -> int:\n    return 'x'\n", "f", None)
    assert {f.rule for f in running.check([broken])[broken]} == {"syntax"}
    assert summary(running.check([fine])[fine]) == [("return-value", 2)]


def test_worker_restarts_when_killed(config: StaticConfig, tmp_path: Path) -> None:
    running = Worker(config, tmp_path)
    try:
        pid = running.pid
        assert pid is not None
        os.kill(pid, signal.SIGKILL)  # the worker this test started
        path = write(tmp_path, "c-1", "def f() -> int:\n    return 'x'\n", "f", None)
        assert summary(running.check([path])[path]) == [("return-value", 2)]
        assert running.pid not in (None, pid)
    finally:
        running.close()
    assert running.pid is None


def test_closing_a_dead_worker_with_unflushed_input_does_not_raise(
    config: StaticConfig, tmp_path: Path
) -> None:
    # The race behind a rare BrokenPipeError: a request was buffered, the worker died,
    # and closing its stdin tried to flush into the dead pipe.
    running = Worker(config, tmp_path)
    proc = running._proc
    assert proc is not None and proc.stdin is not None
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    proc.stdin.write(b"x" * 100)  # stays in the buffer: nothing flushes it
    running.close()  # must not raise
    assert running.pid is None


def test_worker_that_cannot_start_is_a_tool_error(tmp_path: Path) -> None:
    with pytest.raises(ToolError, match="mypy worker"):
        Worker(StaticConfig(cache_dir=tmp_path / "file-not-dir"), tmp_path / "missing-dir")


def test_silent_exit_1_is_a_tool_error_not_a_clean_result(tmp_path: Path) -> None:
    # mypy exits 1 only when it reports errors; exit 1 with no output means it broke
    mypy = script(tmp_path, "mypy", "raise SystemExit(1)\n")
    with pytest.raises(ToolError, match="exit code 1"):
        typecheck(tmp_path, StaticConfig(mypy=mypy), "x = 1\n")

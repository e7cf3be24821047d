"""Tests for static.batch: the corpus against the real tools, batching, warm sessions, failures."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import re
import sys
import tomllib
from pathlib import Path

import pytest

from static.batch import (
    LAYERS,
    Candidate,
    Session,
    StaticConfig,
    StaticResult,
    check_batch,
    check_tools,
)
from static.findings import ToolError
from static.lint import find_tool
from static.typecheck import find_tool as find_mypy

# bandit's plugin loader calls stevedore with an argument stevedore deprecates.
pytestmark = pytest.mark.filterwarnings("ignore:The verify_requirements argument")

CORPUS = Path(__file__).parent / "corpus"
EXPECTED = json.loads((CORPUS / "expected.json").read_text(encoding="utf-8"))
RULES = Path(__file__).parents[2] / "static" / "rules.toml"


def corpus_candidate(name: str) -> Candidate:
    task = EXPECTED[name]
    return Candidate((CORPUS / name).read_text(encoding="utf-8"), task["fn"], task["signature"])


def by_layer(result: StaticResult) -> dict[str, list[str]]:
    return {
        layer: [f"{f.rule}:{f.line}" for f in result.findings if f.layer == layer]
        for layer in ("lint", "types", "security")
    }


def script(tmp_path: Path, name: str, body: str) -> str:
    """A real executable standing in for a broken tool."""
    path = tmp_path / name
    path.write_text(f"#!{sys.executable}\n{body}", encoding="utf-8")
    path.chmod(0o755)
    return str(path)


@pytest.fixture(scope="module")
def config(tmp_path_factory: pytest.TempPathFactory) -> StaticConfig:
    return StaticConfig(cache_dir=tmp_path_factory.mktemp("mypy-cache"))


@pytest.fixture(scope="module")
def corpus_results(config: StaticConfig) -> dict[str, StaticResult]:
    names = sorted(EXPECTED)
    return dict(zip(names, check_batch([corpus_candidate(n) for n in names], config), strict=True))


def test_corpus_matches_the_expected_findings(corpus_results: dict[str, StaticResult]) -> None:
    assert sorted(p.name for p in CORPUS.glob("*.py")) == sorted(EXPECTED)
    for name, result in corpus_results.items():
        expected = {layer: EXPECTED[name][layer] for layer in ("lint", "types", "security")}
        assert result.tool_errors == {}, name
        assert by_layer(result) == expected, name


def test_clean_candidates_have_no_findings(corpus_results: dict[str, StaticResult]) -> None:
    clean = [name for name in EXPECTED if name.startswith("clean_")]
    assert len(clean) >= 5
    for name in clean:
        assert corpus_results[name].findings == [], name


def test_findings_are_ordered_by_position(corpus_results: dict[str, StaticResult]) -> None:
    for result in corpus_results.values():
        keys = [(f.line, f.col) for f in result.findings]
        assert keys == sorted(keys)


def test_a_session_agrees_with_the_batch(
    config: StaticConfig, corpus_results: dict[str, StaticResult]
) -> None:
    with Session(config) as session:
        for name, result in corpus_results.items():
            assert session.check(corpus_candidate(name)) == result, name


def test_results_keep_input_order_and_duplicates(config: StaticConfig) -> None:
    names = ["wrong_return.py", "clean_is_even.py", "wrong_return.py", "eval_exec.py"]
    results = check_batch([corpus_candidate(n) for n in names], config)
    assert [by_layer(r) == by_layer(results[0]) for r in results] == [True, False, True, False]
    assert results[3].findings[0].layer == "security"


def test_a_candidate_alone_or_in_company_gets_the_same(
    config: StaticConfig, corpus_results: dict[str, StaticResult]
) -> None:
    for name in ("signature_mismatch.py", "lint_bugs.py", "clean_mean.py"):
        assert check_batch([corpus_candidate(name)], config) == [corpus_results[name]]


def test_the_same_code_under_another_signature_is_another_candidate(config: StaticConfig) -> None:
    code = "def f(x):\n    return str(x)\n"
    as_str, as_int = check_batch(
        [
            Candidate(code, "f", "def f(x: int) -> str"),
            Candidate(code, "f", "def f(x: int) -> int"),
        ],
        config,
    )
    assert as_str.findings == []
    assert [f.rule for f in as_int.findings] == ["return-value"]


def test_only_the_configured_layers_run(config: StaticConfig) -> None:
    only_lint = StaticConfig(layers=frozenset({"lint"}), mypy="/nonexistent", bandit="/nonexistent")
    (result,) = check_batch([corpus_candidate("lint_bugs.py")], only_lint)
    assert {f.layer for f in result.findings} == {"lint"}
    assert result.tool_errors == {}


def test_empty_batch_and_no_layers() -> None:
    assert check_batch([], StaticConfig()) == []
    nothing = StaticConfig(layers=frozenset(), ruff="/nonexistent")
    assert check_batch([corpus_candidate("eval_exec.py")], nothing) == [StaticResult([], {})]


@pytest.mark.parametrize(
    ("layer", "tool"),
    [("lint", "ruff"), ("types", "mypy"), ("security", "bandit")],
)
def test_a_broken_tool_is_an_error_of_its_layer_only(
    tmp_path: Path, config: StaticConfig, layer: str, tool: str
) -> None:
    broken = script(tmp_path, tool, "print('{\"surprise\": true}')\n")
    candidates = [corpus_candidate(n) for n in ("lint_bugs.py", "shell_injection.py")]
    broken_config = dataclasses.replace(config, **{tool: broken})  # type: ignore[arg-type]
    results = check_batch(candidates, broken_config)
    for result in results:
        assert set(result.tool_errors) == {layer}
        assert tool in result.tool_errors[layer]
        assert all(f.layer != layer for f in result.findings)
    assert {f.layer for r in results for f in r.findings} == {"lint", "types", "security"} - {layer}


def test_one_candidate_that_breaks_a_tool_does_not_break_the_batch(
    tmp_path: Path, config: StaticConfig
) -> None:
    ruff = find_tool(StaticConfig())  # the real ruff, wrapped
    wrapper = script(
        tmp_path,
        "ruff",
        "import os, sys\n"
        "if any(a.endswith('.py') and 'POISON' in open(a).read() for a in sys.argv[1:]):\n"
        "    sys.exit('ruff panicked')\n"
        f"os.execv({ruff!r}, [{ruff!r}, *sys.argv[1:]])\n",
    )
    codes = [f"import os{i}\n" for i in range(7)]
    codes[4] = "# POISON\nimport os\n"
    lint_only = StaticConfig(layers=frozenset({"lint"}), ruff=wrapper)
    results = check_batch([Candidate(code, "f") for code in codes], lint_only)
    assert [bool(r.tool_errors) for r in results] == [False] * 4 + [True] + [False] * 2
    assert "ruff panicked" in results[4].tool_errors["lint"]
    assert all([f.rule for f in r.findings] == ["F401"] for i, r in enumerate(results) if i != 4)


def test_check_tools_names_what_to_install(tmp_path: Path) -> None:
    check_tools(StaticConfig())
    missing = str(tmp_path / "nothing-here")
    with pytest.raises(ToolError, match=r"lint: ruff not found.*install") as raised:
        check_tools(StaticConfig(ruff=missing, bandit=missing))
    assert "security: bandit not found" in str(raised.value)
    check_tools(StaticConfig(layers=frozenset({"types"}), ruff=missing, bandit=missing))


def test_a_session_refuses_to_start_without_its_tools(tmp_path: Path) -> None:
    with pytest.raises(ToolError, match="mypy not found"):
        Session(StaticConfig(mypy=str(tmp_path / "nothing-here")))


def test_a_broken_tool_in_a_session_is_an_error_of_its_layer(
    tmp_path: Path, config: StaticConfig
) -> None:
    ruff = script(tmp_path, "ruff", "print('garbage')\n")
    with Session(StaticConfig(cache_dir=config.cache_dir, ruff=ruff)) as session:
        result = session.check(corpus_candidate("shell_injection.py"))
    assert set(result.tool_errors) == {"lint"}
    assert {f.layer for f in result.findings} == {"security"}


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"layers": frozenset({"lint", "style"})}, "unknown layers"),
        ({"jobs": 0}, "jobs"),
        ({"timeout_s": 0}, "timeout_s"),
    ],
)
def test_config_is_validated(options: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        StaticConfig(**options)  # type: ignore[arg-type]


def test_registry_lists_the_three_tool_layers() -> None:
    assert set(LAYERS) == {"lint", "types", "security"}


def test_rules_file_documents_our_ids_in_ruff_shape() -> None:
    rules = tomllib.loads(RULES.read_text(encoding="utf-8"))
    assert "GBX001" in rules
    for rule_id, doc in rules.items():
        assert re.fullmatch(r"GBX\d{3}", rule_id), rule_id
        for key in (
            "name",
            "layer",
            "severity",
            "summary",
            "what",
            "why",
            "example",
            "use_instead",
        ):
            assert isinstance(doc.get(key), str) and doc[key].strip(), (rule_id, key)
        assert doc["severity"] in {"info", "low", "medium", "high"}
        compile(doc["use_instead"], rule_id, "exec")


# -- attacks: one sample must cost no other sample its findings ---------------------------

SHELL = "import subprocess\n\n\ndef run(cmd):\n    return subprocess.call(cmd, shell=True)\n"
ELIF_CHAIN = (
    "import os\n\n\ndef f(x):\n    if x == 0:\n        return 0\n"
    + "".join(f"    elif x == {i}:\n        return {i}\n" for i in range(1, 1000))
    + "    return -1\n"
)
LONG_SUM = "import os\n\n\ndef f(x):\n    return x" + " + 1" * 1000 + "\n"


def test_poisonous_samples_in_both_halves_cost_only_themselves(config: StaticConfig) -> None:
    # bandit raises on each poison (recursion); they sit in both halves of the batch.
    codes = [SHELL.replace("cmd", f"cmd{i}") for i in range(8)]
    codes[1], codes[6] = ELIF_CHAIN, LONG_SUM
    for code in codes:
        compile(code, "<candidate>", "exec", dont_inherit=True)  # the sandbox runs them all
    results = check_batch([Candidate(code, "run") for code in codes], config)
    for i, result in enumerate(results):
        rules = {f.rule for f in result.findings}
        if i in (1, 6):
            assert set(result.tool_errors) == {"security"}, i
            assert "F401" in rules, i  # the tools that did read it still report
        else:
            assert result.tool_errors == {}, i
            assert {"B602", "B404"} <= rules, i


def _ruff_wrapper(tmp_path: Path, fails_when: str) -> str:
    ruff = find_tool(StaticConfig())  # the real ruff, behind a condition
    return script(
        tmp_path,
        "ruff",
        "import os, sys\n"
        "files = [a for a in sys.argv[1:] if a.endswith('.py')]\n"
        f"if {fails_when}:\n"
        "    sys.exit('ruff panicked')\n"
        f"os.execv({ruff!r}, [{ruff!r}, *sys.argv[1:]])\n",
    )


def test_bisection_blames_each_poisoned_file_in_both_halves(tmp_path: Path) -> None:
    wrapper = _ruff_wrapper(tmp_path, "any('POISON' in open(f).read() for f in files)")
    codes = [f"import os{i}\n" for i in range(8)]
    codes[1], codes[6] = "# POISON\nimport os\n", "# POISON too\nimport sys\n"
    lint_only = StaticConfig(layers=frozenset({"lint"}), ruff=wrapper)
    results = check_batch([Candidate(code, "f") for code in codes], lint_only)
    assert [sorted(r.tool_errors) for r in results] == [
        ["lint"] if i in (1, 6) else [] for i in range(8)
    ]
    honest = [r for i, r in enumerate(results) if i not in (1, 6)]
    assert all([f.rule for f in r.findings] == ["F401"] for r in honest)


def test_a_file_that_passes_alone_is_never_blamed(tmp_path: Path) -> None:
    # The tool fails on any run of two files or more: every file passes alone.
    wrapper = _ruff_wrapper(tmp_path, "len(files) > 1")
    codes = [f"import os{i}\n" for i in range(5)]
    lint_only = StaticConfig(layers=frozenset({"lint"}), ruff=wrapper)
    results = check_batch([Candidate(code, "f") for code in codes], lint_only)
    assert [r.tool_errors for r in results] == [{}] * 5
    assert [[f.rule for f in r.findings] for r in results] == [["F401"]] * 5


COOKIES = {
    "ascii": "# -*- coding: ascii -*-\n",
    "utf-16": "# coding=utf-16\n",
    "cp1252-vim": "# vim: set fileencoding=cp1252 :\n",
    "latin-1-on-line-2": "#!/usr/bin/env python\n# -*- coding: latin-1 -*-\n",
    "unknown-codec": "# coding: no-such-codec\n",
    "two-cookies": "# coding=ascii coding:ascii\n",
}


@pytest.mark.parametrize("cookie", sorted(COOKIES))
def test_a_coding_cookie_does_not_blind_the_tools(config: StaticConfig, cookie: str) -> None:
    head = COOKIES[cookie]
    code = (
        f"{head}import subprocess\n\n\ndef run(cmd: str) -> int:\n"
        '    """Run it \u2014 \u00c1 \u00e9."""\n'
        "    subprocess.call(cmd, shell=True)\n"
        '    return "no"\n'
    )
    compile(code, "<candidate>", "exec", dont_inherit=True)  # the sandbox ignores the cookie
    (result,) = check_batch([Candidate(code, "run", "def run(cmd: str) -> int")], config)
    assert result.tool_errors == {}
    shift = head.count("\n") - 1
    found = {(f.layer, f.rule, f.line - shift, f.severity) for f in result.findings}
    assert ("security", "B602", 7, "high") in found
    assert ("types", "return-value", 8, "medium") in found


def test_a_bom_is_not_what_the_tools_see(config: StaticConfig) -> None:
    code = "\ufeff# coding: latin-1\n" + SHELL
    (result,) = check_batch([Candidate(code, "run")], config)
    assert result.tool_errors == {}
    assert ("B602", 6) in {(f.rule, f.line) for f in result.findings}


def test_a_tool_blind_to_code_that_compiles_is_a_tool_error(
    tmp_path: Path, config: StaticConfig
) -> None:
    # A bandit that says "syntax error" for every file: believed only where it is true.
    bandit = script(
        tmp_path,
        "bandit",
        "import json, sys\n"
        "files = [a for a in sys.argv[1:] if a.endswith('.py')]\n"
        "print(json.dumps({'errors': [{'filename': f, 'reason': "
        "'syntax error while parsing AST from file'} for f in files], 'results': [], "
        "'metrics': {f: {} for f in files}}))\n",
    )
    compiles, broken = SHELL, "def run(:\n    pass\n"
    blind = dataclasses.replace(config, layers=frozenset({"security"}), bandit=bandit)
    results = check_batch([Candidate(compiles, "run"), Candidate(broken, "run")], blind)
    assert set(results[0].tool_errors) == {"security"}
    assert "could not parse" in results[0].tool_errors["security"]
    assert results[1] == StaticResult([], {})  # the lint layer reports that syntax error


def test_a_tool_that_leaves_a_file_out_silently_is_a_tool_error(
    tmp_path: Path, config: StaticConfig
) -> None:
    bandit = script(
        tmp_path,
        "bandit",
        "import json\nprint(json.dumps({'errors': [], 'results': [], 'metrics': {}}))\n",
    )
    blind = dataclasses.replace(config, layers=frozenset({"security"}), bandit=bandit)
    (result,) = check_batch([Candidate(SHELL, "run")], blind)
    assert "did not scan" in result.tool_errors["security"]


def test_mypy_saying_syntax_error_on_code_that_compiles_is_a_tool_error(
    tmp_path: Path, config: StaticConfig
) -> None:
    mypy = find_mypy(StaticConfig())  # the real mypy, blind to files marked BLIND
    wrapper = script(
        tmp_path,
        "mypy",
        "import os, sys\n"
        "files = [a for a in sys.argv[1:] if a.endswith('.py')]\n"
        "blind = [f for f in files if 'BLIND' in open(f).read()]\n"
        "if blind:\n"
        "    print(blind[0] + ':1: error: invalid syntax  [syntax]')\n"
        "    sys.exit(2)\n"
        f"os.execv({mypy!r}, [{mypy!r}, *sys.argv[1:]])\n",
    )
    codes = ["# BLIND\nx: int = 1\n", 'y: int = "no"\n', "# BLIND\ndef f(:\n"]
    types_only = dataclasses.replace(config, layers=frozenset({"types"}), mypy=wrapper)
    for batch in (codes, codes[:1]):
        results = check_batch([Candidate(code, "f") for code in batch], types_only)
        assert "could not parse" in results[0].tool_errors["types"]
        assert results[0].findings == []
    results = check_batch([Candidate(code, "f") for code in codes], types_only)
    assert [f.rule for f in results[1].findings] == ["assignment"]
    assert [f.rule for f in results[2].findings] == ["syntax"]
    assert results[1].tool_errors == results[2].tool_errors == {}


def test_a_malformed_type_comment_stays_a_finding(config: StaticConfig) -> None:
    code = "def f(x):  # type: (int -> int\n    return x\n"
    (result,) = check_batch([Candidate(code, "f")], config)
    assert result.tool_errors == {}
    assert [f.rule for f in result.findings if f.layer == "types"] == ["syntax"]


# --- where a batch's files go ----------------------------------------------------------


def _spy_roots(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    import static.batch as batch

    roots: list[Path] = []
    write = batch._write

    def spy(root: Path, *args: object) -> object:
        roots.append(root)
        return write(root, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(batch, "_write", spy)
    return roots


@pytest.mark.skipif(
    not os.access("/dev/shm", os.W_OK | os.X_OK),
    reason="no writable /dev/shm here",
)
def test_a_batch_is_written_on_the_memory_file_system(
    config: StaticConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    # On disk (/tmp on ext4) the two files of a candidate cost the grader ~0.2 ms more.
    roots = _spy_roots(monkeypatch)
    found = check_batch([corpus_candidate("clean_is_even.py")], config)
    assert found[0].tool_errors == {}
    assert [r.parent for r in roots] == [Path("/dev/shm")]
    assert not roots[0].exists()  # and removed after the batch


def test_a_full_memory_file_system_leaves_the_batch_to_the_temporary_directory(
    config: StaticConfig, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import errno

    import static.batch as batch

    full = tmp_path / "shm"
    full.mkdir()
    write = batch._write

    def no_space(root: Path, *args: object) -> object:
        if root.parent == full:
            raise OSError(errno.ENOSPC, "No space left on device")
        return write(root, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(batch, "_write", no_space)
    with contextlib.ExitStack() as scratch:
        files = batch._write_batch(
            scratch, {"c-x": corpus_candidate("clean_is_even.py")}, config.layers, str(full)
        )
        assert all(
            p.parent.parent.parent != full and p.exists() for ps in files.values() for p in ps
        )
    assert list(full.iterdir()) == []  # the half-written directory went too

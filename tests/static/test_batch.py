"""Tests for static.batch: the corpus against the real tools, batching, warm sessions, failures."""

from __future__ import annotations

import dataclasses
import json
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

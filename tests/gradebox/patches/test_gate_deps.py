"""The gate's deps layer: a patch that bumps a dependency into a known vulnerability fails.

A real git repository (the gate tests' fixture repository) with a second
requirements file; the real PyPA snapshot (CC-BY 4.0). The environment's own
lockfile (requirements.txt) is left alone, so the tests' environment is the usual one.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from advisory_data import real_store

from gradebox.patches import GateConfig, GateSpec, TestIds, run_gate
from gradebox.patches.diff import FileChange
from gradebox.patches.staticdiff import StaticSettings, differential
from sandbox.command import CommandLimits
from static.config import StaticConfig

F2P = ("tests/test_ops.py::test_mean",)
P2P = ("tests/test_ops.py::test_add", "tests/test_ops.py::test_scale")
DOCS = "requirements-docs.txt"


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    with real_store(tmp_path_factory) as s:
        yield s


def _bump(version: str):
    def edit(root: Path) -> None:
        (root / DOCS).write_text(f"sphinx\njinja2=={version}\n")

    return edit


def test_a_bump_into_an_affected_range_fails_by_policy(
    tmp_path, store, repo_with, env_cache, mypy_cache, fix
):
    repo = repo_with(tmp_path / "repo", {DOCS: "sphinx\njinja2==2.7.2\n"})
    settings = StaticSettings(config=StaticConfig(cache_dir=mypy_cache), advisories=store)
    config = GateConfig(
        limits=CommandLimits(timeout_s=120), base_runs=1, env_cache=env_cache, static=settings
    )
    ids = TestIds(F2P, P2P)

    def fix_and_bump(root: Path) -> None:
        fix(root)
        _bump("2.7")(root)

    patch = repo.patch(fix_and_bump)
    row = run_gate(GateSpec("bump", repo.path, repo.base, patch, ids), config).to_row()
    new = [f for f in row["static"]["new"] if f["layer"] == "deps"]
    assert {f["rule"] for f in new} == {"GBX312"}, row["static"]
    assert any("PYSEC-2014-8" in f["message"] and f["counted"] for f in new)
    assert all(f["path"] == DOCS and f["line"] == 2 for f in new)
    # PYSEC-2014-82 (fixed in 2.7.3) holds 2.7.2 too: kept, not introduced
    kept = [f for f in row["static"]["unchanged"] if f["layer"] == "deps"]
    assert any("PYSEC-2014-82" in f["message"] for f in kept)
    assert not any("PYSEC-2014-82" in f["message"] for f in new)
    assert (row["verdict"], row["reason"]) == ("fail", "policy:static"), row


def _change(path: str, lines: frozenset[int]) -> FileChange:
    return FileChange(path, path, "modified", lines, lines, lines, "")


def test_the_reverse_bump_is_fixed_and_lockfiles_and_pyproject_count(store):
    settings = StaticSettings(config=StaticConfig(), advisories=store)
    settings = dataclasses.replace(settings, config=StaticConfig(layers=frozenset()))
    base = {DOCS: "jinja2==2.7\n", "pyproject.toml": '[project]\ndependencies = ["py>=1.12"]\n'}
    head = {
        DOCS: "jinja2==2.11.3\n",
        "pyproject.toml": '[project]\ndependencies = ["py==1.11.0"]\n',
    }
    changes = [_change(DOCS, frozenset({1})), _change("pyproject.toml", frozenset({2}))]
    part = differential(
        changes, base, head, pins=None, local_modules=set(), settings=settings
    )  # fmt: skip
    fixed = {t.finding.refs[0] for t in part.findings if t.state == "fixed" and t.finding.refs}
    assert {"PYSEC-2014-8", "PYSEC-2014-82", "PYSEC-2019-217"} <= fixed
    new = [t for t in part.counted if t.finding.layer == "deps"]
    assert [(t.path, t.finding.refs[0]) for t in new] == [("pyproject.toml", "PYSEC-2022-42969")]
    assert part.effect == "fail"

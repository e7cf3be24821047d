"""Differential static on the fixture repository: only what the patch introduces counts."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from gradebox.patches import run_gate

RUN = """

def run(cmd):
    return subprocess.call(cmd, shell=True)
"""


def add_to_ops(prefix: str = "", suffix: str = ""):
    def do(root: Path) -> None:
        ops = root / "calc" / "ops.py"
        text = ops.read_text().replace("(len(xs) + 1)", "len(xs)")
        text = text.replace("import hashlib\n", "import hashlib\n" + prefix)
        ops.write_text(text + suffix)

    return do


def _rules(findings):
    return sorted((f["rule"], f["counted"]) for f in findings)


def test_a_new_bandit_high_is_new_while_the_old_one_is_unchanged(repo, static_config, spec):
    patch = repo.patch(add_to_ops("import subprocess\n", RUN))
    row = run_gate(spec(repo, patch), static_config).to_row()
    static = row["static"]
    new = {f["rule"]: f for f in static["new"]}
    assert new["B602"]["severity"] == "high" and new["B602"]["counted"], static
    assert new["B602"]["path"] == "calc/ops.py"
    assert [f["rule"] for f in static["unchanged"] if f["layer"] == "security"] == ["B324"]
    assert not any(f["counted"] for f in static["unchanged"])
    assert (row["verdict"], row["reason"]) == ("fail", "policy:static"), row
    assert "B602" in row["detail"]


def test_the_old_finding_alone_does_not_fail_the_fix(repo, static_config, spec, fix):
    row = run_gate(spec(repo, repo.patch(fix)), static_config).to_row()
    assert (row["verdict"], row["reason"]) == ("pass", "ok"), row
    assert "B324" in [f["rule"] for f in row["static"]["unchanged"]]
    assert row["static"]["new"] == []


def test_an_import_the_lockfile_does_not_pin_fails_by_policy(repo, static_config, spec):
    lazy = "\n\ndef fetch(url):\n    import requests\n\n    return requests.get(url, timeout=5)\n"
    row = run_gate(spec(repo, repo.patch(add_to_ops(suffix=lazy))), static_config).to_row()
    assert (row["verdict"], row["reason"]) == ("fail", "policy:static"), row
    assert ("GBX102", True) in _rules(row["static"]["new"])


def test_an_invented_import_fails_by_policy(repo, static_config, spec):
    lazy = "\n\ndef fast(xs):\n    import fastmean_turbo\n\n    return fastmean_turbo.mean(xs)\n"
    row = run_gate(spec(repo, repo.patch(add_to_ops(suffix=lazy))), static_config)
    assert ("GBX101", True) in _rules(row.to_row()["static"]["new"])
    assert row.reason == "policy:static"


def test_the_filter_mode_decides_which_new_findings_count(repo, static_config, spec):
    # Removing the only use of `hashlib` makes its import unused (F401) on a line
    # the patch did not touch: new, but outside `added`; counted with `file`.
    def drop_digest(root: Path) -> None:
        ops = root / "calc" / "ops.py"
        text = ops.read_text().replace("(len(xs) + 1)", "len(xs)")
        ops.write_text(
            text.replace("    return hashlib.md5(data).hexdigest()\n", "    return data\n")
        )

    patch = repo.patch(drop_digest)
    row = run_gate(spec(repo, patch), static_config).to_row()
    assert ("F401", False) in _rules(row["static"]["new"]), row["static"]
    assert "B324" in [f["rule"] for f in row["static"]["fixed"]]
    settings = dataclasses.replace(static_config.static, filter_mode="file")
    row = run_gate(spec(repo, patch), dataclasses.replace(static_config, static=settings))
    assert ("F401", True) in _rules(row.to_row()["static"]["new"])
    assert row.to_row()["static"]["filter_mode"] == "file"


def test_a_rewrite_of_most_of_a_file_is_a_diff_finding(repo, static_config, spec):
    def rewrite(root: Path) -> None:
        ops = root / "calc" / "ops.py"
        ops.write_text(
            '"""Arithmetic."""\nimport hashlib\n\n# adding\ndef add(left, right):\n'
            "    return left + right\n# scaling\ndef scale(values, factor):\n"
            "    return [v * factor for v in values]\n# averaging\ndef mean(values):\n"
            "    return sum(values) / len(values)\n\n\ndef digest(data):\n"
            "    return hashlib.md5(data).hexdigest()\n"
        )

    row = run_gate(spec(repo, repo.patch(rewrite)), static_config).to_row()
    assert row["diff"]["per_file"][0]["rewrite_ratio"] > 0.6
    assert "GBX202" in [f["rule"] for f in row["static"]["new"]]
    # low severity: it annotates; the old B324 line kept its text, so it is unchanged
    assert (row["verdict"], row["reason"]) == ("pass", "ok"), row["detail"]


def test_a_patch_cannot_add_to_its_own_lockfile(repo, static_config, spec):
    lazy = "\n\ndef fetch(url):\n    import requests\n\n    return requests.get(url, timeout=5)\n"

    def both(root: Path) -> None:
        add_to_ops(suffix=lazy)(root)
        (root / "requirements.txt").write_text("pytest\nrequests==2.32.3\n")

    row = run_gate(spec(repo, repo.patch(both)), static_config).to_row()
    # The lockfile (and so the environment and the allowed imports) is the base's.
    assert (row["verdict"], row["reason"]) == ("fail", "policy:static"), row
    assert ("GBX102", True) in _rules(row["static"]["new"])

"""``gradebox gate`` through click's CliRunner: inputs, outputs, exit codes, SWE-bench parity."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner
from defusedxml import ElementTree as SafeET
from jsonschema import Draft4Validator

from gradebox.cli import cli
from gradebox.patches import GateConfig, GateRow, GateSpec, TestIds
from gradebox.pipeline.static import parse_policy

from .conftest import git

SCHEMA = json.loads(
    (Path(__file__).parents[2] / "static" / "schemas" / "sarif-schema-2.1.0.json").read_text()
)
F2P = ["tests/test_ops.py::test_mean"]
P2P = ["tests/test_ops.py::test_add", "tests/test_ops.py::test_scale"]


def run(*args: str):
    return CliRunner().invoke(cli, ["gate", *args], catch_exceptions=False)


def _patches(repo, fix):
    breaks = lambda root: (  # noqa: E731
        fix(root),
        (root / "calc/ops.py").write_text(
            (root / "calc/ops.py").read_text().replace("x * k", "x + k")
        ),
    )
    return {"fixed": repo.patch(fix), "broken": repo.patch(breaks), "nothing": ""}


def test_one_patch_with_every_report(repo, fix, env_cache, tmp_path):
    (tmp_path / "fix.diff").write_text(repo.patch(fix))
    out = tmp_path / "gate.jsonl"
    res = run(
        "--repo", str(repo.path), "--base", "main", "--patch", str(tmp_path / "fix.diff"),
        "--fail-to-pass", ",".join(F2P), "--base-runs", "1", "--env-cache", str(env_cache),
        "--out", str(out), "--report", str(tmp_path / "report.json"),
        "--sarif", str(tmp_path / "gate.sarif"), "--junit", str(tmp_path / "junit.xml"),
        "--comment", str(tmp_path / "comment.md"), "--json",
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    [row] = [json.loads(line) for line in out.read_text().splitlines()]
    assert (row["id"], row["verdict"], row["resolved"]) == ("fix", "pass", True)
    assert json.loads(res.stdout) == {
        "gates": 1, "pass": 1, "fail": 0, "needs_review": 0, "resolved": 1,
    }  # fmt: skip
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["resolved_ids"] == ["fix"] and report["error_ids"] == []
    log = json.loads((tmp_path / "gate.sarif").read_text())
    assert not list(Draft4Validator(SCHEMA).iter_errors(log))
    run0 = log["runs"][0]
    assert run0["automationDetails"]["id"] == "gradebox/gate/fix/"
    assert run0["versionControlProvenance"][0]["revisionId"] == repo.base
    b324 = next(r for r in run0["results"] if r["ruleId"] == "B324")
    assert b324["baselineState"] == "unchanged"
    assert b324["partialFingerprints"]["gradeboxFingerprint/v1"]
    suites = SafeET.fromstring((tmp_path / "junit.xml").read_bytes())
    names = sorted(c.get("name") for c in suites.iter("testcase"))
    assert names == sorted(F2P + P2P)
    assert "**pass**" in (tmp_path / "comment.md").read_text()


def test_gates_file_and_swebench_give_the_same_resolved_ids(swe_repo, fix, env_cache, tmp_path):
    patches = _patches(swe_repo, fix)
    gates, instances, preds = [], [], []
    for name, diff in patches.items():
        (tmp_path / f"{name}.diff").write_text(diff)
        gates.append({
            "id": name, "repo": "clones/acme__calc", "base": swe_repo.base,
            "patch": f"@{name}.diff", "tests": {"fail_to_pass": F2P, "pass_to_pass": P2P},
        })  # fmt: skip
        instances.append({
            "instance_id": name, "repo": "acme/calc", "base_commit": swe_repo.base,
            "patch": patches["fixed"], "test_patch": "", "FAIL_TO_PASS": json.dumps(F2P),
            "PASS_TO_PASS": json.dumps(P2P), "problem_statement": "mean() is wrong",
        })  # fmt: skip
        preds.append({"instance_id": name, "model_patch": diff, "model_name_or_path": "m"})
    for file, items in (("gates.jsonl", gates), ("inst.jsonl", instances), ("preds.jsonl", preds)):
        (tmp_path / file).write_text("".join(json.dumps(x) + "\n" for x in items))
    common = ["--base-runs", "1", "--env-cache", str(env_cache), "--no-static"]
    native = run("--gates", str(tmp_path / "gates.jsonl"), "--out", str(tmp_path / "a.jsonl"),
                 "--report", str(tmp_path / "a.json"), *common)  # fmt: skip
    swe = run(
        "--swebench", str(tmp_path / "inst.jsonl"), "--predictions", str(tmp_path / "preds.jsonl"),
        "--repos", str(tmp_path / "clones"), "--out", str(tmp_path / "b.jsonl"),
        "--report", str(tmp_path / "b.json"), *common,
    )  # fmt: skip
    assert (native.exit_code, swe.exit_code) == (1, 1), native.output + swe.output
    a, b = (json.loads((tmp_path / f).read_text()) for f in ("a.json", "b.json"))
    assert a["resolved_ids"] == b["resolved_ids"] == ["fixed"]
    assert a["unresolved_ids"] == b["unresolved_ids"] == ["broken"]
    assert a["empty_patch_ids"] == b["empty_patch_ids"] == ["nothing"]
    verdicts = [json.loads(x)["verdict"] for x in (tmp_path / "b.jsonl").read_text().splitlines()]
    assert verdicts == ["pass", "fail", "fail"]


def test_bad_gate_lines_are_reported_with_file_and_line_before_any_work(tmp_path):
    gates = tmp_path / "gates.jsonl"
    gates.write_text(
        '{"id": "a", "repo": "r", "base": "main", "patch": "x", "tests": {}}\n'
        "not json\n"
        '{"id": "b", "repo": "r", "patch": "x", "tests": {"fail_to_pass": "t"}, "colour": 1}\n'
    )
    res = run("--gates", str(gates))
    assert res.exit_code == 2
    assert f"{gates}:2: not JSON" in res.output
    assert f"{gates}:3: unknown keys ['colour']" in res.output
    assert f"{gates}:3: base is required" in res.output
    assert f"{gates}:3: tests.fail_to_pass is a string that is not a JSON list" in res.output


def test_usage_errors_exit_2(tmp_path, repo):
    assert run().exit_code == 2
    res = run("--repo", str(repo.path), "--base", "main")
    assert res.exit_code == 2 and "exactly one of --patch FILE and --head REV" in res.output
    res = run("--swebench", str(tmp_path / "x.jsonl"))
    assert res.exit_code == 2 and "--predictions" in res.output


def test_a_prediction_for_an_unknown_instance_is_bad_input(tmp_path, swe_repo):
    instance = {"instance_id": "a", "repo": "acme/calc", "base_commit": swe_repo.base}
    (tmp_path / "i.jsonl").write_text(json.dumps(instance) + "\n")
    (tmp_path / "p.jsonl").write_text(json.dumps({"instance_id": "zzz", "model_patch": ""}) + "\n")
    res = run("--swebench", str(tmp_path / "i.jsonl"), "--predictions", str(tmp_path / "p.jsonl"),
              "--repos", str(tmp_path / "clones"))  # fmt: skip
    assert res.exit_code == 2 and "p.jsonl:1: no instance 'zzz'" in res.output


def test_a_missing_base_revision_is_an_infrastructure_error(repo, tmp_path, env_cache):
    (tmp_path / "p.diff").write_text("")
    patch = str(tmp_path / "p.diff")
    res = run("--repo", str(repo.path), "--base", "no-such-rev", "--patch", patch,
              "--env-cache", str(env_cache))  # fmt: skip
    assert res.exit_code == 2
    row = json.loads(res.stdout.splitlines()[0])
    assert (row["verdict"], row["reason"]) == ("needs_review", "infra_error")
    assert "not a commit" in row["infra_error"]


def test_help_has_an_example():
    res = run("--help")
    assert res.exit_code == 0 and "gradebox gate --swebench" in res.output
    text = " ".join(res.output.split())
    for documented in ("--static-policy FILE|base:PATH", "IDS|@FILE|@base:PATH",
                       "--static-policy-toml TOML", "--rules-origin", "base:<commit>:<path>",
                       "--static-policy base:.gradebox/policy.toml"):  # fmt: skip
        assert documented in text, documented


BASE_POLICY = 'fail_on = [{layer = "security", min_severity = "low"}]\n'
BASE_F2P = "tests/test_ops.py::test_mean  # mean() must be fixed\n"
BASE_P2P = "tests/test_ops.py::test_add\ntests/test_ops.py::test_scale\n"


def _commit_rules(repo) -> str:
    """The gate's rules committed at base under ``.gradebox/``; the work tree then relaxes them."""
    rules = repo.path / ".gradebox"
    rules.mkdir()
    for name, text in (("policy.toml", BASE_POLICY), ("fail_to_pass.txt", BASE_F2P),
                       ("pass_to_pass.txt", BASE_P2P)):  # fmt: skip
        (rules / name).write_text(text)
    (rules / "link.toml").symlink_to(repo.path / ".gradebox" / "policy.toml")
    git(repo.path, "add", "-A")
    git(repo.path, "commit", "-qm", "the gate's rules")
    repo.base = git(repo.path, "rev-parse", "HEAD").strip()
    (rules / "policy.toml").write_text("fail_on = []\n")  # what a checkout of a PR could hold
    (rules / "fail_to_pass.txt").write_text("")
    return repo.base


def _captured(monkeypatch) -> list[tuple[GateSpec, GateConfig]]:
    """The specs and config the CLI builds: ``run_gate`` replaced by a recorder."""
    seen: list[tuple[GateSpec, GateConfig]] = []

    def record(spec: GateSpec, config: GateConfig, judge: object = None) -> GateRow:
        seen.append((spec, config))
        return GateRow(spec.id, "pass", "ok", rules=spec.rules)

    monkeypatch.setattr("gradebox.cli.gate.run_gate", record)
    return seen


def test_rules_named_at_base_are_read_from_the_base_revision(repo, tmp_path, monkeypatch):
    base = _commit_rules(repo)
    seen = _captured(monkeypatch)
    (tmp_path / "empty.diff").write_text("")
    out, md = tmp_path / "gate.jsonl", tmp_path / "comment.md"
    res = run(
        "--repo", str(repo.path), "--base", "main", "--patch", str(tmp_path / "empty.diff"),
        "--static-policy", "base:.gradebox/policy.toml",
        "--fail-to-pass", "@base:.gradebox/fail_to_pass.txt",
        "--pass-to-pass", "@base:./.gradebox/pass_to_pass.txt",
        "--out", str(out), "--comment", str(md),
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    [(spec, config)] = seen
    assert spec.base == base  # pinned to the commit the rules were read at
    assert spec.tests == TestIds(tuple(F2P), tuple(P2P))
    assert spec.rules == (
        ("fail_to_pass", f"base:{base}:.gradebox/fail_to_pass.txt"),
        ("pass_to_pass", f"base:{base}:.gradebox/pass_to_pass.txt"),
        ("static_policy", f"base:{base}:.gradebox/policy.toml"),
    )
    assert config.static is not None
    assert config.static.policy == parse_policy(BASE_POLICY, "expected")
    [row] = [json.loads(x) for x in out.read_text().splitlines()]
    assert row["rules"]["static_policy"] == f"base:{base}:.gradebox/policy.toml"
    assert f"`static_policy` from `base:{base}:.gradebox/policy.toml`" in md.read_text()


def test_rules_given_here_say_who_gave_them(repo, tmp_path, monkeypatch):
    seen = _captured(monkeypatch)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "policy.toml").write_text(BASE_POLICY)
    (tmp_path / "f2p.txt").write_text(BASE_F2P)
    (tmp_path / "empty.diff").write_text("")
    one = ["--repo", str(repo.path), "--base", "main", "--patch", "empty.diff"]
    runs = [
        [*one, "--static-policy", "policy.toml", "--fail-to-pass", "@f2p.txt"],
        [*one, "--static-policy-toml", BASE_POLICY, "--fail-to-pass", ",".join(F2P),
         "--pass-to-pass", ",".join(P2P), "--rules-origin", "workflow"],
        [*one],
        [*one, "--no-static"],
    ]  # fmt: skip
    for args in runs:
        assert run(*args).exit_code == 0
    assert [dict(spec.rules) for spec, _ in seen] == [
        {"fail_to_pass": "command line:f2p.txt", "pass_to_pass": "auto",
         "static_policy": "command line:policy.toml"},
        {"fail_to_pass": "workflow", "pass_to_pass": "workflow", "static_policy": "workflow"},
        {"pass_to_pass": "auto", "static_policy": "default"},
        {"pass_to_pass": "auto"},
    ]  # fmt: skip
    assert all(spec.base == "main" for spec, _ in seen)  # nothing read at base: not pinned
    assert seen[0][1].static is not None and seen[1][1].static is not None
    assert seen[0][1].static.policy == seen[1][1].static.policy == parse_policy(BASE_POLICY, "x")
    gates = tmp_path / "gates.jsonl"
    line = {"id": "g", "repo": str(repo.path), "base": "main", "patch": "@empty.diff",
            "tests": {"fail_to_pass": list(F2P)}}  # fmt: skip
    gates.write_text(json.dumps(line) + "\n")
    assert run("--gates", str(gates), "--no-static").exit_code == 0
    assert dict(seen[-1][0].rules) == {"fail_to_pass": f"command line:{gates}:1",
                                       "pass_to_pass": "auto"}  # fmt: skip


def test_a_rule_that_cannot_be_read_at_base_is_bad_input(repo, tmp_path, monkeypatch):
    base = _commit_rules(repo)
    seen = _captured(monkeypatch)
    (tmp_path / "empty.diff").write_text("")
    one = ["--repo", str(repo.path), "--base", "main", "--patch", str(tmp_path / "empty.diff")]
    (repo.path / "untracked.toml").write_text(BASE_POLICY)
    cases = {
        "base:untracked.toml": f"'untracked.toml' is not a file at the base revision {base[:12]}",
        "base:.gradebox/link.toml": "'.gradebox/link.toml' is not a file at the base revision",
        "base:../policy.toml": "a path outside the repository is refused",
        "base:/etc/passwd": "a path outside the repository is refused",
        "base:.git/config": "changes to git's own files are refused",
    }
    for value, message in cases.items():
        res = run(*one, "--static-policy", value)
        assert res.exit_code == 2 and message in res.output, (value, res.output)
    res = run(*one, "--fail-to-pass", "@base:tests/missing.txt")
    assert res.exit_code == 2 and "'tests/missing.txt' is not a file" in res.output
    git(repo.path, "checkout", "-q", "-b", "bad-policy")
    (repo.path / ".gradebox" / "policy.toml").write_text("fail_on = [")
    git(repo.path, "commit", "-qam", "broken policy")
    res = run("--repo", str(repo.path), "--base", "bad-policy", "--patch", one[-1],
              "--static-policy", "base:.gradebox/policy.toml")  # fmt: skip
    assert (
        res.exit_code == 2 and ":.gradebox/policy.toml: cannot read the static policy" in res.output
    )
    res = run(*one, "--static-policy", "base:p.toml", "--static-policy-toml", BASE_POLICY)
    assert res.exit_code == 2 and "one of --static-policy and --static-policy-toml" in res.output
    gates = tmp_path / "gates.jsonl"
    gates.write_text("")
    res = run("--gates", str(gates), "--static-policy", "base:.gradebox/policy.toml")
    assert res.exit_code == 2 and "base:PATH needs one repository" in res.output
    res = run("--repo", str(repo.path), "--base", "no-such-rev", "--patch", one[-1],
              "--static-policy", "base:.gradebox/policy.toml")  # fmt: skip
    assert res.exit_code == 2 and "is not a commit of the repository" in res.output
    assert seen == []  # nothing was gated


def test_head_and_base_may_be_branch_names_and_tags(repo, fix, env_cache, tmp_path):
    head = repo.commit(fix, "fix mean")  # the branch fix-mean
    git(repo.path, "tag", "v-fix", head)
    git(repo.path, "tag", "-a", "-m", "the base", "v-base", "main")  # an annotated tag
    for base, head_ref in (("main", "fix-mean"), ("v-base", "v-fix"), ("main", head)):
        out = tmp_path / f"{head_ref}.jsonl"
        res = run(
            "--repo", str(repo.path), "--base", base, "--head", head_ref,
            "--fail-to-pass", ",".join(F2P), "--base-runs", "1", "--no-static",
            "--env-cache", str(env_cache), "--out", str(out),
        )  # fmt: skip
        assert res.exit_code == 0, (base, head_ref, res.output)
        [row] = [json.loads(line) for line in out.read_text().splitlines()]
        assert (row["verdict"], row["base"]) == ("pass", repo.base), row
        assert row["tests"]["fail_to_pass"] == {F2P[0]: "F2P"}

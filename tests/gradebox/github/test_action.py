"""The Action's script, run as the composite runs it: a fake event file, the fake GitHub, real git,
the real gate in its sandbox. (The composite itself cannot run on GitHub from here.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from gradebox.github.action import INPUTS, ActionError, plan
from gradebox.github.render import MARKER

from ..patches.conftest import git, make_repo
from .conftest import PR, TOKEN
from .fakegithub import FakeGitHub, Identity

ROOT = Path(__file__).resolve().parents[3]

# The fix, plus a canary: if the sandbox could see the token, mean() would be wrong again.
LEAKY_FIX = '''"""Small arithmetic helpers."""

import hashlib
import os


def add(a, b):
    return a + b


def scale(xs, k):
    return [x * k for x in xs]


def mean(xs):
    leaked = any("TOKEN" in k or "s3cr3t" in v for k, v in os.environ.items())
    return sum(xs) / (len(xs) + (1 if leaked else 0))


def digest(data):
    return hashlib.md5(data).hexdigest()
'''


F2P = {"fail-to-pass": "tests/test_ops.py::test_mean"}  # the canary decides through it


def _event(tmp: Path, base: str, head: str, body: str) -> Path:
    path = tmp / f"event-{head[:7]}.json"
    path.write_text(
        json.dumps(
            {
                "pull_request": {
                    "number": PR,
                    "title": "Fix mean",
                    "body": body,
                    "base": {"sha": base},
                    "head": {"sha": head},
                }
            }
        )
    )
    return path


def _run(fake, repo_path: Path, event: Path, tmp: Path, env_cache: Path, **inputs: str):
    out = tmp / "github_output"
    out.write_text("")
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp),
        "GITHUB_ACTIONS": "true",
        "GITHUB_API_URL": fake.url,
        "GITHUB_TOKEN": TOKEN,
        "GITHUB_REPOSITORY": "acme/calc",
        "GITHUB_EVENT_PATH": str(event),
        "GITHUB_SHA": "b" * 40,
        "GITHUB_WORKSPACE": str(repo_path),
        "GITHUB_OUTPUT": str(out),
        "GITHUB_STEP_SUMMARY": str(tmp / "summary.md"),
        "RUNNER_TEMP": str(tmp / "runner"),
        "INPUT_ARGS": f"--env-cache {env_cache} --base-runs 1 --no-static",
        **{k: v for k, v in os.environ.items() if k == "PYTHONPATH"},  # the code under test
        **{INPUTS[k]: v for k, v in inputs.items()},
    }
    proc = subprocess.run(
        [sys.executable, "-m", "gradebox.github.action", "--exit-zero"],
        cwd=repo_path,  # a step's working directory is GITHUB_WORKSPACE
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    outputs = dict(line.split("=", 1) for line in out.read_text().splitlines() if "=" in line)
    return proc, outputs


@pytest.fixture
def fake():
    server = FakeGitHub({TOKEN: Identity("github-actions[bot]")}).start()
    yield server
    server.stop()


def test_the_actions_script_gates_posts_and_edits_its_comment(fake, tmp_path, env_cache):
    repo = make_repo(tmp_path / "calc")
    good = repo.commit(lambda p: (p / "calc" / "ops.py").write_text(LEAKY_FIX), "fix mean")
    event = _event(tmp_path, repo.base, good, "Fixes `mean`.")
    proc, outputs = _run(fake, repo.path, event, tmp_path, env_cache, **F2P)
    assert proc.returncode == 0, proc.stderr
    assert outputs["exit-code"] == "0" and outputs["verdict"] == "pass", proc.stderr
    assert Path(outputs["sarif"]).is_file()
    assert json.loads(Path(outputs["sarif"]).read_text())["version"] == "2.1.0"
    (comment,) = fake.comments[PR]
    assert comment["body"].startswith(MARKER) and "**pass**" in comment["body"]
    assert fake.check_runs[0]["conclusion"] == "success"
    assert fake.check_runs[0]["head_sha"] == good
    intent = (tmp_path / "runner" / "gradebox" / "intent.md").read_text()
    assert intent.startswith("Fix mean") and "Fixes `mean`." in intent

    def breaks_add(p: Path) -> None:
        ops = p / "calc" / "ops.py"
        ops.write_text(LEAKY_FIX.replace("return a + b", "return a - b"))

    bad = repo.commit(breaks_add, "break add")
    event = _event(tmp_path, repo.base, bad, "Also tidy add.")
    proc, outputs = _run(fake, repo.path, event, tmp_path, env_cache, **F2P)
    assert outputs["exit-code"] == "1" and outputs["verdict"] == "fail", proc.stderr
    (comment,) = fake.comments[PR]  # still one comment, edited
    assert "**fail**" in comment["body"] and "test_add" in comment["body"]
    assert [r["conclusion"] for r in fake.check_runs] == ["success", "failure"]
    assert TOKEN not in proc.stderr + proc.stdout


def test_posting_failures_never_change_the_gates_exit_code(fake, tmp_path, env_cache):
    fake.tokens[TOKEN].perms = set()
    repo = make_repo(tmp_path / "calc")
    good = repo.commit(lambda p: (p / "calc" / "ops.py").write_text(LEAKY_FIX), "fix mean")
    event = _event(tmp_path, repo.base, good, "")
    proc, outputs = _run(fake, repo.path, event, tmp_path, env_cache)
    assert outputs["exit-code"] == "0", proc.stderr
    assert "pull-requests: read" in proc.stderr and "checks: write" in proc.stderr
    proc, outputs = _run(
        fake,
        repo.path,
        event,
        tmp_path,
        env_cache,
        args=f"--env-cache {env_cache} --base-runs 1 --no-static --post-strict",
    )
    assert outputs["exit-code"] == "2", proc.stderr
    assert TOKEN not in proc.stderr


BASE_POLICY = 'fail_on = [{layer = "security", min_severity = "low"}]\n'
BASE_F2P = "tests/test_ops.py::test_mean  # mean() must be fixed\n"


def _repo_with_rules(root: Path):
    """The fixture repository with its gate's rules committed at base (``.gradebox/``)."""
    repo = make_repo(root)
    (root / ".gradebox").mkdir()
    (root / ".gradebox" / "policy.toml").write_text(BASE_POLICY)
    (root / ".gradebox" / "fail_to_pass.txt").write_text(BASE_F2P)
    git(root, "add", "-A")
    git(root, "commit", "-qm", "the gate's rules")
    repo.base = git(root, "rev-parse", "HEAD").strip()
    return repo


def _relax_the_rules(root: Path) -> None:
    """A PR that relaxes its own gate in the commit that breaks it."""
    (root / ".gradebox" / "policy.toml").write_text("fail_on = []\n")
    (root / ".gradebox" / "fail_to_pass.txt").write_text("# nothing to fix here\n")
    ops = root / "calc" / "ops.py"
    text = ops.read_text().replace("import hashlib\n", "import hashlib\nimport subprocess\n")
    ops.write_text(text + "\n\ndef run(cmd):\n    return subprocess.run(cmd, check=False)\n")


def test_a_pr_that_relaxes_its_own_rules_is_gated_by_the_bases(fake, tmp_path, env_cache):
    repo = _repo_with_rules(tmp_path / "calc")
    head = repo.commit(_relax_the_rules, "relax the rules")
    git(repo.path, "checkout", "-q", head)  # the workspace is the PR's checkout, as on GitHub
    event = _event(tmp_path, repo.base, head, "Tidy the gate's rules.")
    proc, outputs = _run(
        fake, repo.path, event, tmp_path, env_cache,
        policy=".gradebox/policy.toml", args=f"--env-cache {env_cache} --base-runs 1",
        **{"fail-to-pass": "@.gradebox/fail_to_pass.txt"},
    )  # fmt: skip
    assert (outputs["exit-code"], outputs["verdict"]) == ("1", "fail"), proc.stderr
    (row,) = [json.loads(x) for x in Path(outputs["results"]).read_text().splitlines()]
    # With the head's rules this would pass: no FAIL_TO_PASS, and a policy that fails nothing.
    assert row["tests"]["fail_to_pass"] == {"tests/test_ops.py::test_mean": "F2F"}
    assert row["static"]["effect"] == "fail"  # B404/B603 (low) fail by the base's policy only
    read = {k: row["rules"].get(k) for k in ("static_policy", "fail_to_pass", "pass_to_pass")}
    assert read == {  # the gate adds its own beside them (protect, pytest_config)
        "static_policy": f"base:{repo.base}:.gradebox/policy.toml",
        "fail_to_pass": f"base:{repo.base}:.gradebox/fail_to_pass.txt",
        "pass_to_pass": "auto",
    }
    (comment,) = fake.comments[PR]
    assert f"`base:{repo.base}:.gradebox/policy.toml`" in comment["body"]


def _plan_env(tmp: Path, repo, head: str, **inputs: str) -> dict[str, str]:
    return {
        "GITHUB_EVENT_PATH": str(_event(tmp, repo.base, head, "")),
        "GITHUB_WORKSPACE": str(repo.path),
        "RUNNER_TEMP": str(tmp / "runner"),
        **{INPUTS[k]: v for k, v in inputs.items()},
    }


def _value(argv: tuple[str, ...], flag: str) -> str | None:
    return argv[argv.index(flag) + 1] if flag in argv else None


def test_rule_inputs_are_read_at_base_or_taken_from_the_workflow(tmp_path):
    repo = _repo_with_rules(tmp_path / "calc")
    head = repo.commit(_relax_the_rules, "relax the rules")
    env = _plan_env(
        tmp_path, repo, head, policy=".gradebox/policy.toml",
        **{"fail-to-pass": "@.gradebox/fail_to_pass.txt", "pass-to-pass": "t.py::a,\nt.py::b\n"},
    )  # fmt: skip
    argv = plan(env).argv
    assert _value(argv, "--static-policy") == "base:.gradebox/policy.toml"
    assert _value(argv, "--fail-to-pass") == "@base:.gradebox/fail_to_pass.txt"
    assert _value(argv, "--pass-to-pass") == "t.py::a,t.py::b"
    assert _value(argv, "--rules-origin") == "workflow"
    assert [a for a in argv if str(repo.path) in a] == [str(repo.path)]  # --repo only
    toml = 'fail_on = [{layer = "lint"}]\n'
    argv = plan({**env, INPUTS["policy"]: "", INPUTS["policy-toml"]: toml}).argv
    assert _value(argv, "--static-policy-toml") == toml.strip()
    assert "--static-policy" not in argv
    with pytest.raises(ActionError, match="one of policy"):
        plan({**env, INPUTS["policy-toml"]: toml})
    for args in ("--static-policy x.toml", "--fail-to-pass=t.py::a", "--rules-origin command-line",
                 "--pass-to-pass @p2p.txt"):  # fmt: skip
        with pytest.raises(ActionError, match="args may not set a rule"):
            plan({**env, INPUTS["args"]: args})


def test_an_intent_file_is_read_at_head_and_never_through_a_link(tmp_path):
    repo = make_repo(tmp_path / "calc")
    secret = tmp_path / "runner-secret"
    secret.write_text("s3cr3t")

    def add_intent(root: Path) -> None:
        (root / "docs").mkdir()
        (root / "docs" / "intent.md").write_text("Fix mean.\n")
        (root / "docs" / "link.md").symlink_to(secret)

    head = repo.commit(add_intent, "intent")
    env = _plan_env(tmp_path, repo, head, intent="@docs/intent.md")
    argv = plan(env).argv  # the workspace has base checked out: the file is read from head
    assert Path(_value(argv, "--intent")[1:]).read_text() == "Fix mean.\n"
    with pytest.raises(ActionError, match="not a file at the head revision"):
        plan({**env, INPUTS["intent"]: "@docs/link.md"})
    with pytest.raises(ActionError, match="outside the repository"):
        plan({**env, INPUTS["intent"]: f"@{secret}"})


def test_no_base_is_a_clear_error(tmp_path):
    out = tmp_path / "o"
    env = {"PATH": os.environ["PATH"], "GITHUB_OUTPUT": str(out), "RUNNER_TEMP": str(tmp_path)}
    proc = subprocess.run(
        [sys.executable, "-m", "gradebox.github.action"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 2 and "base" in proc.stderr
    assert "exit-code=2" in out.read_text()


def test_action_yml_passes_every_input_the_script_reads():
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    assert action["runs"]["using"] == "composite"
    steps = action["runs"]["steps"]
    (gate,) = [s for s in steps if s.get("id") == "gate"]
    assert "-m gradebox.github.action --exit-zero" in gate["run"]
    for name, var in INPUTS.items():
        if name != "output-dir":
            assert name in action["inputs"], name
            assert gate["env"][var] == "${{ inputs." + name + " }}"
    assert gate["env"]["GITHUB_TOKEN"] == "${{ inputs.token }}"
    (upload,) = [
        s for s in steps if str(s.get("uses", "")).startswith("github/codeql-action/upload-sarif")
    ]
    assert upload["with"]["category"] == "gradebox/gate"
    assert "always()" in upload["if"]
    last = steps[-1]
    assert "exit-code != '0'" in last["if"] and "exit 1" in last["run"]
    assert any("bubblewrap" in s.get("run", "") for s in steps)
    # inputs never spliced into a shell string: every ${{ }} in a run is an env var instead
    assert not any("${{" in s.get("run", "") for s in steps)

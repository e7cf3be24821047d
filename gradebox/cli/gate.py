"""``gradebox gate``: gate patches to a repository (PR suggestions; SWE-bench-compatible)."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import IO, TYPE_CHECKING, Literal

import click

from gradebox.cli.errors import EXIT_ERROR, EXIT_FAILED, EXIT_OK, exit_codes
from gradebox.cli.options import sandbox_python_option
from gradebox.errors import BadInput, SetupError
from gradebox.patches import GateConfig, GateRow, GateSpec, TestIds, run_gate
from gradebox.patches.env import default_cache
from gradebox.patches.inputs import load_gates, load_swebench, parse_ids, read_text_arg
from gradebox.patches.outputs import comment, junit, sarif, swebench_report
from gradebox.patches.rules import Origin, RuleReader, parse_id_lines
from gradebox.patches.staticdiff import StaticSettings
from gradebox.runs.private import private_binary, private_text
from sandbox.backends import find_python
from sandbox.command import CommandLimits
from sandbox.errors import IsolationUnavailable
from static.advisories import AdvisoryStore
from static.config import StaticConfig

if TYPE_CHECKING:
    from judge import Judge
    from static.policy import Policy

__all__ = ["gate"]

_FILE = click.Path(path_type=Path, dir_okay=False)
Rule = tuple[str, str]
_DIR = click.Path(path_type=Path, file_okay=False)


@click.command(context_settings={"max_content_width": 100})
@click.option("--repo", type=_DIR, help="A local git repository (one patch).")
@click.option("--base", help="The base revision (one patch).")
@click.option("--patch", "patch_file", type=_FILE, help="The candidate's unified diff.")
@click.option("--head", help="A head revision: the patch is its diff from --base.")
@click.option("--intent", help="The PR text or issue: TEXT or @FILE (annotates, never decides).")
@click.option(
    "--fail-to-pass",
    "f2p",
    metavar="IDS|@FILE|@base:PATH",
    help="pytest node ids that must pass at head: comma-separated, @FILE (one a line, on this "
    "host) or @base:PATH (one a line, the repository's file at the base revision).",
)
@click.option(
    "--pass-to-pass",
    "p2p",
    metavar="IDS|@FILE|@base:PATH|auto",
    default="auto",
    show_default=True,
    help="Ids that must not regress (as --fail-to-pass), or auto: every test passing in every "
    "base run.",
)
@click.option("--test-patch", type=_FILE, help="Hidden tests, applied after the candidate's patch.")
@click.option("--lockfile", help="The lockfile's path in the repository (read at base).")
@click.option("--protect", metavar="GLOBS", help="Protected paths, comma-separated (replaces "
              "the defaults: tests, conftest.py, pytest.ini, tox.ini, setup.cfg, .github, "
              "pyproject's pytest section).")  # fmt: skip
@click.option("--protect-mode", type=click.Choice(["fail", "strip"]), default="fail",
              show_default=True, help="Touching protected paths fails, or those files are "
              "dropped from the patch and the rest graded (said on the row).")  # fmt: skip
@click.option("--gates", type=_FILE, help="gates.jsonl: many patches, one a line.")
@click.option("--swebench", type=_FILE, help="SWE-bench instances (JSON Lines).")
@click.option("--predictions", type=_FILE, help="SWE-bench predictions (.jsonl or .json).")
@click.option("--repos", type=_DIR, help="Dir of clones named <owner>__<name> (--swebench).")
@click.option("--out", type=_FILE, help="gate.jsonl to write (default: stdout).")
@click.option("--report", type=_FILE, help="SWE-bench report.json to write.")
@click.option("--sarif", "sarif_path", type=_FILE, help="SARIF 2.1.0 of the static findings.")
@click.option("--junit", "junit_path", type=_FILE, help="JUnit XML, one case per test id.")
@click.option("--comment", "comment_path", type=_FILE, help="A Markdown summary (comment.md).")
@click.option("--base-runs", type=click.IntRange(1, 50), default=3, show_default=True,
              help="Runs of base; tests whose status differs are quarantined.")  # fmt: skip
@click.option("--env", "env_dir", type=_DIR, help="A prepared virtual environment for the tests.")
@click.option("--env-cache", type=_DIR, help="Where built environments are cached.")
@click.option("--timeout", type=click.FloatRange(1, 7200), default=900, show_default=True,
              help="Seconds per pytest run.")  # fmt: skip
@click.option("--memory-mb", type=click.IntRange(256, 65536), default=4096, show_default=True,
              help="Memory of each test run's whole process tree.")  # fmt: skip
@click.option("--tree-mb", type=click.IntRange(16, 65536), default=1024, show_default=True,
              help="Size of the in-memory copy of the tree a test run works in.")  # fmt: skip
@click.option("--no-static", is_flag=True, help="Skip the differential static layers.")
@click.option("--advisories", type=click.Path(path_type=Path), help="An OSV advisory database "
              "(directory or osv.dev zip) for the deps layer: dependencies a patch adds or bumps "
              "into a known vulnerability are new findings, bumped out of one fixed.")  # fmt: skip
@click.option("--no-install", is_flag=True, help="Do not build and install the package under "
              "test (by default, when base declares a build system, its wheel is built in the "
              "sandbox with base's build backend and installed for every test run).")  # fmt: skip
@click.option("--filter-mode", type=click.Choice(["added", "diff_context", "file", "nofilter"]),
              default="added", show_default=True, help="Which new findings count.")  # fmt: skip
@click.option(
    "--judge",
    "use_judge",
    is_flag=True,
    help="Annotate each row with the judge's reading of the diff against --intent (patch "
    "rubric; endpoint from GRADEBOX_JUDGE_BASE_URL, GRADEBOX_JUDGE_API_KEY, GRADEBOX_JUDGE_MODEL).",
)
@click.option("--static-policy", metavar="FILE|base:PATH", help="TOML or JSON with fail_on / "
              "review_on selectors for the counted new findings (default: the patch policy): "
              "a FILE on this host, or base:PATH, the repository's file at the base revision "
              "(one patch; never the head's).")  # fmt: skip
@click.option("--static-policy-toml", metavar="TOML", help="The static policy as TOML text "
              "(e.g. a workflow input), instead of --static-policy.")  # fmt: skip
@click.option("--rules-origin", type=click.Choice(["command-line", "workflow"]),
              default="command-line", show_default=True, help="Who gave the rules not read at "
              "base (ids, TOML text, host files), as each row's `rules` records it; the Action "
              "says workflow.")  # fmt: skip
@click.option("--post", type=click.Choice(["github"]), help="Also post the result from the "
              "GitHub Actions environment: one sticky PR comment, a check run `gradebox` with "
              "annotations on changed lines, the job summary. Failures are reported on stderr "
              "and never change the exit code.")  # fmt: skip
@click.option("--post-strict", is_flag=True, help="With --post: a posting failure exits 2.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON on stdout.")
@sandbox_python_option
@exit_codes
def gate(**opts: object) -> None:
    """Gate patches: apply to a clean base, run the tests in the sandbox, compare, decide.

    A patch passes when it applies, changes no existing test (new tests are run
    and reported), every FAIL_TO_PASS test passes, no PASS_TO_PASS test
    regresses (flaky tests quarantined), the planted tripwire tests behave, and
    no new static finding fails the policy. Tests run under pytest in a
    fresh bubblewrap sandbox per run, in a cached virtual environment built
    from the base revision's lockfile (wheels only). Rows go to --out.

    Rules (the static policy, FAIL_TO_PASS, PASS_TO_PASS) are read from the
    base revision (base:PATH, @base:PATH), from this command line, or are the
    defaults; each row's `rules` says where each was read from
    (`base:<commit>:<path>`, `command line`, `command line:<file>`, `default`).
    With a base: rule the base is pinned to the commit it was read at.

    Exit 0 when every patch passes, 1 when any fails or needs review, 2 for bad
    input or an infrastructure error.

    \b
    Examples:
      gradebox gate --repo calc --base main --patch fix.diff \\
                    --fail-to-pass tests/test_ops.py::test_mean --out gate.jsonl
      gradebox gate --repo . --base main --head my-branch \\
                    --fail-to-pass @base:.gradebox/fail_to_pass.txt \\
                    --static-policy base:.gradebox/policy.toml
      gradebox gate --gates gates.jsonl --out gate.jsonl --sarif gate.sarif
      gradebox gate --swebench instances.jsonl --predictions preds.jsonl \\
                    --repos clones/ --out gate.jsonl --report report.json
    """  # noqa: D301 - click needs a real \b
    reader = _reader(opts)
    policy, policy_rule = _policy(opts, reader)
    specs = _with_rules(_specs(opts, reader), policy_rule, reader)
    config = _config(opts, policy)
    specs = _with_advisories(specs, config)
    rows: list[GateRow] = []
    out = opts["out"]
    judge = _judge(os.environ) if opts["use_judge"] else None
    with _open(out if isinstance(out, Path) else None) as sink, contextlib.ExitStack() as stack:
        if judge is not None:
            stack.callback(judge.close)
        if config.static is not None and isinstance(config.static.advisories, AdvisoryStore):
            stack.callback(config.static.advisories.close)
        for spec in specs:
            row = run_gate(spec, config, judge)
            rows.append(row)
            sink.write(json.dumps(row.to_row(), ensure_ascii=False) + "\n")
            sink.flush()
    _reports(rows, opts)
    if opts["post"] == "github":
        from gradebox.github import post_from_env  # noqa: PLC0415 - only when posting

        for line in post_from_env(rows, os.environ, strict=bool(opts["post_strict"])):
            click.echo(f"gradebox gate: {line}", err=True)
    _summary(rows, as_json=bool(opts["as_json"]), rows_on_stdout=out is None)
    if any(r.reason == "infra_error" for r in rows):
        sys.exit(EXIT_ERROR)
    sys.exit(EXIT_OK if all(r.verdict == "pass" for r in rows) else EXIT_FAILED)


def _reader(o: dict[str, object]) -> RuleReader:
    origin: Origin = "workflow" if o["rules_origin"] == "workflow" else "command line"
    one = bool(o["repo"]) and not (o["gates"] or o["swebench"])
    repo = _path(o["repo"]) if one else None
    return RuleReader(origin, repo=repo, base=_opt(o["base"]) if one else None, cwd=Path.cwd())


def _policy(o: dict[str, object], reader: RuleReader) -> tuple[Policy | None, Rule | None]:
    """The static policy (``None``: the default) and its ``rules`` entry (``None``: static off)."""
    given, text = _opt(o["static_policy"]), _opt(o["static_policy_toml"])
    if given is not None and text is not None:
        raise BadInput(["give one of --static-policy and --static-policy-toml"])
    if o["no_static"]:
        return None, None
    if given is None and text is None:
        return None, ("static_policy", "default")
    from gradebox.pipeline.static import parse_policy  # noqa: PLC0415 - only with a policy

    if text is not None:
        rule = reader.inline(text)
        return parse_policy(text, "--static-policy-toml"), ("static_policy", rule.source)
    assert given is not None  # noqa: S101 - one of the two
    rule = reader.read(given, "--static-policy")
    policy = parse_policy(rule.text, rule.source, as_json=given.endswith(".json"))
    return policy, ("static_policy", rule.source)


def _ids(value: str | None, reader: RuleReader, what: str) -> tuple[tuple[str, ...], str | None]:
    """Node ids and where they were read from (``None``: none given)."""
    if not value:
        return (), None
    if value.startswith("@"):
        rule = reader.read(value[1:], what)
        return parse_id_lines(rule.text, what), rule.source
    return parse_ids(value, Path.cwd(), what), reader.origin


def _with_rules(specs: list[GateSpec], policy: Rule | None, reader: RuleReader) -> list[GateSpec]:
    """Each spec with the policy's source; pinned to the base commit rules were read at."""
    extra = () if policy is None else (policy,)
    base = reader.commit
    return [
        dataclasses.replace(spec, rules=(*spec.rules, *extra), base=base or spec.base)
        for spec in specs
    ]


def _from_file(spec: GateSpec, reader: RuleReader) -> GateSpec:
    """A gates or SWE-bench file's spec, its test ids' source recorded (``file:line``)."""
    given = f"{reader.origin}:{spec.where}"
    auto = not isinstance(spec.tests.pass_to_pass, tuple)  # "auto"
    rules = (("fail_to_pass", given), ("pass_to_pass", "auto" if auto else given))
    return dataclasses.replace(spec, rules=rules)


def _specs(o: dict[str, object], reader: RuleReader) -> list[GateSpec]:
    modes = [bool(o["repo"] or o["base"]), bool(o["gates"]), bool(o["swebench"])]
    if sum(modes) != 1:
        raise BadInput(["give one of: --repo/--base (one patch), --gates FILE, --swebench FILE"])
    if o["gates"]:
        return [_from_file(s, reader) for s in load_gates(_path(o["gates"]))]
    if o["swebench"]:
        if not o["predictions"] or not o["repos"]:
            raise BadInput(["--swebench needs --predictions FILE and --repos DIR"])
        found = load_swebench(_path(o["swebench"]), _path(o["predictions"]), _path(o["repos"]))
        return [_from_file(s, reader) for s in found]
    if not o["repo"] or not o["base"]:
        raise BadInput(["one patch needs both --repo DIR and --base REV"])
    if bool(o["patch_file"]) == bool(o["head"]):
        raise BadInput(["give exactly one of --patch FILE and --head REV"])
    here = Path.cwd()
    f2p, f2p_source = _ids(_opt(o["f2p"]), reader, "--fail-to-pass")
    p2p_raw = str(o["p2p"])
    p2p: tuple[str, ...] | Literal["auto"] = "auto"
    p2p_source: str | None = "auto"
    if p2p_raw != "auto":
        p2p, p2p_source = _ids(p2p_raw, reader, "--pass-to-pass")
    rules = [(name, src) for name, src in (("fail_to_pass", f2p_source),
             ("pass_to_pass", p2p_source)) if src is not None]  # fmt: skip
    return [
        GateSpec(
            id=_path(o["patch_file"]).stem if o["patch_file"] else str(o["head"]),
            repo=_path(o["repo"]),
            base=str(o["base"]),
            patch=_read(o["patch_file"], "--patch"),
            head=str(o["head"]) if o["head"] else None,
            tests=TestIds(f2p, p2p),
            intent=read_text_arg(_opt(o["intent"]), here, "--intent"),
            test_patch=_read(o["test_patch"], "--test-patch"),
            lockfile=_opt(o["lockfile"]),
            protect=None
            if not o["protect"]
            else tuple(p.strip() for p in str(o["protect"]).split(",") if p.strip()),
            where="command line",
            rules=tuple(rules),
        )
    ]


def _config(o: dict[str, object], policy: Policy | None) -> GateConfig:
    try:
        python = find_python(_opt(o["sandbox_python"]))
    except IsolationUnavailable as exc:
        raise SetupError(str(exc)) from exc
    cache = _path(o["env_cache"]) if o["env_cache"] else default_cache()
    static = None
    if not o["no_static"]:
        tools = StaticConfig(cache_dir=cache.parent / "mypy-cache")  # stdlib analysed once
        static = StaticSettings(config=tools, filter_mode=o["filter_mode"])  # type: ignore[arg-type]
        if policy is not None:
            static = dataclasses.replace(static, policy=policy)
        if o.get("advisories"):
            from gradebox.pipeline.static import open_advisories  # noqa: PLC0415 - only with it

            store = open_advisories(_path(o["advisories"]), cache.parent)
            static = dataclasses.replace(static, advisories=store)
    limits = CommandLimits(
        timeout_s=float(str(o["timeout"])),
        memory_mb=int(str(o["memory_mb"])),
        tmp_mb=int(str(o["tree_mb"])),
    )
    return GateConfig(
        limits=limits,
        base_runs=int(str(o["base_runs"])),
        protect_mode=o["protect_mode"],  # type: ignore[arg-type]
        env=_path(o["env_dir"]) if o["env_dir"] else None,
        env_cache=cache,
        python=python,
        static=static,
        install=not o["no_install"],
    )


def _with_advisories(specs: list[GateSpec], config: GateConfig) -> list[GateSpec]:
    """Each spec with the advisory snapshot it is checked against, as its rows record it."""
    store = config.static.advisories if config.static is not None else None
    if not isinstance(store, AdvisoryStore):
        return specs
    snap = store.snapshot
    used = ("advisories", f"{snap.source} {snap.date} {snap.digest}")
    return [dataclasses.replace(s, rules=(*s.rules, used)) for s in specs]


def _judge(environ: Mapping[str, str]) -> Judge:
    from judge import Judge, JudgeConfig  # noqa: PLC0415 - loads the client only with --judge
    from judge.errors import JudgeConfigError  # noqa: PLC0415

    try:
        return Judge(dataclasses.replace(JudgeConfig.from_env(environ), no_cache=True))
    except JudgeConfigError as exc:  # JudgeNotConfigured included
        raise SetupError(f"--judge: {exc}") from exc


def _reports(rows: list[GateRow], o: dict[str, object]) -> None:
    writes: list[tuple[object, bytes]] = [
        (o["report"], json.dumps(swebench_report(rows), indent=2).encode() + b"\n"),
        (o["sarif_path"], json.dumps(sarif(rows), indent=2).encode() + b"\n"),
        (o["junit_path"], junit(rows)),
        (o["comment_path"], comment(rows).encode("utf-8")),
    ]
    for target, data in writes:
        if isinstance(target, Path):
            try:  # hidden test ids and their failures: the owner's only, as --out
                with private_binary(target) as fh:
                    fh.write(data)
            except OSError as exc:
                raise SetupError(f"cannot write {target}: {exc}") from exc


def _summary(rows: list[GateRow], *, as_json: bool, rows_on_stdout: bool) -> None:
    counts = {v: sum(r.verdict == v for r in rows) for v in ("pass", "fail", "needs_review")}
    summary = {"gates": len(rows), **counts, "resolved": sum(r.resolved for r in rows)}
    if as_json and not rows_on_stdout:
        click.echo(json.dumps(summary))
    else:
        click.echo(
            f"{len(rows)} gate(s): {counts['pass']} pass, {counts['fail']} fail, "
            f"{counts['needs_review']} needs review",
            err=True,
        )


class _open:
    """``--out`` as a text sink (stdout without a path)."""

    def __init__(self, path: Path | None) -> None:
        self._path = path
        self._fh: IO[str] | None = None

    def __enter__(self) -> IO[str]:
        if self._path is None:
            return sys.stdout
        try:
            self._fh = private_text(self._path)  # rows name the hidden tests: 0600
        except OSError as exc:
            raise SetupError(f"cannot write {self._path}: {exc}") from exc
        return self._fh

    def __exit__(self, *exc: object) -> None:
        if self._fh is not None:
            self._fh.close()


def _path(value: object) -> Path:
    assert isinstance(value, Path)  # noqa: S101 - click's path_type
    return value


def _opt(value: object) -> str | None:
    return None if value is None else str(value)


def _read(value: object, what: str) -> str | None:
    if value is None:
        return None
    try:
        return _path(value).read_text(encoding="utf-8")
    except (OSError, UnicodeError) as exc:
        raise BadInput([f"{what}: cannot read {value}: {exc}"]) from exc

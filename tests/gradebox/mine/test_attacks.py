"""A hostile repository: its own git configuration, hooks and attributes never run while mining.

The repository mined is as untrusted as a patch (issue 25). Here its
``.git/config`` puts a command in every git key that runs one (the gate's own
attack payload, ``tests/gradebox/patches/attacks/git_config.txt``), every hook
is a marker command, and the tree commits ``.gitattributes`` naming those
filter and diff drivers. Mining with ``--validate`` (mining's reads and runs,
then three gates) creates no marker and leaves ``.git`` byte-identical; the
control at the end shows the payload does run when git itself is asked to diff.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gradebox.mine import MineConfig, Miner

PAYLOAD = Path(__file__).parents[1] / "patches" / "attacks" / "git_config.txt"
HOOKS = (
    "post-checkout", "pre-commit", "post-commit", "post-merge", "post-rewrite", "pre-auto-gc",
    "reference-transaction", "post-index-change", "fsmonitor-watchman",
)  # fmt: skip
ATTRIBUTES = "* filter=x diff=x merge=x\n"


def test_mining_never_runs_what_the_repository_configures(
    history: Any, tmp_path: Path, mine_config: Callable[..., MineConfig]
) -> None:
    history.commit("attributes", {".gitattributes": ATTRIBUTES})
    fix = history.fix_mean()
    markers = tmp_path / "markers"
    markers.mkdir()
    with (history.root / ".git" / "config").open("a") as fh:
        fh.write(PAYLOAD.read_text().format(m=markers))
    for name in HOOKS:
        hook = history.root / ".git" / "hooks" / name
        hook.write_text(f"#!/bin/sh\ntouch {markers}/hook.{name}\n")
        hook.chmod(0o755)
    before = history.hash()
    miner = Miner(mine_config(history.root, validate=True))
    outcomes = {o.commit.sha: o for o in miner.run(miner.commits())}
    assert sorted(p.name for p in markers.iterdir()) == []
    assert history.hash() == before
    kept = outcomes[fix]
    assert kept.kept and kept.validation is not None and kept.validation.agrees, kept
    # The control: git itself, asked for a diff in this repository, runs the payload.
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "GIT_CONFIG_NOSYSTEM": "1"}
    subprocess.run(["git", "diff", f"{fix}~1", fix], cwd=history.root, env=env,
                   capture_output=True, check=False)  # fmt: skip
    assert list(markers.iterdir()), "the payload never ran: the attack proves nothing"

"""The pre-commit hook's script: gate the staged changes against ``HEAD``.

``.pre-commit-hooks.yaml`` runs ``python -m gradebox.github.precommit`` with the
user's ``args:`` (any ``gradebox gate`` options: ``--fail-to-pass``,
``--no-static``, ``--filter-mode``, ``--lockfile``...). The staged diff
(``git diff --cached HEAD``, plain whatever the user's diff configuration) is the
patch; ``HEAD`` is the base; the gate runs in its private checkout, so unstaged
edits and untracked files play no part. A fix that adds its own test (a new test
file, new test functions) is the normal case: the gate runs those tests at head
and reports them; changes to existing tests and test configuration stay
protected.
One base run by default (``--base-runs 1``; a later ``--base-runs`` in ``args``
wins). Nothing staged, or no ``HEAD`` yet, passes at once. On failure the
gate's Markdown summary is printed.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

__all__ = ["main"]

_PLAIN_DIFF = (
    "--binary", "--no-color", "--no-ext-diff", "--no-textconv", "--no-relative",
    "--src-prefix=a/", "--dst-prefix=b/", "--submodule=short",
)  # fmt: skip
"""A diff the gate can apply whatever the user's configuration (``diff.noprefix``,
``diff.relative``, ``diff.submodule``, textconv drivers, external diff tools)."""


def _git(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)


def main(argv: Sequence[str] | None = None) -> int:
    """Gate the staged changes; the gate's exit code (0 pass, 1 failed, 2 error).

    Args:
        argv: ``gradebox gate`` options to add (default: the command line's).
    """
    extra = list(sys.argv[1:] if argv is None else argv)
    top = _git("rev-parse", "--show-toplevel")
    if top.returncode != 0:
        print("gradebox pre-commit: not in a git repository", file=sys.stderr)
        return 2
    root = Path(top.stdout.strip())
    if _git("rev-parse", "--verify", "-q", "HEAD", cwd=root).returncode != 0:
        print("gradebox pre-commit: no HEAD yet (first commit): nothing to gate against")
        return 0
    diff = _git("diff", "--cached", *_PLAIN_DIFF, "HEAD", cwd=root)
    if diff.returncode != 0:
        print(f"gradebox pre-commit: git diff failed: {diff.stderr.strip()}", file=sys.stderr)
        return 2
    if not diff.stdout.strip():
        return 0
    with tempfile.TemporaryDirectory(prefix="gradebox-pre-commit-") as tmp:
        out = Path(tmp)
        (out / "staged.diff").write_text(diff.stdout, encoding="utf-8")
        argv_ = [sys.executable, "-c", "from gradebox.cli import main; main()", "gate",
                 "--repo", str(root), "--base", "HEAD", "--patch", str(out / "staged.diff"),
                 "--out", str(out / "gate.jsonl"), "--comment", str(out / "comment.md"),
                 "--base-runs", "1", *extra]  # fmt: skip
        code = subprocess.run(argv_, cwd=root, check=False).returncode
        summary = out / "comment.md"
        if code != 0 and summary.exists():
            print(summary.read_text(encoding="utf-8"))
    return code


if __name__ == "__main__":
    sys.exit(main())

"""Building the seccomp filter: no helper process, the same program as libseccomp's own loader."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytest.importorskip("pyseccomp")

# Each runs in a fresh interpreter: pyseccomp resolves its libraries once, at import.
_BUILD = """
import json, sys
spawned = []
def hook(event, args):
    if event in ("subprocess.Popen", "os.posix_spawn", "os.exec", "os.fork", "os.system"):
        spawned.append([event, str(args[0])[:80]])
sys.addaudithook(hook)
if sys.argv[1] == "plain":  # pyseccomp's own lookup: ctypes.util.find_library
    import pyseccomp
from sandbox.seccomp import compile_filter
program = compile_filter()
print(json.dumps({"program": program.hex(), "spawned": spawned}))
"""


def _build(mode: str) -> dict[str, object]:
    out = subprocess.run(
        [sys.executable, "-c", _BUILD, mode], capture_output=True, text=True, check=True
    )
    result: dict[str, object] = json.loads(out.stdout)
    return result


def test_the_filter_is_built_without_starting_a_process() -> None:
    # find_library runs `ldconfig -p` (twice for pyseccomp's two libraries): ~10 ms of
    # wall and CPU at every start-up of a bwrap sandbox.
    assert _build("soname")["spawned"] == []


def test_the_filter_is_the_program_libseccomp_builds_when_found_by_ldconfig() -> None:
    plain = _build("plain")
    assert plain["spawned"], "the reference run should show pyseccomp's own lookup"
    assert _build("soname")["program"] == plain["program"]

"""One command in a fresh bubblewrap sandbox: each promise of sandbox.command, attacked.

Every test runs a real program under real bubblewrap, as a hostile patch's
test suite would. They need bwrap, user namespaces and a cgroup (root here).
"""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
import time
from pathlib import Path

import pytest

from sandbox.command import CommandLimits, CommandResult, Mount, run_command

PY = "/usr/bin/python3"


@pytest.fixture
def work() -> Path:
    # Under /tmp directly: pytest's own tmp dirs are closed to the sandbox's uid.
    d = Path(tempfile.mkdtemp(prefix="gbx-cmd-"))
    d.chmod(0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def py(code: str, work: Path, **kw: object) -> CommandResult:
    mounts = [Mount(work, "/repo", writable=True), *kw.pop("mounts", [])]  # type: ignore[misc]
    return run_command([PY, "-c", code], cwd="/repo", mounts=mounts, **kw)  # type: ignore[arg-type]


def test_the_command_runs_as_nobody_and_writes_its_mount(work):
    res = py("import os; open('out.txt', 'w').write(str(os.getuid())); print('hi')", work)
    assert (res.status, res.exit_code, res.stdout) == ("exited", 0, "hi\n")
    assert (work / "out.txt").read_text() == "65534"


def test_the_graders_environment_is_not_inherited(work, monkeypatch):
    monkeypatch.setenv("GRADEBOX_JUDGE_API_KEY", "sk-secret-canary")
    res = py(
        "import os; print(sorted(os.environ)); print(os.environ.get('X'))", work, env={"X": "1"}
    )
    assert "GRADEBOX_JUDGE_API_KEY" not in res.stdout and "sk-secret" not in res.stdout
    assert res.stdout.splitlines()[1] == "1"


def test_no_network_not_even_loopback(work):
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    port = listener.getsockname()[1]
    code = (
        "import socket\ns = socket.socket()\ns.settimeout(2)\n"
        f"try:\n    s.connect(('127.0.0.1', {port})); print('connected')\n"
        "except OSError as e:\n    print(type(e).__name__)\n"
    )
    try:
        res = py(code, work)
    finally:
        listener.close()
    assert res.stdout.strip() != "connected"
    assert res.exit_code == 0


def test_readonly_mounts_and_the_system_cannot_be_written(work):
    ro = Path(tempfile.mkdtemp(prefix="gbx-ro-"))
    ro.chmod(0o755)
    (ro / "keep.txt").write_text("original")
    code = (
        "out = []\n"
        "for p in ('/env/keep.txt', '/env/new.txt', '/usr/evil', '/etc/evil', '/evil'):\n"
        "    try:\n        open(p, 'w').write('x'); out.append(p)\n"
        "    except OSError:\n        pass\n"
        "print(out)\n"
    )
    res = py(code, work, mounts=[Mount(ro, "/env")])
    assert res.stdout.strip() == "[]", res
    assert (ro / "keep.txt").read_text() == "original"
    assert sorted(os.listdir(ro)) == ["keep.txt"]


def test_host_files_outside_the_mounts_are_invisible(work):
    secret = Path(tempfile.mkdtemp(prefix="gbx-secret-"))
    secret.chmod(0o755)
    (secret / "hidden_tests.py").write_text("CANARY")
    code = f"import os; print(os.path.exists({str(secret)!r}), os.path.exists('/root'))"
    assert py(code, work).stdout.strip() == "False False"


def test_the_wall_clock_kills_the_tree_children_included(work):
    code = (
        "import os, time\n"
        "if os.fork() == 0:\n"
        "    os.setsid(); time.sleep(3); open('/repo/late.txt', 'w').write('escaped')\n"
        "    os._exit(0)\n"
        "time.sleep(60)\n"
    )
    t0 = time.monotonic()
    res = py(code, work, limits=CommandLimits(timeout_s=1.0))
    assert res.status == "timeout" and res.exit_code is None
    assert time.monotonic() - t0 < 10
    time.sleep(3.5)
    assert not (work / "late.txt").exists()


def test_a_fork_bomb_hits_the_process_cap_and_ends(work):
    code = (
        "import os, time\n"
        "for _ in range(400):\n"
        "    try:\n        pid = os.fork()\n    except OSError:\n        break\n"
        "    if pid == 0:\n        time.sleep(30); os._exit(0)\n"
        "print('done')\n"
    )
    res = py(code, work, limits=CommandLimits(timeout_s=20, max_procs=32))
    assert "processes" in res.caps_hit
    assert res.wall_s < 20


def test_memory_is_capped_for_the_whole_tree(work):
    code = "x = bytearray(600 * 1024 * 1024); print('allocated')"
    res = py(code, work, limits=CommandLimits(memory_mb=256))
    assert "allocated" not in res.stdout
    assert res.exit_code != 0


def test_output_floods_are_cut(work):
    res = py("import sys\nfor _ in range(20000): sys.stdout.write('x' * 100 + '\\n')", work)
    assert len(res.stdout) < 70_000 and res.stdout.endswith("[output truncated]")


def test_nothing_survives_into_the_next_sandbox(work):
    py("open('/tmp/left', 'w').write('x'); open('/dev/shm/left', 'w').write('x')", work)
    code = "import os; print(os.path.exists('/tmp/left'), os.path.exists('/dev/shm/left'))"
    assert py(code, work).stdout.strip() == "False False"


def test_a_missing_program_is_a_nonzero_exit_not_a_crash(work):
    res = run_command(["/nonexistent/python"], cwd="/repo", mounts=[Mount(work, "/repo", True)])
    assert res.status == "exited" and res.exit_code not in (0, None)

"""One command in a fresh bubblewrap sandbox: each promise of sandbox.command, attacked.

Every test runs a real program under real bubblewrap, as a hostile patch's
test suite would. They need bwrap, user namespaces and a cgroup (root here).
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from waiting import wait_until

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


@pytest.fixture
def host_dir() -> Iterator[Path]:
    """A fresh host directory straight below the temporary directory, removed after."""
    made = Path(tempfile.mkdtemp(prefix="gbx-host-"))
    try:
        yield made
    finally:
        shutil.rmtree(made, ignore_errors=True)


def test_readonly_mounts_and_the_system_cannot_be_written(work, host_dir):
    ro = host_dir
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


def test_host_files_outside_the_mounts_are_invisible(work, host_dir):
    secret = host_dir
    secret.chmod(0o755)
    (secret / "hidden_tests.py").write_text("CANARY")
    code = f"import os; print(os.path.exists({str(secret)!r}), os.path.exists('/root'))"
    assert py(code, work).stdout.strip() == "False False"


def _alive(marker: str) -> list[str]:
    """Host processes (zombies aside) whose command line holds ``marker``."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker.encode() in cmdline and state not in ("Z", "X") and int(pid) != os.getpid():
            found.append(pid)
    return found


def test_the_wall_clock_kills_the_tree_children_included(work):
    marker = "gbx-cmd-tree-" + secrets.token_hex(6)  # in the command line of the whole tree
    code = (
        f"import os, time  # {marker}\n"
        "if os.fork() == 0:\n"
        "    os.setsid(); time.sleep(30); open('/repo/late.txt', 'w').write('escaped')\n"
        "    os._exit(0)\n"
        "time.sleep(60)\n"
    )
    t0 = time.monotonic()
    res = py(code, work, limits=CommandLimits(timeout_s=1.0))
    assert res.status == "timeout" and res.exit_code is None
    # The alternative is the 30 s child or the 60 s parent: a busy machine never gets there.
    assert time.monotonic() - t0 < 20
    # The event, not a nap: the tree is gone (an escaped child would live 30 s), so the
    # late write can never happen; the deadline is the kernel's teardown on a busy machine.
    wait_until(lambda: not _alive(marker), timeout=15, what=f"the tree of {marker} to go")
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


def test_a_copied_mount_is_private_and_its_size_is_capped(work):
    (work / "keep.txt").write_text("original")
    code = (
        "import os\nopen('keep.txt', 'w').write('changed')\nn = 0\n"
        "try:\n    for i in range(100):\n"
        "        open(f'fill{i}', 'wb').write(b'x' * 4 * 1024 * 1024); n += 1\n"
        "except OSError as e:\n    print('stopped', type(e).__name__)\n"
        "print(open('keep.txt').read(), n)\n"
    )
    res = run_command(
        [PY, "-c", code], cwd="/repo", mounts=[Mount(work, "/repo", copy=True)],
        limits=CommandLimits(tmp_mb=64),
    )  # fmt: skip
    lines = res.stdout.split()
    assert lines[:2] == ["stopped", "OSError"] and lines[2] == "changed", res
    assert int(lines[3]) <= 16  # 64 MB of tmpfs, 4 MB a file
    assert (work / "keep.txt").read_text() == "original"
    assert sorted(os.listdir(work)) == ["keep.txt"]  # nothing reached the host disk


def test_read_only_parts_of_a_copy_stay_read_only(work):
    (work / "tests").mkdir()
    (work / "tests" / "t.py").write_text("assert True\n")
    code = (
        "try:\n    open('tests/t.py', 'w').write('assert False')\n    print('wrote')\n"
        "except OSError:\n    print('refused')\nprint(open('tests/t.py').read().strip())\n"
    )
    mounts = [Mount(work, "/repo", copy=True), Mount(work / "tests", "/repo/tests")]
    res = run_command([PY, "-c", code], cwd="/repo", mounts=mounts)
    assert res.stdout.split("\n")[:2] == ["refused", "assert True"], res


def test_the_result_file_comes_back_capped_and_stdout_goes_to_stderr(work):
    code = "print('chatter'); open('/tmp/r.xml', 'w').write('R' * 5000)"
    res = run_command([PY, "-c", code], cwd="/tmp", result_file="/tmp/r.xml", result_bytes=100)
    assert (res.exit_code, res.result, res.stdout) == (0, b"R" * 100, "")
    assert "chatter" in res.stderr
    link = "import os; os.symlink('/dev/zero', '/tmp/r.xml')"
    res = run_command([PY, "-c", link], cwd="/tmp", result_file="/tmp/r.xml", result_bytes=1000)
    assert res.result == b"\0" * 1000
    res = run_command([PY, "-c", "import sys; sys.exit(3)"], cwd="/tmp", result_file="/tmp/none")
    assert (res.exit_code, res.result) == (3, b"")

"""One patch gate in a process of its own: a fresh interpreter, no secret, a time limit.

Why a process, and what goes in and out: see :mod:`gradebox.service.api.gates`.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import pickle
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gradebox.patches import GateConfig, GateRow, GateSpec, TestIds
from gradebox.patches.child import BOOTSTRAP
from gradebox.service.engine.lanes import Stopped

__all__ = [
    "Ended",
    "GateProcess",
    "Stopped",
    "child_env",
    "gate_spec",
    "infra_row",
    "settle",
    "time_limit",
]

_log = logging.getLogger("gradebox.service")

_ENV_NAMES = frozenset({
    "PATH", "HOME", "LANG", "LANGUAGE", "TZ", "XDG_CACHE_HOME", "SSL_CERT_FILE", "SSL_CERT_DIR",
    "http_proxy", "https_proxy", "no_proxy", "all_proxy",
    "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY",
})  # fmt: skip
_ENV_PREFIXES = ("LC_", "PIP_")
_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSW|CREDENTIAL|AUTH", re.IGNORECASE)
_ENV_BUILD_S = 3600.0
"""pip's two steps of an environment build, each at its limit (:mod:`gradebox.patches.env`)."""
_SLACK_S = 600.0
_TICK_S = 1.0
"""How often a worker waiting for a gate process checks that its app still runs."""
_RESULT_MAX = 16 * 1024 * 1024
"""Most bytes of a gate process's result read back (a row is far smaller)."""


def time_limit(config: GateConfig) -> float:
    """A generous wall clock for one gate's process under ``config``.

    Every sandboxed run at its limit (each base run and the head run, and as many
    again for their collections), an environment build at pip's limits, and ten
    minutes for the rest: only a stuck gate reaches it.
    """
    runs = 2 * (config.base_runs + 1)
    return runs * config.limits.timeout_s + _ENV_BUILD_S + _SLACK_S


def child_env(environ: Mapping[str, str], tmp: Path) -> dict[str, str]:
    """A gate process's environment: what git, pip and the sandbox need, and no secret.

    Kept from ``environ`` (the server's): ``PATH``, ``HOME``, the locale, CA
    certificates, proxies and pip's own settings (building a test environment
    may need the operator's index and proxy); never a name that says key,
    token, secret, password, credential or auth (``GRADEBOX_JUDGE_API_KEY``,
    ``OPENAI_API_KEY``: service gates do not judge), nor any other ``GRADEBOX_``
    setting. ``TMPDIR`` is ``tmp``: what the gate leaves there goes with it.
    """
    kept = {
        name: value for name, value in environ.items()
        if (name in _ENV_NAMES or name.startswith(_ENV_PREFIXES))
        and not _SECRET_NAME.search(name)
    }  # fmt: skip
    return {**kept, "TMPDIR": str(tmp)}


@dataclass(frozen=True, slots=True)
class Ended:
    """How a gate's process ended."""

    result: dict[str, Any] | None
    """What it wrote (``None``: nothing readable)."""
    code: int | None
    """Its exit status (``None``: killed at its time limit)."""


class GateProcess:
    """One gate in a fresh interpreter of its own; a context manager (kills and cleans up)."""

    pid: int
    """The process id."""

    def __init__(self, spec: GateSpec, config: GateConfig) -> None:
        """Start the process (it waits for its spec: :meth:`wait` gives it)."""
        self._payload = pickle.dumps((spec, config), protocol=pickle.HIGHEST_PROTOCOL)
        self._box = Path(tempfile.mkdtemp(prefix="gradebox-gateproc-"))
        self._box.chmod(0o755)  # the sandbox's uid reaches the gate's scratch dirs below it
        tmp = self._box / "tmp"
        tmp.mkdir(mode=0o755)
        tmp.chmod(0o755)
        # EOF on ``alive`` tells the process that the server is gone: the server holds its
        # write end (never inherited: ``os.pipe`` fds are not) until the process has ended.
        alive, self._alive = os.pipe()
        try:
            with (self._box / "result.json").open("wb") as out:
                self._proc = subprocess.Popen(
                    [sys.executable, "-I", "-c", BOOTSTRAP, _import_path(), str(alive)],
                    stdin=subprocess.PIPE, stdout=out, cwd=tmp, env=child_env(os.environ, tmp),
                    pass_fds=(alive,), start_new_session=True,
                )  # fmt: skip
        except BaseException:
            os.close(self._alive)
            shutil.rmtree(self._box, ignore_errors=True)
            raise
        finally:
            os.close(alive)
        self.pid = self._proc.pid

    def wait(self, limit_s: float, *, alive: Callable[[], bool]) -> Ended:
        """Give the process its spec; wait for it to end, at most ``limit_s`` seconds.

        Raises:
            Stopped: ``alive()`` said the app stopped meanwhile (the process is killed).
        """
        deadline = time.monotonic() + limit_s
        payload: bytes | None = self._payload
        while (left := deadline - time.monotonic()) > 0:
            try:
                self._proc.communicate(payload, timeout=min(_TICK_S, left))
            except subprocess.TimeoutExpired:
                payload = None  # given once: communicate() goes on writing what is left
                if not alive():
                    self.kill()
                    raise Stopped("the service stopped") from None
                continue
            return Ended(self._result(), self._proc.returncode)
        self.kill()
        return Ended(None, None)

    def _result(self) -> dict[str, object] | None:
        with (self._box / "result.json").open("rb") as fh:
            raw = fh.read(_RESULT_MAX + 1)
        try:
            result = json.loads(raw) if len(raw) <= _RESULT_MAX else None
        except ValueError:
            return None
        return result if isinstance(result, dict) else None

    def kill(self) -> None:
        """Kill and reap the process's group (it, its helpers; sandboxes die with their parent)."""
        with contextlib.suppress(ProcessLookupError):  # nothing of the group is left
            os.killpg(self._proc.pid, signal.SIGKILL)
        self._proc.communicate()

    def __enter__(self) -> GateProcess:
        return self

    def __exit__(self, *_exc: object) -> None:
        # Also after it ended: a crashed process's helpers (git, pip) are still in its group.
        self.kill()
        os.close(self._alive)
        shutil.rmtree(self._box, ignore_errors=True)


def _import_path() -> str:
    """This process's ``sys.path`` (relative entries made absolute), for the gate's to be."""
    return json.dumps([os.path.abspath(entry) for entry in sys.path])


def settle(gate_id: str, spec_id: str, ended: Ended, limit_s: float) -> dict[str, object]:
    """The gate's row from what its process wrote; anything else is an infrastructure error."""
    result = ended.result or {}
    row, message = result.get("row"), str(result.get("message"))[:4000]
    if isinstance(row, dict) and isinstance(row.get("verdict"), str):
        return row
    if result.get("error") == "setup":  # the sandbox or the environment: nothing was decided
        _log.error("gate %s could not run: %s", gate_id, message[:500])
        return infra_row(spec_id, message[:500])
    if result.get("error") == "internal":
        _log.error("gate %s failed in its process:\n%s", gate_id, message)
        return infra_row(spec_id, "internal error")
    if ended.code is None:
        why = f"the gate's process ran past its {limit_s:g} s limit and was killed"
    else:
        why = f"the gate's process ended without a row (exit status {ended.code})"
    _log.error("gate %s: %s", gate_id, why)
    return infra_row(spec_id, why)


def infra_row(spec_id: str, why: str) -> dict[str, Any]:
    """A gate row that decides nothing: ``needs_review`` with an infrastructure error."""
    return GateRow(spec_id, "needs_review", "infra_error", infra_error=why).to_row()


def gate_spec(data: dict[str, Any]) -> GateSpec:
    """The spec of a gate from its stored JSON."""
    p2p = data["pass_to_pass"]
    return GateSpec(
        id=data["id"], repo=Path(data["path"]), base=data["base"], patch=data["patch"],
        tests=TestIds(tuple(data["fail_to_pass"]), "auto" if p2p == "auto" else tuple(p2p)),
        intent=data.get("intent"), lockfile=data.get("lockfile"),
        protect=None if data.get("protect") is None else tuple(data["protect"]),
        where=f"gate {data['id']}",
    )  # fmt: skip

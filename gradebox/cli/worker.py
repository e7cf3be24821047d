"""``gradebox worker``: join a Dask scheduler with one warm, self-checked sandbox."""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path

import click

from gradebox.cli.errors import exit_codes
from gradebox.cli.options import isolation_option, jobs_option, sandbox_python_option
from gradebox.errors import BadInput, SetupError

__all__ = ["worker"]

_PATH = click.Path(path_type=Path, dir_okay=False, exists=True)


@click.command(context_settings={"max_content_width": 100})
@click.argument("address")
@jobs_option("Sandbox slots: candidates this worker grades at once.")
@isolation_option
@sandbox_python_option
@click.option("--name", help="The worker's name on the scheduler (default: host and pid).")
@click.option("--tls-ca-file", type=_PATH, help="CA that signed the cluster's certificates.")
@click.option("--tls-cert", type=_PATH, help="This worker's certificate (PEM).")
@click.option("--tls-key", type=_PATH, help="This worker's private key (PEM).")
@exit_codes
def worker(
    address: str,
    jobs: int,
    isolation: str,
    sandbox_python: Path | None,
    name: str | None,
    tls_ca_file: Path | None,
    tls_cert: Path | None,
    tls_key: Path | None,
) -> None:
    """Join the Dask scheduler at ADDRESS and grade candidates for `grade --scheduler`.

    The worker opens one sandbox with --jobs slots and proves its isolation (the
    same self-check as `gradebox grade`) before it takes any work; a worker whose
    sandbox fails the check says why here and in the scheduler's event log (topic
    'gradebox'), and exits 2 without having graded anything. Workers see hidden
    cases' arguments (never expected values) and must be trusted, as must the
    scheduler: use tls:// with --tls-* (or Dask's TLS configuration) on any network
    you do not control. Exit 0 when stopped (SIGINT, SIGTERM), 2 when the sandbox
    refused or the scheduler went away.

    \b
    Example:
      dask scheduler --port 8786 &
      gradebox worker tcp://127.0.0.1:8786 --jobs 2
      gradebox grade --scheduler tcp://127.0.0.1:8786 --hidden examples/hidden.jsonl \\
                     --samples examples/samples.jsonl --out /tmp/results.jsonl
    """  # noqa: D301 - click needs a real \b to keep the example as written
    from gradebox.cluster.address import parse_scheduler  # noqa: PLC0415 - loads no Dask

    try:
        parsed = parse_scheduler(address)
    except ValueError as exc:
        raise BadInput([f"ADDRESS: {exc}"]) from exc
    if parsed.address is None:
        raise BadInput(["ADDRESS: a worker joins a scheduler: tcp://HOST:PORT or tls://HOST:PORT"])
    if (tls_cert is None) != (tls_key is None) or (tls_cert and not tls_ca_file):
        raise BadInput(["--tls-cert and --tls-key go together, with --tls-ca-file"])
    tls = (tls_ca_file, tls_cert, tls_key)
    sys.exit(_run(parsed.address, jobs, isolation, sandbox_python, name, tls))


def _run(
    address: str,
    jobs: int,
    isolation: str,
    python: Path | None,
    name: str | None,
    tls: tuple[Path | None, Path | None, Path | None],
) -> int:
    from gradebox.cluster.worker import (  # noqa: PLC0415 - Dask loads only for this command
        WorkerOptions,
        run_worker,
        worker_security,
    )
    from sandbox.errors import IsolationUnavailable  # noqa: PLC0415

    ca, cert, key = tls
    security = worker_security(address, ca=ca, cert=cert, key=key)
    options = WorkerOptions(isolation, jobs, str(python) if python else None)
    where = name or f"{socket.gethostname()}-{os.getpid()}"
    try:
        stopped = run_worker(address, options, security=security, name=where)
    except IsolationUnavailable as exc:
        raise SetupError(f"this worker refuses work: {exc}") from exc
    except (OSError, TimeoutError) as exc:
        raise SetupError(f"cannot reach the scheduler at {address}: {exc}") from exc
    if not stopped:
        click.echo(f"gradebox worker: the scheduler at {address} went away", err=True)
        return 2
    return 0

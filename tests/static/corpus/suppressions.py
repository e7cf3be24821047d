# ruff: noqa
# mypy: ignore-errors
import subprocess


def run(cmd: str) -> int:
    unused = 1  # noqa: F841
    return subprocess.call(cmd, shell=True)  # nosec B602


def is_even(n: int) -> bool:
    return "yes"  # type: ignore[return-value]

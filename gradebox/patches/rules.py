"""Where a gate's rules are read from: the base revision, the workflow, this host, never the head.

A rule decides a gate (the static policy, the FAIL_TO_PASS and PASS_TO_PASS
lists), so a patch must not be able to write it: a file in the pull request's
own checkout is the head's, and the PR that breaks a rule could relax it in the
same commit. :class:`RuleReader` reads a rule from one of:

* ``base:PATH``: the file ``PATH`` of the repository at the **base** revision,
  read from git's objects (:class:`~gradebox.patches.tree.ObjectStore`: no
  checkout, no attribute, filter or configuration of the tree; a link is not a
  file). Recorded as ``base:<commit>:PATH``.
* ``PATH``: a file on this host, given by whoever runs the gate. Recorded as
  ``<origin>:PATH``.
* inline text (ids on the command line, a policy's TOML in a workflow input).
  Recorded as ``<origin>``.

``origin`` is ``command line`` for a local user, ``workflow`` for the Action
(whose inputs are the workflow file's). Each gate's row carries these sources
under ``rules`` (:attr:`~gradebox.patches.model.GateSpec.rules`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from gradebox.errors import BadInput, SetupError
from gradebox.patches.tree import GitError, ObjectStore, PathRefused

__all__ = ["BASE", "Origin", "RuleReader", "RuleText", "parse_id_lines"]

BASE = "base:"
"""The prefix that names a file at the base revision."""
Origin = Literal["command line", "workflow"]
"""Who gave the rules that are not read at base."""
_MAX_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class RuleText:
    """A rule's text and where it was read from."""

    text: str
    """The rule as written (TOML, JSON, node ids one a line)."""
    source: str
    """``base:<commit>:<path>``, ``<origin>:<path>`` or ``<origin>``."""


class RuleReader:
    """Reads rules for one repository and base revision (see the module docstring)."""

    def __init__(self, origin: Origin, *, repo: Path | None, base: str | None, cwd: Path) -> None:
        """Rules given by ``origin``; ``base:`` files of ``repo`` at ``base``.

        Args:
            origin: ``command line`` or ``workflow``.
            repo: The repository gated (``None`` when there is not just one).
            base: Its base revision (a branch, tag or commit).
            cwd: What host paths are relative to.
        """
        self.origin: Origin = origin
        self._repo, self._base, self._cwd = repo, base, cwd
        self._store: ObjectStore | None = None
        self.commit: str | None = None
        """The base commit, once a rule was read at base."""

    def inline(self, text: str) -> RuleText:
        """A rule given as text."""
        return RuleText(text, self.origin)

    def read(self, value: str, what: str) -> RuleText:
        """The rule ``value`` names: ``base:PATH`` or a host ``PATH``.

        Raises:
            BadInput: The file is not there, not UTF-8 or too big; ``base:`` without one
                repository.
            SetupError: The repository or its base revision cannot be read.
        """
        if value.startswith(BASE):
            return self._at_base(value[len(BASE) :], what)
        path = self._cwd / value
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise BadInput([f"{what}: cannot read {path}: {exc}"]) from exc
        return RuleText(_decode(data, what, value), f"{self.origin}:{value}")

    def _at_base(self, path: str, what: str) -> RuleText:
        if self._repo is None or self._base is None:
            raise BadInput([f"{what}: {BASE}PATH needs one repository and base (--repo, --base)"])
        try:
            path = path.removeprefix("./")
            if self._store is None:
                self._store = ObjectStore(self._repo)
                self.commit = self._store.commit(self._base)
            assert self.commit is not None  # noqa: S101 - set with the store
            data = self._store.read(self.commit, path)
        except PathRefused as exc:
            raise BadInput([f"{what}: {exc}"]) from exc
        except GitError as exc:
            raise SetupError(f"{what}: cannot read {BASE}{path}: {exc}") from exc
        if data is None:
            raise BadInput([f"{what}: {path!r} is not a file at the base revision "
                            f"{self.commit[:12]}"])  # fmt: skip
        return RuleText(_decode(data, what, path), f"{BASE}{self.commit}:{path}")


def _decode(data: bytes, what: str, name: str) -> str:
    if len(data) > _MAX_BYTES:
        raise BadInput([f"{what}: {name} is larger than {_MAX_BYTES} bytes"])
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadInput([f"{what}: {name} is not UTF-8: {exc}"]) from exc


def parse_id_lines(text: str, what: str) -> tuple[str, ...]:
    """Node ids, one a line (``#`` starts a comment), in order, without repeats.

    Raises:
        BadInput: A line that is not a node id (a NUL, a leading ``-``).
    """
    items = (line.split("#", 1)[0].strip() for line in text.splitlines())
    ids = tuple(dict.fromkeys(i for i in items if i))
    bad = [i for i in ids if "\0" in i or i.startswith("-")]
    if bad:
        raise BadInput([f"{what}: {bad[0]!r} is not a pytest node id"])
    return ids

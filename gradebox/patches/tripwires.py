"""Tripwire tests: a pass must mean the tests ran, seen in tests the patch cannot know.

The patch's code shares the pytest process that reports on it, so code that
neuters test execution (``item.runtest = lambda: None``, a hook that marks
every report passed, a forged report and exit code) makes *every* test look
passed. Each gate therefore plants a small test module of its own, drawn at
random per gate with :mod:`secrets` (its file name, test names, values, and
which of them must fail), next to a deciding test file, in the trees of the
base runs and of the head run (not in the patch's tree: the patch never sees
it before it runs). Some of its tests must fail, the others pass.

* At base, every run must show exactly the planted outcomes; otherwise (the
  module is not collected under the repository's configuration, say) there
  are no tripwires at head and the row says ``unavailable``.
* At head, a planted failure that is not a failure (passed, skipped, or
  missing from the report) means the outcomes cannot be believed: the row
  says ``tripped`` and the gate is never ``pass``.

Planted tests are never deciding and never listed among the repository's
tests. This raises the cost of a forge, it does not make one impossible: code
that recognises the planted module by reading it (every test file is readable
inside the sandbox) can still spare it; what stays open is in SECURITY.md.
"""

from __future__ import annotations

import ast
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

from gradebox.patches.protect import is_test_module
from gradebox.patches.tree import Entry, Tree

__all__ = ["Plan", "held", "plan", "plant", "without"]

_WORDS = (
    "edge", "empty", "large", "small", "unicode", "negative", "zero", "repeat", "nested",
    "order", "default", "none", "single", "many", "bounds", "types", "mixed", "copy",
    "roundtrip", "regression", "limits", "sorted", "reverse", "duplicates", "whitespace",
)  # fmt: skip
_V = TypeVar("_V")


@dataclass(frozen=True, slots=True)
class Plan:
    """One gate's tripwires."""

    path: str
    """The planted module's path (a new file next to a deciding test file)."""
    must_fail: tuple[str, ...]
    """Node ids that must fail."""
    must_pass: tuple[str, ...]
    """Node ids that must pass."""
    source: bytes
    """The module's text."""

    @property
    def ids(self) -> tuple[str, ...]:
        """Every planted node id."""
        return (*self.must_fail, *self.must_pass)


def plan(tree: Tree, fail_to_pass: Sequence[str], targets: Sequence[str]) -> Plan | None:
    """Draw tripwires beside the first deciding test file of ``tree`` (``None``: none found)."""
    candidates = [i.split("::", 1)[0] for i in fail_to_pass] + list(targets)
    candidates += sorted(p for p in tree if is_test_module(p))
    anchor = next((p for p in candidates if p in tree and not tree[p].is_link), None)
    if anchor is None:
        return None
    folder, _, name = anchor.rpartition("/")
    stem = name.removesuffix(".py").removeprefix("test_").removesuffix("_test") or "case"
    rng = secrets.SystemRandom()
    path = ""
    for _ in range(20):
        file = f"test_{stem}_{rng.choice(_WORDS)}_{rng.randrange(2, 99)}.py"
        path = f"{folder}/{file}" if folder else file
        if path not in tree:
            break
    else:
        return None
    names = rng.sample(_WORDS, 5)
    fails = set(rng.sample(range(5), rng.choice((2, 3))))
    body: list[str] = []
    must_fail: list[str] = []
    must_pass: list[str] = []
    for n, word in enumerate(names):
        test = f"test_{word}_{rng.randrange(10, 999)}"
        body.append(_case(test, fail=n in fails, rng=rng))
        (must_fail if n in fails else must_pass).append(f"{path}::{test}")
    source = ("\n\n".join(body) + "\n").encode()
    ast.parse(source)  # our own text: a slip here is a bug, not a candidate failure
    return Plan(path, tuple(must_fail), tuple(must_pass), source)


def _case(name: str, *, fail: bool, rng: secrets.SystemRandom) -> str:
    a, b = rng.randrange(2, 500), rng.randrange(2, 500)
    word = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randrange(3, 9)))
    shapes = (
        (f"sum([{a}, {b}])", a + b),
        (f"len({word!r} * {a % 7 + 1})", len(word) * (a % 7 + 1)),
        (f"sorted([{a}, {b}, {a + b}])[1]", sorted([a, b, a + b])[1]),
        (f"{a} * {b} % 97", a * b % 97),
        (f"{word!r}.upper().count({word[0].upper()!r})", word.upper().count(word[0].upper())),
    )
    expr, value = rng.choice(shapes)
    expected = value + rng.randrange(1, 9) if fail else value
    return f"def {name}():\n    assert {expr} == {expected}\n"


def plant(tree: Tree, plan: Plan | None) -> dict[str, Entry]:
    """``tree`` with the planted module added (unchanged without a plan)."""
    out = dict(tree)
    if plan is not None:
        out[plan.path] = Entry("100644", plan.source)
    return out


def held(plan: Plan, statuses: Mapping[str, str]) -> bool:
    """Every planted test ran as planted: the failures failed, the passes passed."""
    return all(statuses.get(i) == "failed" for i in plan.must_fail) and all(
        statuses.get(i) == "passed" for i in plan.must_pass
    )


def without(statuses: Mapping[str, _V], ids: set[str]) -> dict[str, _V]:
    """``statuses`` without the planted ids."""
    return {i: s for i, s in statuses.items() if i not in ids}

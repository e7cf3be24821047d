"""How far the judge can be trusted on a run: agreement with the tests, flip rates of repeats.

Read from the run's rows (results.jsonl), by :func:`versus_tests` and
:func:`flip_rates`; :mod:`gradebox.judging.labels` compares the rows with people's
labels. Every figure is a count with its n and a 95 % interval, and below
:data:`MIN_ITEMS` items a chance-corrected figure is replaced by a note ("too few
items"): a kappa over five items is noise that looks like a number.

The judge's intent verdict is compared with the hidden tests as two raters over
``match``/``pass`` and ``mismatch``/``fail``: Cohen's kappa and Scott's pi with
percentile-bootstrap intervals, *leniency* P(match | tests fail) and *strictness*
P(mismatch | tests pass), each with its Wilson interval.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gradebox.judging.stats import Interval, bootstrap_interval, cohen_kappa, scott_pi, wilson

__all__ = [
    "MIN_ITEMS",
    "Agreement",
    "FlipRates",
    "PanelMember",
    "ProbeFlips",
    "Rate",
    "TestsAgreement",
    "agreement",
    "flip_rates",
    "invariance",
    "panel",
    "rate",
    "tests_agreement",
    "versus_tests",
]

MIN_ITEMS = 10
"""Fewer items than this: no kappa, no pi, a note instead."""


@dataclass(frozen=True, slots=True)
class Rate:
    """``k`` of ``n``, with its Wilson 95 % interval."""

    k: int
    """Items counted."""
    n: int
    """Items in the denominator (at least 1)."""
    interval: Interval
    """Wilson 95 % interval."""

    @property
    def value(self) -> float:
        """``k / n``."""
        return self.k / self.n

    def to_json(self) -> dict[str, Any]:
        """``{"k", "n", "rate", "ci"}``."""
        ci = self.interval.to_json()
        return {"k": self.k, "n": self.n, "rate": round(self.value, 4), "ci": ci}


def rate(k: int, n: int) -> Rate | None:
    """``k`` of ``n`` as a :class:`Rate`; ``None`` when ``n`` is 0."""
    interval = wilson(k, n)
    return None if interval is None else Rate(k, n, interval)


@dataclass(frozen=True, slots=True)
class Agreement:
    """Two raters over the same items and categories."""

    categories: tuple[str, ...]
    """The categories, in table order (the first rater's names)."""
    table: tuple[tuple[int, ...], ...]
    """``table[i][j]``: items the first rater put in ``i`` and the second in ``j``."""
    kappa: float | None
    """Cohen's kappa; ``None`` when undefined or with too few items."""
    kappa_ci: Interval | None
    """Its bootstrap 95 % interval."""
    pi: float | None
    """Scott's pi; ``None`` when undefined or with too few items."""
    pi_ci: Interval | None
    """Its bootstrap 95 % interval."""
    note: str | None
    """Why a figure is missing (``too few items (n=4 < 10)``), else ``None``."""

    @property
    def n(self) -> int:
        """Items compared."""
        return sum(sum(row) for row in self.table)

    @property
    def observed(self) -> float | None:
        """Share of items both raters put in the same category."""
        n = self.n
        return None if n == 0 else sum(self.table[i][i] for i in range(len(self.table))) / n

    def to_json(self) -> dict[str, Any]:
        """Plain JSON."""
        observed = self.observed
        return {
            "n": self.n,
            "categories": list(self.categories),
            "table": [list(r) for r in self.table],
            "observed": None if observed is None else round(observed, 4),
            "kappa": _round(self.kappa),
            "kappa_ci": None if self.kappa_ci is None else self.kappa_ci.to_json(),
            "pi": _round(self.pi),
            "pi_ci": None if self.pi_ci is None else self.pi_ci.to_json(),
            "note": self.note,
        }


def agreement(pairs: Iterable[tuple[str, str]], categories: Sequence[str]) -> Agreement:
    """Agreement of two raters' labels, one pair per item.

    Args:
        pairs: ``(first, second)`` per item; both in ``categories``.
        categories: The category names, in table order.

    Returns:
        The table, kappa and pi with intervals (or a note when there are too few items).
    """
    index = {c: i for i, c in enumerate(categories)}
    counts = [[0] * len(categories) for _ in categories]
    for first, second in pairs:
        counts[index[first]][index[second]] += 1
    table = tuple(tuple(r) for r in counts)
    n = sum(map(sum, table))
    if n < MIN_ITEMS:
        few = f"too few items (n={n} < {MIN_ITEMS})"
        return Agreement(tuple(categories), table, None, None, None, None, few)
    kappa, pi = cohen_kappa(table), scott_pi(table)
    undefined = "undefined: every item is in one category"
    note: str | None = None if kappa is not None else undefined
    return Agreement(
        tuple(categories),
        table,
        kappa,
        None if kappa is None else bootstrap_interval(table, cohen_kappa),
        pi,
        None if pi is None else bootstrap_interval(table, scott_pi),
        note,
    )


@dataclass(frozen=True, slots=True)
class TestsAgreement:
    """The judge's intent verdict against the hidden tests."""

    __test__ = False  # not a pytest class

    agreement: Agreement
    """Categories ``match`` (judge) / ``pass`` (tests) and ``mismatch`` / ``fail``."""
    leniency: Rate | None
    """P(match | tests fail): the judge waves a failing candidate through."""
    strictness: Rate | None
    """P(mismatch | tests pass): the judge objects to a passing candidate."""

    def to_json(self) -> dict[str, Any]:
        """The summary's ``judge.agreement``: cell counts first (as before), then the figures."""
        (mp, mf), (xp, xf) = self.agreement.table
        figures = self.agreement.to_json()
        return {
            "match_pass": mp,
            "match_fail": mf,
            "mismatch_pass": xp,
            "mismatch_fail": xf,
            "n": figures["n"],
            "kappa": figures["kappa"],
            "kappa_ci": figures["kappa_ci"],
            "pi": figures["pi"],
            "pi_ci": figures["pi_ci"],
            "leniency": None if self.leniency is None else self.leniency.to_json(),
            "strictness": None if self.strictness is None else self.strictness.to_json(),
            "note": figures["note"],
        }


def _tests_passed(row: Mapping[str, Any]) -> bool:
    outcomes = row.get("outcomes") or []
    return bool(outcomes) and all(o == "ok" for o in outcomes)


def _judge(row: Mapping[str, Any]) -> Mapping[str, Any] | None:
    judge = row.get("judge")
    return judge if isinstance(judge, Mapping) else None


def versus_tests(rows: Iterable[Mapping[str, Any]]) -> TestsAgreement:
    """The judge's scored intent verdicts against the hidden tests' pass/fail.

    Args:
        rows: results.jsonl rows; only rows whose judge is ``scored`` with a verdict count.

    Returns:
        The agreement, leniency and strictness.
    """
    pairs: list[tuple[str, str]] = []
    for row in rows:
        judge = _judge(row)
        if judge is None or judge.get("status") != "scored":
            continue
        verdict = judge.get("verdict")
        if verdict in ("match", "mismatch"):
            pairs.append((str(verdict), "match" if _tests_passed(row) else "mismatch"))
    return tests_agreement(pairs)


def tests_agreement(pairs: Iterable[tuple[str, str]]) -> TestsAgreement:
    """:func:`versus_tests` from ``(judge verdict, "match" if tests passed else "mismatch")``."""
    found = agreement(pairs, ("match", "mismatch"))
    (mp, mf), (xp, xf) = found.table
    return TestsAgreement(found, rate(mf, mf + xf), rate(xp, xp + mp))


@dataclass(frozen=True, slots=True)
class FlipRates:
    """How often repeated judgements of one item disagree (``--judge-repeat``).

    Two verdict flip rates, which answer different questions and are named apart:

    - **per judgement** (:attr:`per_judgement`): minority votes / all votes. How often
      one judgement disagrees with its item's majority: an estimate of the chance
      that a single judgement flips, nearly independent of the number of repeats (a
      server flipping 20 % of judgements at random measures about 0.2; it reads a
      little low with few repeats, where a flip can become the majority).
    - **per item** (:attr:`verdict`): items whose repeated verdicts disagree / items.
      How many items a run with this many repeats sends to review; it grows with
      the repeats (0.2 per judgement is about 0.67 of items with 5 repeats).
    """

    verdict: Rate | None
    """Per item: items whose verdict differed between scored repeats, of items with a verdict."""
    criteria: dict[str, Rate]
    """Per criterion id: items whose score differed between scored repeats."""
    any_flip: Rate
    """Items where the verdict or any score differed."""
    flipped: tuple[str, ...]
    """Ids of the items whose verdict flipped (the first 100)."""
    per_judgement: Rate | None = None
    """Per judgement: verdicts that differ from their item's majority, of all verdicts (a
    tie counts half its votes as the minority), over items with a verdict."""

    def to_json(self) -> dict[str, Any]:
        """The summary's ``judge.flips``.

        ``verdict_flip_rate_per_judgement`` and ``verdict_flip_rate_per_item`` name the
        two verdict rates; ``verdict`` is the per-item rate under its older name.
        """
        per_item = None if self.verdict is None else self.verdict.to_json()
        return {
            "items": self.any_flip.n,
            "verdict": per_item,
            "verdict_flip_rate_per_item": per_item,
            "verdict_flip_rate_per_judgement": (
                None if self.per_judgement is None else self.per_judgement.to_json()
            ),
            "criteria": {c: r.to_json() for c, r in sorted(self.criteria.items())},
            "overall": self.any_flip.to_json(),
            "flipped": list(self.flipped),
        }


def flip_rates(rows: Iterable[Mapping[str, Any]]) -> FlipRates | None:
    """Flip rates over the items judged more than once with at least two scored repeats.

    Args:
        rows: results.jsonl rows.

    Returns:
        The rates, or ``None`` when no row carries ``judge.repeat`` with two scored repeats.
    """
    n = with_verdict = verdict_flips = any_flips = minority = votes = 0
    criteria: dict[str, list[int]] = {}
    flipped: list[str] = []
    for row in rows:
        judge = _judge(row)
        repeat = judge.get("repeat") if judge is not None else None
        if judge is None or not isinstance(repeat, Mapping) or int(repeat.get("scored", 0)) < 2:
            continue
        n += 1
        cast = [str(v) for v in repeat.get("verdicts", []) if v is not None]
        verdicts = set(cast)
        with_verdict += bool(verdicts)
        if len(cast) >= 2:
            minority += len(cast) - max(cast.count(v) for v in verdicts)
            votes += len(cast)
        verdict_flip = bool(repeat.get("flipped"))
        verdict_flips += verdict_flip
        changed = set(repeat.get("criteria_flipped") or [])
        any_flips += verdict_flip or bool(changed)
        for cid in judge.get("scores") or {}:
            counts = criteria.setdefault(str(cid), [0, 0])
            counts[0] += cid in changed
            counts[1] += 1
        if verdict_flip and len(flipped) < 100:
            flipped.append(str(row.get("id")))
    overall = rate(any_flips, n)
    if overall is None:
        return None
    per_criterion = {c: r for c, (k, m) in criteria.items() if (r := rate(k, m)) is not None}
    return FlipRates(
        rate(verdict_flips, with_verdict),
        per_criterion,
        overall,
        tuple(flipped),
        rate(minority, votes),
    )


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


@dataclass(frozen=True, slots=True)
class ProbeFlips:
    """How often one invariance probe changed the verdict (``--judge-probes``)."""

    probe: str
    """The probe (``rename``, ``strip``, ``reorder``, ``inject``)."""
    flips: Rate
    """Items whose verdict changed, of items where both judgements scored with a verdict."""
    flipped: tuple[str, ...]
    """Ids of those items (the first 100)."""

    def to_json(self) -> dict[str, Any]:
        """One entry of the summary's ``judge.invariance``."""
        return {**self.flips.to_json(), "flipped": list(self.flipped)}


def invariance(rows: Iterable[Mapping[str, Any]]) -> dict[str, ProbeFlips]:
    """Flip rate of the verdict under each invariance probe, from the rows' ``judge.invariance``.

    Args:
        rows: results.jsonl rows.

    Returns:
        Probe name to its flips; empty when no row was probed.
    """
    counts: dict[str, list[int]] = {}
    flipped: dict[str, list[str]] = {}
    for row in rows:
        judge = _judge(row)
        checks = judge.get("invariance") if judge is not None else None
        if judge is None or not isinstance(checks, list) or judge.get("status") != "scored":
            continue
        for check in checks:
            if not isinstance(check, Mapping) or check.get("status") != "scored":
                continue
            if judge.get("verdict") is None or check.get("verdict") is None:
                continue
            probe = str(check.get("probe"))
            tally = counts.setdefault(probe, [0, 0])
            tally[1] += 1
            if check.get("flipped") is True:
                tally[0] += 1
                ids = flipped.setdefault(probe, [])
                if len(ids) < 100:
                    ids.append(str(row.get("id")))
    found: dict[str, ProbeFlips] = {}
    for probe, (k, n) in counts.items():
        r = rate(k, n)
        if r is not None:
            found[probe] = ProbeFlips(probe, r, tuple(flipped.get(probe, ())))
    return found


@dataclass(frozen=True, slots=True)
class PanelMember:
    """One model of a panel (``--judge-model a,b,c``) over the run."""

    model: str
    """The model."""
    with_majority: Rate | None
    """Its verdict equal to the panel's, of the items it scored with a verdict."""
    versus_tests: Agreement
    """Its own verdicts against the hidden tests (kappa and pi with intervals)."""

    def to_json(self) -> dict[str, Any]:
        """One entry of the summary's ``judge.panel``."""
        agree = self.with_majority
        return {
            "with_majority": None if agree is None else agree.to_json(),
            "versus_tests": self.versus_tests.to_json(),
        }


def panel(rows: Iterable[Mapping[str, Any]]) -> dict[str, PanelMember]:
    """Per-model agreement of a panel: with the panel's majority, and with the tests.

    Args:
        rows: results.jsonl rows.

    Returns:
        Model to its figures; empty when no row was judged by a panel.
    """
    majority: dict[str, list[int]] = {}
    tests: dict[str, list[tuple[str, str]]] = {}
    for row in rows:
        judge = _judge(row)
        votes = judge.get("panel") if judge is not None else None
        if judge is None or not isinstance(votes, list):
            continue
        passed = "match" if _tests_passed(row) else "mismatch"
        for vote in votes:
            if not isinstance(vote, Mapping) or vote.get("verdict") not in ("match", "mismatch"):
                continue
            model = str(vote.get("model"))
            tally = majority.setdefault(model, [0, 0])
            if judge.get("verdict") in ("match", "mismatch"):
                tally[0] += vote["verdict"] == judge["verdict"]
                tally[1] += 1
            tests.setdefault(model, []).append((str(vote["verdict"]), passed))
    return {
        model: PanelMember(
            model,
            rate(*majority.get(model, [0, 0])),
            agreement(tests.get(model, []), ("match", "mismatch")),
        )
        for model in dict.fromkeys([*majority, *tests])
    }

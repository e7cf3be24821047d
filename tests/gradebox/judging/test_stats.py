"""Agreement statistics against hand-worked tables (arithmetic in the comments).

No statistics library is installed (see gradebox/judging/stats.py), so the
reference is the arithmetic itself, written out, plus invariants checked with
Hypothesis.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gradebox.judging import (
    Interval,
    bootstrap_interval,
    cohen_kappa,
    scott_pi,
    weighted_kappa,
    wilson,
)

# Cohen's kappa, the textbook example (50 grant applications, two readers):
#            B yes  B no
#   A yes     20      5      p_o = (20 + 15) / 50 = 0.70
#   A no      10     15      p_e = (25*30 + 25*20) / 50**2 = 0.50 -> kappa = 0.2 / 0.5 = 0.4
# Scott's pi pools the marginals: p(yes) = (25 + 30) / 100 = 0.55
#   p_e = 0.55**2 + 0.45**2 = 0.505 -> pi = (0.70 - 0.505) / 0.495 = 0.393939...
WIKI = ((20, 5), (10, 15))
# Second example: p_o = 0.60, rows 60/40, columns 70/30
#   p_e = 0.6*0.7 + 0.4*0.3 = 0.54 -> kappa = 0.06 / 0.46 = 0.130435
#   pooled yes = (60 + 70) / 200 = 0.65, p_e = 0.65**2 + 0.35**2 = 0.545 -> pi = 0.055/0.455
WIKI2 = ((45, 15), (25, 15))
# A 3-point ordinal scale, 18 items, every disagreement off by one:
#   5 1 0      rows and columns are 6/6/6: chance puts 1/9 in every cell
#   1 4 1      unweighted: p_o = 14/18, p_e = 1/3 -> kappa = (7/9 - 1/3) / (2/3) = 2/3
#   0 1 5      quadratic (w = 1/4 off by one, 1 off by two):
#                observed 4 * 1/4 / 18 = 1/18, expected (4 * 1/4 + 2 * 1) / 9 = 1/3 -> 1 - 1/6
#              linear (w = 1/2, 1): observed 4 * 1/2 / 18 = 1/9, expected (2 + 2) / 9 -> 1 - 1/4
ORDINAL = ((5, 1, 0), (1, 4, 1), (0, 1, 5))


def test_kappa_and_pi_on_the_textbook_tables():
    assert cohen_kappa(WIKI) == pytest.approx(0.4)
    assert scott_pi(WIKI) == pytest.approx(0.195 / 0.495)
    assert cohen_kappa(WIKI2) == pytest.approx(0.06 / 0.46)
    assert scott_pi(WIKI2) == pytest.approx(0.055 / 0.455)


def test_weighted_kappa_on_an_ordinal_table():
    assert cohen_kappa(ORDINAL) == pytest.approx(2 / 3)
    assert weighted_kappa(ORDINAL, "quadratic") == pytest.approx(5 / 6)
    assert weighted_kappa(ORDINAL, "linear") == pytest.approx(3 / 4)
    # with two categories every weighting is plain kappa
    assert weighted_kappa(WIKI) == pytest.approx(0.4)


@pytest.mark.parametrize(
    ("k", "n", "low", "high"),
    [
        (1, 10, 0.0179, 0.4042),  # the usual worked example
        (0, 10, 0.0, 0.2775),  # centre 0.19207/1.38415, half 1.96*0.098/1.38415
        (10, 10, 0.7225, 1.0),
        (40, 200, 0.1505, 0.2609),  # centre 0.205656, half 0.055203
    ],
)
def test_wilson_interval(k, n, low, high):
    got = wilson(k, n)
    assert got is not None
    assert (round(got.low, 4), round(got.high, 4)) == (low, high)


def test_undefined_figures_are_none():
    one_category = ((12, 0), (0, 0))
    assert cohen_kappa(one_category) is None and scott_pi(one_category) is None
    assert cohen_kappa(((0, 0), (0, 0))) is None and wilson(0, 0) is None
    assert weighted_kappa(((3,),)) is None
    assert bootstrap_interval(((0, 0), (0, 0)), cohen_kappa) is None


def test_bootstrap_interval_is_seeded_and_brackets_the_estimate():
    big = ((200, 50), (100, 150))  # the textbook table, x10
    first = bootstrap_interval(big, cohen_kappa)
    assert first == bootstrap_interval(big, cohen_kappa)
    assert first is not None and 0.4 in first
    # about the normal-approximation width, 2 * 1.96 * 0.041 for n = 500
    assert 0.12 < first.high - first.low < 0.20
    assert bootstrap_interval(((6, 0), (0, 6)), cohen_kappa) == Interval(1.0, 1.0)


tables = st.lists(st.integers(0, 30), min_size=4, max_size=4).map(
    lambda c: ((c[0], c[1]), (c[2], c[3]))
)


@given(tables)
def test_pi_never_exceeds_kappa_and_both_are_symmetric(table):
    kappa, pi = cohen_kappa(table), scott_pi(table)
    transposed = tuple(zip(*table, strict=True))
    assert cohen_kappa(transposed) == kappa or (
        kappa is not None and cohen_kappa(transposed) == pytest.approx(kappa)
    )
    if kappa is not None and pi is not None:
        assert pi <= kappa + 1e-9 and kappa <= 1 + 1e-9 and pi >= -1 - 1e-9


@given(st.integers(0, 500), st.integers(1, 500))
def test_wilson_contains_the_estimate_inside_0_1(k, n):
    k = min(k, n)
    got = wilson(k, n)
    assert got is not None and 0 <= got.low <= k / n <= got.high <= 1


def test_a_large_tables_interval_is_drawn_by_cells_and_still_brackets_the_estimate():
    small = ((30, 10), (5, 55))
    large = tuple(tuple(c * 1000 for c in row) for row in small)  # 100,000 items
    ci_small, ci_large = (
        bootstrap_interval(small, cohen_kappa),
        bootstrap_interval(large, cohen_kappa),
    )
    assert ci_large == bootstrap_interval(large, cohen_kappa)  # seeded
    assert ci_large.low < cohen_kappa(large) < ci_large.high
    # ~sqrt(1000) narrower: the resample has the table's size, not a cap
    assert 20 < (ci_small.high - ci_small.low) / (ci_large.high - ci_large.low) < 45

"""Measuring the judge: agreement with the tests and with people, flip rates, invariance.

Standard library only (see :mod:`gradebox.judging.stats` for why no statistics
library); reads rows, never an endpoint.
"""

from gradebox.judging.agreement import (
    MIN_ITEMS,
    Agreement,
    FlipRates,
    PanelMember,
    ProbeFlips,
    Rate,
    TestsAgreement,
    agreement,
    flip_rates,
    invariance,
    panel,
    rate,
    versus_tests,
)
from gradebox.judging.stats import (
    Interval,
    bootstrap_interval,
    cohen_kappa,
    scott_pi,
    weighted_kappa,
    wilson,
)

__all__ = [
    "MIN_ITEMS",
    "Agreement",
    "FlipRates",
    "Interval",
    "PanelMember",
    "ProbeFlips",
    "Rate",
    "TestsAgreement",
    "agreement",
    "bootstrap_interval",
    "cohen_kappa",
    "flip_rates",
    "invariance",
    "panel",
    "rate",
    "scott_pi",
    "versus_tests",
    "weighted_kappa",
    "wilson",
]

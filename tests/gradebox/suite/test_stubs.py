"""The naive stub family and the literal writer."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from gradebox.suite.signature import parse_signature
from gradebox.suite.stubs import literal, make_stubs
from sandbox.compare import values_equal
from sandbox.types import make_case


def _ids(stubs):
    return [(s.id, s.description) for s in stubs]


def test_family_from_a_signature_and_cases():
    sig = parse_signature("is_even", "def is_even(n: int) -> bool", None)
    cases = [
        make_case("is_even", 0, expect=True),
        make_case("is_even", 7, expect=False),
        make_case("is_even", -4, expect=True),
        make_case("is_even", True, error="builtins.TypeError"),
    ]
    stubs = make_stubs("is_even", sig, cases)
    assert _ids(stubs) == [
        ("none", "return None"),
        ("constant:1", "return True"),
        ("first-arg", "return n"),
        ("not-implemented", "raise NotImplementedError"),
        ("pass", "pass"),
        ("empty", "return False"),
    ]
    assert stubs[2].code == "def is_even(n):\n    return n\n"  # annotations are dropped


def test_ties_give_up_to_three_constants_and_bodies_are_kept_once():
    sig = parse_signature("f", "def f(xs: list[int]) -> list[int]", None)
    cases = [make_case("f", [i], expect=v) for i, v in enumerate([[], [1], [2], [3]])]
    stubs = make_stubs("f", sig, cases)
    assert [s.id for s in stubs] == [
        "none",
        "constant:1",
        "constant:2",
        "constant:3",
        "first-arg",
        "not-implemented",
        "pass",
    ]  # "empty" (return []) is constant:1 already


def test_without_signature_the_reference_gives_the_header_and_else_star_args():
    ref = "def g(a, b=2, *, c):\n    return a\n"
    sig = parse_signature("g", None, ref)
    assert sig.header == "def g(a, b=2, *, c):" and sig.params == ("a", "b")
    bare = parse_signature("h", None, None)
    stubs = make_stubs("h", bare, [make_case("h", 1, expect=(1, 2))])
    assert stubs[0].code.startswith("def h(*args, **kwargs):")
    assert ("first-arg", "return args[0]") in _ids(stubs)
    assert ("empty", "return ()") in _ids(stubs)  # from the expected values' type


plain = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text() | st.binary(),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.tuples(inner, inner)
        | st.dictionaries(st.text(max_size=3) | st.integers(), inner, max_size=3)
        | st.frozensets(st.integers() | st.text(max_size=3), max_size=3)
        | st.sets(st.integers(), max_size=3)
    ),
    max_leaves=12,
)


@given(plain)
def test_literal_round_trips_every_plain_value(value):
    # Our own generated literal text (plain data, not candidate code), with only the
    # three names it uses.
    back = eval(
        literal(value), {"__builtins__": {}, "float": float, "set": set, "frozenset": frozenset}
    )
    if isinstance(value, float) and math.isnan(value):
        assert math.isnan(back)
    else:
        assert values_equal(value, back)

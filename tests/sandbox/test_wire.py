"""The tagged-value codec: round-trips (Hypothesis) and what to_wire refuses."""

from __future__ import annotations

import copy
import enum
import json
import math
import pickle
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sandbox.child
from sandbox.child.wire import Opaque, WireError, from_wire, to_wire
from sandbox.compare import values_equal

# --- strategies -------------------------------------------------------------

ints = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70),
    # Well past 2**63 (the $int tag), built so the strategy's repr stays small.
    st.builds(
        lambda bits, sign, low: sign * (2**bits + low),
        st.integers(min_value=60, max_value=2000),
        st.sampled_from([1, -1]),
        st.integers(min_value=-3, max_value=3),
    ),
    st.sampled_from([2**63 - 1, 2**63, -(2**63) + 1, -(2**63), 0, -1]),
)
floats = st.floats(allow_nan=True, allow_infinity=True)
# st.text() draws no surrogates by default: lone surrogates are tested apart.
texts = st.text(max_size=20) | st.sampled_from(["$tuple", "$set", "$", "", "$opaque"])
scalars = st.none() | st.booleans() | ints | floats | texts | st.binary(max_size=20)

# Dict keys exclude nan: a dict with two distinct nan keys decodes to one key
# (every decoded nan is the same object). See test_two_nan_keys_collapse.
key_scalars = st.none() | st.booleans() | ints | st.floats(allow_nan=False) | texts | st.binary()
hashables = st.recursive(
    key_scalars,
    lambda inner: st.tuples(inner, inner) | st.frozensets(inner, max_size=4),
    max_leaves=8,
)


def _containers(inner: st.SearchStrategy) -> st.SearchStrategy:
    return (
        st.lists(inner, max_size=5)
        | st.lists(inner, max_size=5).map(tuple)
        | st.sets(hashables | floats, max_size=5)
        | st.frozensets(hashables | floats, max_size=5)
        | st.dictionaries(texts, inner, max_size=5)
        | st.dictionaries(hashables, inner, max_size=5)
    )


plain_values = st.recursive(scalars, _containers, max_leaves=30)


def _round_trip(value: Any) -> Any:
    text = json.dumps(to_wire(value), allow_nan=False)  # strict JSON: no NaN literals
    return from_wire(json.loads(text))


# --- round trips ------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(plain_values)
def test_round_trip_is_strictly_equal(value):
    assert values_equal(value, _round_trip(value))


@settings(deadline=None)
@given(plain_values)
def test_wire_form_is_stable(value):
    wire = to_wire(value)
    assert to_wire(from_wire(json.loads(json.dumps(wire)))) == wire or _has_set_or_nan(value)


def _has_set_or_nan(value: Any) -> bool:
    # Set iteration order may change after a round trip; nan != nan.
    if isinstance(value, set | frozenset):
        return True
    if isinstance(value, float):
        return math.isnan(value)
    if isinstance(value, dict):
        return any(_has_set_or_nan(k) or _has_set_or_nan(v) for k, v in value.items())
    if isinstance(value, list | tuple):
        return any(_has_set_or_nan(x) for x in value)
    return False


@pytest.mark.parametrize(
    "value",
    [
        2**63,
        -(2**63),
        2**63 - 1,
        10**5000,  # beyond the int-to-str digit limit: hex has none
        -(10**5000),
        math.nan,
        math.inf,
        -math.inf,
        -0.0,
        b"\x00\xff",
        {1: "a", None: "b", 2.5: "c", b"k": "d", (): "e"},
        {(1, 2): [1.5]},
        {"$tuple": 1},
        frozenset({frozenset({1})}),
    ],
    ids=lambda v: (
        repr(v) if not isinstance(v, int) or v.bit_length() < 64 else f"int-{v.bit_length()}-bits"
    ),
)
def test_round_trip_examples(value):
    back = _round_trip(value)
    assert values_equal(value, back)
    if isinstance(value, float) and not math.isnan(value):
        assert math.copysign(1.0, back) == math.copysign(1.0, value)


def test_big_ints_travel_as_hex():
    assert to_wire(2**63) == {"$int": "0x8000000000000000"}
    assert to_wire(2**63 - 1) == 2**63 - 1
    assert to_wire(-(2**63)) == {"$int": "-0x8000000000000000"}


def test_dollar_keys_force_the_dict_tag():
    assert to_wire({"$set": [1]}) == {"$dict": [["$set", [1]]]}
    assert from_wire({"$dict": [["$set", [1]]]}) == {"$set": [1]}


def test_two_nan_keys_collapse():
    # Documented loss: distinct nan objects are distinct dict keys in Python,
    # but every decoded nan is math.nan, so they merge into one key.
    value = {float("nan"): 1, float("nan"): 2}
    assert len(value) == 2
    assert len(_round_trip(value)) == 1


# --- what to_wire refuses -----------------------------------------------------


def test_cycle_in_list():
    loop: list[Any] = [1]
    loop.append(loop)
    with pytest.raises(WireError, match=r"\$\[1\]: value contains itself"):
        to_wire(loop)


def test_cycle_through_dict():
    d: dict[str, Any] = {}
    d["self"] = [d]
    with pytest.raises(WireError, match="contains itself"):
        to_wire(d)


def test_shared_but_acyclic_is_fine():
    shared = [1, 2]
    assert to_wire([shared, shared, (shared,)]) == [[1, 2], [1, 2], {"$tuple": [[1, 2]]}]


def _nested(depth: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(depth):
        value = [value]
    return value


def test_too_deep():
    to_wire(_nested(99))
    with pytest.raises(WireError, match="nested deeper than 100"):
        to_wire(_nested(150))
    with pytest.raises(WireError, match="nested deeper than 3"):
        to_wire(_nested(5), max_depth=3)


def test_very_deep_value_is_refused_not_a_recursion_error():
    with pytest.raises(WireError):
        to_wire(_nested(100_000))


def test_too_many_nodes():
    with pytest.raises(WireError, match="value too large"):
        to_wire(list(range(100)), max_nodes=50)


@pytest.mark.parametrize(
    "value",
    ["\ud800", ["ok", "a\udfffb"], {"k": "\udc80"}, ("\ud83d",), {1: "\ud800"}],
    ids=["bare", "in-list", "dict-value", "in-tuple", "non-str-key-dict-value"],
)
def test_lone_surrogates(value):
    with pytest.raises(WireError, match="not valid Unicode"):
        to_wire(value)


def test_lone_surrogate_in_dict_key():
    with pytest.raises(WireError, match="not valid Unicode"):
        to_wire({"\ud800": 1})


# --- subclasses are opaque ----------------------------------------------------


class MyInt(int):
    pass


class MyStr(str):
    pass


class Color(enum.IntEnum):
    RED = 1


class Point(tuple[int, int]):
    pass


@pytest.mark.parametrize(
    ("value", "name"),
    [
        (MyInt(3), "MyInt"),
        (MyStr("a"), "MyStr"),
        (Color.RED, "Color"),
        (Point((1, 2)), "Point"),
        (object(), "object"),
    ],
    ids=["int-subclass", "str-subclass", "int-enum", "tuple-subclass", "object"],
)
def test_subclasses_encode_as_opaque(value, name):
    wire = to_wire(value)
    assert set(wire) == {"$opaque"}
    assert wire["$opaque"].endswith("." + name)
    decoded = from_wire(wire)
    assert type(decoded) is Opaque
    assert not values_equal(3 if name != "MyStr" else "a", decoded)


def test_str_subclass_key_makes_an_opaque_key():
    wire = to_wire({MyStr("k"): 1})
    (((key, value),),) = wire.values()
    assert value == 1 and set(key) == {"$opaque"}


def test_to_wire_calls_no_candidate_code():
    class Loud(int):
        def __index__(self):
            raise AssertionError("called")

        def __repr__(self):
            raise AssertionError("called")

        __str__ = __repr__

    assert set(to_wire(Loud(5))) == {"$opaque"}


# --- from_wire refusals -------------------------------------------------------


@pytest.mark.parametrize(
    ("wire", "message"),
    [
        ({"$tupel": []}, r"\$: unknown tag object \['\$tupel'\]"),
        ({"$tuple": [], "x": 1}, "unknown tag object"),
        ({"$tuple": 1}, r"\$\.\$tuple: expected a list"),
        ({"$bytes": "!!"}, "not valid base64"),
        ({"$float": "NaN"}, "expected one of nan, inf, -inf"),
        ({"$int": "zz"}, "not a hex integer"),
        ({"$dict": [[1]]}, r"expected a list of \[key, value\] pairs"),
        ({"$set": [[1]]}, "unhashable element"),
        ([{"$dict": [[[1], 2]]}], "unhashable element"),
    ],
)
def test_from_wire_refuses(wire, message):
    with pytest.raises(WireError, match=message):
        from_wire(wire)


def test_opaque_only_where_allowed():
    assert from_wire({"$opaque": "m.Q"}) == Opaque("m.Q")
    with pytest.raises(WireError, match="unknown tag object"):
        from_wire({"$opaque": "m.Q"}, allow_opaque=False)


def test_opaque_is_frozen_equal_by_its_name_and_hashable():
    a, b = Opaque("m.Q"), Opaque("m.Q")
    assert a == b and hash(a) == hash(b) and a != Opaque("m.R")
    assert a != "m.Q" and repr(a) == "Opaque(type_name='m.Q')"
    with pytest.raises(AttributeError):
        a.type_name = "m.R"  # type: ignore[misc]
    with pytest.raises(AttributeError):
        del a.type_name
    with pytest.raises(AttributeError):
        a.other = 1  # type: ignore[attr-defined]
    match a:
        case Opaque(name):
            assert name == "m.Q"
    assert copy.deepcopy(a) == a and pickle.loads(pickle.dumps(a)) == a


def test_the_zygote_loads_no_module_it_does_not_use():
    # Each module the harness loads is heap every candidate's process maps, copies the
    # page tables of at fork and tears down at exit; dataclasses alone pulled in
    # inspect, ast, dis and tokenize (1.4 MB).
    child = Path(sandbox.child.__file__).parent
    script = f"import sys; sys.path.insert(0, {str(child)!r}); import harness; print(*sys.modules)"
    done = subprocess.run(
        [sys.executable, "-I", "-S", "-c", script], check=True, capture_output=True, text=True
    )
    loaded = set(done.stdout.split())
    assert "harness" in loaded
    assert not loaded & {"dataclasses", "inspect", "ast", "dis", "tokenize"}, loaded

"""The comparator (case table in tests/cases/compare.jsonl) and judge_case."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sandbox.cases import resolve_error_name
from sandbox.child.wire import Opaque, from_wire
from sandbox.compare import judge_case, values_equal
from sandbox.types import CaseResult, HiddenCase, Observation, RaisedInfo, make_case

TABLE = Path(__file__).parent.parent / "cases" / "compare.jsonl"


def _rows() -> list[dict[str, Any]]:
    lines = TABLE.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


ROWS = _rows()


def test_table_is_well_formed():
    ids = [row["id"] for row in ROWS]
    assert len(ids) >= 40
    assert len(ids) == len(set(ids)), "ids must be unique"
    for row in ROWS:
        assert set(row) == {"id", "expected", "actual", "tol", "equal"}, row["id"]
        assert isinstance(row["equal"], bool), row["id"]
    assert any(row["equal"] for row in ROWS)
    assert any(not row["equal"] for row in ROWS)


@pytest.mark.parametrize("row", ROWS, ids=[row["id"] for row in ROWS])
def test_values_equal_table(row):
    expected = from_wire(row["expected"])
    actual = from_wire(row["actual"])
    assert values_equal(expected, actual, tol=row["tol"]) is row["equal"]


@pytest.mark.parametrize("row", ROWS, ids=[row["id"] for row in ROWS])
def test_values_equal_is_symmetric(row):
    expected = from_wire(row["expected"])
    actual = from_wire(row["actual"])
    assert values_equal(actual, expected, tol=row["tol"]) is row["equal"]


def test_python_equality_is_not_enough():
    # Sanity: these are the traps the table guards against.
    assert {1} == {True}
    assert {1: "a"} == {True: "a"}
    assert values_equal({1}, {True}) is False
    assert values_equal({1: "a"}, {True: "a"}) is False


def test_large_tol_set_matching_terminates():
    expected = {(float(i), "k") for i in range(600)}
    actual = {(i + 0.5, "k") for i in range(600)}
    assert values_equal(expected, actual, tol=0.5)
    assert not values_equal(expected, actual, tol=0.25)


def test_non_wire_type_is_a_grader_bug():
    with pytest.raises(TypeError, match="not plain wire data"):
        values_equal(object(), 1)
    with pytest.raises(TypeError, match="not plain wire data"):
        values_equal([1], [range(1)])


def test_opaque_is_never_equal_even_to_itself():
    thing = Opaque("candidate.Thing")
    assert not values_equal(thing, thing)


# --- judge_case -------------------------------------------------------------


def _raised(*mro: str, type_name: str | None = None, message: str = "") -> Observation:
    info = RaisedInfo(type_name=type_name or mro[0], mro=tuple(mro), message=message)
    return Observation("raised", raised=info)


KEY_ERROR_MRO = (
    "builtins.KeyError",
    "builtins.LookupError",
    "builtins.Exception",
    "builtins.BaseException",
)


def _expecting(error: str) -> HiddenCase:
    return make_case("f", 1, error=resolve_error_name(error))


def test_returned_equal_is_ok():
    case = make_case("add", 1, 2, expect=3)
    assert judge_case(case, Observation("returned", value=3)) == CaseResult("ok")


def test_returned_with_tol_is_ok():
    case = make_case("mean", [0.1, 0.2], expect=0.15, tol=1e-9)
    assert judge_case(case, Observation("returned", value=0.15000000000000002)).outcome == "ok"


def test_returned_wrong_type():
    case = make_case("is_even", 2, expect=True)
    result = judge_case(case, Observation("returned", value=1))
    assert result == CaseResult("wrong", "returned a value of a different type (int)")


def test_returned_wrong_value():
    case = make_case("add", 1, 2, expect=3)
    assert judge_case(case, Observation("returned", value=4)) == CaseResult(
        "wrong", "returned a different value"
    )


def test_returned_opaque_is_wrong():
    case = make_case("f", expect=1)
    result = judge_case(case, Observation("returned", value=Opaque("candidate.MyInt")))
    assert result == CaseResult("wrong", "returned an object that is not plain data")


def test_returned_when_error_expected_is_not_raised():
    result = judge_case(_expecting("TypeError"), Observation("returned", value=None))
    assert result == CaseResult("not_raised", "no exception raised")


def test_returning_junk_when_error_expected_is_not_raised_either():
    obs = Observation("unserializable", detail="$: value contains itself")
    assert judge_case(_expecting("TypeError"), obs).outcome == "not_raised"


def test_raising_another_exception_than_expected_stays_error():
    obs = _raised("builtins.ValueError", "builtins.Exception", "builtins.BaseException")
    assert judge_case(_expecting("TypeError"), obs).outcome == "error"
    assert judge_case(make_case("f", expect=1), obs).outcome == "error"


def test_raised_expected_exactly():
    obs = _raised("builtins.TypeError", "builtins.Exception", "builtins.BaseException")
    assert judge_case(_expecting("TypeError"), obs) == CaseResult("ok")


def test_raised_subclass_matches():
    obs = _raised(*KEY_ERROR_MRO)
    assert judge_case(_expecting("LookupError"), obs).outcome == "ok"


def test_raised_superclass_does_not_match():
    obs = _raised("builtins.LookupError", "builtins.Exception", "builtins.BaseException")
    result = judge_case(_expecting("KeyError"), obs)
    assert result == CaseResult("error", "raised builtins.LookupError")


def test_raised_stdlib_dotted_error():
    obs = _raised(
        "json.decoder.JSONDecodeError",
        "builtins.ValueError",
        "builtins.Exception",
        "builtins.BaseException",
    )
    assert judge_case(_expecting("json.JSONDecodeError"), obs).outcome == "ok"
    assert judge_case(_expecting("ValueError"), obs).outcome == "ok"


def test_look_alike_class_does_not_match():
    # The candidate defined its own ``TypeError``; the sandbox leaves it out of mro.
    obs = _raised(
        "builtins.Exception",
        "builtins.BaseException",
        type_name="candidate.TypeError",
    )
    result = judge_case(_expecting("TypeError"), obs)
    assert result == CaseResult("error", "raised a subclass of builtins.Exception")
    assert "candidate" not in result.detail


@pytest.mark.parametrize("name", ["SystemExit", "KeyboardInterrupt", "GeneratorExit"])
def test_base_exception_only_subclasses_need_their_name(name):
    obs = _raised(f"builtins.{name}", "builtins.BaseException")
    assert judge_case(_expecting("Exception"), obs).outcome == "error"
    assert judge_case(_expecting(name), obs).outcome == "ok"
    # Documented: an expected BaseException matches any subclass, these included.
    assert judge_case(_expecting("BaseException"), obs).outcome == "ok"


def test_raised_when_none_expected():
    obs = _raised("builtins.ValueError", "builtins.Exception", "builtins.BaseException")
    result = judge_case(make_case("f", expect=1), obs)
    assert result == CaseResult("error", "raised builtins.ValueError")


def test_raised_without_info_is_error():
    result = judge_case(make_case("f", expect=1), Observation("raised"))
    assert result.outcome == "error"


def test_raised_with_empty_mro():
    obs = Observation("raised", raised=RaisedInfo("candidate.Weird", ()))
    result = judge_case(_expecting("Exception"), obs)
    assert result == CaseResult("error", "raised an exception of a non-standard class")


def test_unserializable_is_wrong():
    obs = Observation("unserializable", detail="$[0]: value contains itself")
    assert judge_case(make_case("f", expect=[1]), obs).outcome == "wrong"


@pytest.mark.parametrize("status", ["timeout", "crash", "resource", "not_run"])
def test_infrastructure_statuses_keep_their_name(status):
    assert judge_case(make_case("f", expect=1), Observation(status)).outcome == status


def test_a_case_stopped_at_a_tree_cap_names_the_cap():
    result = judge_case(make_case("f", expect=1), Observation("resource", detail="processes"))
    assert result == CaseResult("resource", "stopped at a cap on the process tree (processes)")


SECRET_OBSERVATIONS = [
    Observation("returned", value="nope"),
    Observation("returned", value=["SECRET-ARG"]),
    Observation("returned", value=Opaque("candidate.SECRET-ARG")),
    _raised("builtins.ValueError", "builtins.Exception", message="SECRET-ARG SECRET-EXPECTED"),
    _raised("builtins.Exception", type_name="SECRET-ARG"),
    Observation("unserializable", detail="$[0]<key> 'SECRET-ARG'"),
    Observation("timeout", detail="SECRET-ARG"),
    Observation("crash", detail="SECRET-ARG"),
    Observation("not_run", detail="SECRET-ARG"),
]


@pytest.mark.parametrize("obs", SECRET_OBSERVATIONS, ids=lambda o: o.status)
def test_detail_never_leaks_expected_or_arguments(obs):
    for case in (
        make_case("f", "SECRET-ARG", key="SECRET-ARG", expect="SECRET-EXPECTED"),
        make_case("f", "SECRET-ARG", error=resolve_error_name("KeyError")),
    ):
        result = judge_case(case, obs)
        assert "SECRET" not in result.detail, (case, obs, result)

"""`gradebox import apps` and `gradebox import livecodebench`: stdin/stdout tasks, in the real
sandbox, from fixtures in the published layouts (tests/cases/benchmarks/stdio/README.md)."""

from __future__ import annotations

import base64
import builtins
import json
import pickle
import zlib
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from gradebox.benchmarks.bounds import TooLarge
from gradebox.benchmarks.unpickle import UnsafePickle, decode_compressed, restricted_loads
from gradebox.cli import cli

STDIO = Path(__file__).resolve().parents[2] / "cases" / "benchmarks" / "stdio"


def _import(fmt: str, source: Path, out: Path, *extra: str) -> dict:
    res = CliRunner().invoke(cli, ["import", fmt, str(source), "--out", str(out), "--json", *extra])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def _verdicts(rows: list[dict]) -> dict[str, bool]:
    return {r["id"]: r["pass"] for r in rows}


def _solutions(benchmark: str, tmp: Path) -> Path:
    path = tmp / f"{benchmark.strip('/')}.jsonl"
    lines = [line for line in (STDIO / "solutions.jsonl").read_text().splitlines()]
    path.write_text("".join(x + "\n" for x in lines if json.loads(x)["task"].startswith(benchmark)))
    return path


def test_apps_stdio_tasks_pass_and_fail(tmp_path: Path, grade) -> None:
    out = tmp_path / "apps"
    report = _import("apps", STDIO / "apps.jsonl", out)
    assert report["tasks"] == 2
    assert report["cases"] == {"function": 0, "stdio": 5, "program": 0}
    assert report["skipped"] == [
        {
            "task": "APPS/9003",
            "what": "task",
            "why": "call-based (fn_name): not a stdin/stdout task",
        }
    ]
    hidden = [json.loads(line) for line in (out / "hidden.jsonl").read_text().splitlines()]
    assert hidden[3]["stdin"] == "3\n1 2 4\n" and hidden[4]["stdin"] == "2\n10 11\n"
    refs = tmp_path / "refs.jsonl"
    refs.write_text(
        "".join(
            json.dumps(
                {"id": r.get("task", r["fn"]), "task": r.get("task", r["fn"]), "code": r["code"]}
            )
            + "\n"
            for r in map(json.loads, (out / "reference.jsonl").read_text().splitlines())
        )
    )
    assert all(_verdicts(grade(out / "hidden.jsonl", refs, out / "public.jsonl")).values())
    rows = grade(out / "hidden.jsonl", _solutions("APPS/", tmp_path), out / "public.jsonl")
    assert _verdicts(rows) == {
        "apps-ok-1": True,
        "apps-bad-1": False,
        "apps-ok-os": True,  # a fast-input program importing os passes the gate
        "apps-ok-2": True,
        "apps-bad-2": False,
    }
    assert {r.get("kind") for r in rows} == {"stdio"}


def test_livecodebench_default_tol_and_exact_mode(tmp_path: Path, grade) -> None:
    out = tmp_path / "lcb"
    report = _import("livecodebench", STDIO / "livecodebench.jsonl", out)
    assert report["tasks"] == 2
    assert report["cases"]["stdio"] == 5  # 3 of abc900_a (1 public, 2 compressed private), 2
    assert [s["task"] for s in report["skipped"]] == ["LiveCodeBench/3000"] * 2
    solutions = _solutions("LiveCodeBench/", tmp_path)
    rows = grade(out / "hidden.jsonl", solutions, out / "public.jsonl")
    assert _verdicts(rows) == {
        "lcb-ok-1": True,  # 0.333333333333 for 0.3333333333: within the default tol
        "lcb-bad-1": False,
        "lcb-ok-2": True,
        "lcb-bad-2": False,
    }
    exact = tmp_path / "exact"
    _import("livecodebench", STDIO / "livecodebench.jsonl", exact, "--stdout", "exact")
    rows = grade(exact / "hidden.jsonl", solutions, exact / "public.jsonl")
    assert _verdicts(rows)["lcb-ok-1"] is False
    assert rows[0]["outcomes"] == ["wrong", "wrong", "wrong"]
    assert _verdicts(rows)["lcb-ok-2"] is True  # prints exactly what is expected


class _Touch:
    """Unpickling this would create ``path``: the arbitrary object an attacker builds."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self) -> tuple:
        return (builtins.open, (self.path, "w"))


def _compressed(obj: object) -> str:
    return base64.b64encode(zlib.compress(pickle.dumps(obj))).decode()


def test_a_pickle_building_an_arbitrary_object_is_refused(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    row = json.loads((STDIO / "livecodebench.jsonl").read_text().splitlines()[0])
    row["private_test_cases"] = _compressed(_Touch(str(marker)))
    source = tmp_path / "evil.jsonl"
    source.write_text(json.dumps(row) + "\n")
    res = CliRunner().invoke(
        cli, ["import", "livecodebench", str(source), "--out", str(tmp_path / "o")]
    )
    assert res.exit_code == 2
    assert f"{source}:1: private_test_cases: refused: the pickle names io.open" in res.output
    assert not marker.exists()
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("protocol", range(pickle.HIGHEST_PROTOCOL + 1))
def test_plain_pickles_load_at_every_protocol(protocol: int) -> None:
    value: dict = {"a": [1, 2.5, None, True, "x"], "t": (1, (2,))}
    if protocol >= 4:  # earlier protocols build sets and bytes by calling a class: refused
        value.update(s={1, 2}, f=frozenset({3}), b=b"y")
    assert restricted_loads(pickle.dumps(value, protocol=protocol)) == value
    text = json.dumps([{"input": "1", "output": "2"}])
    packed = base64.b64encode(zlib.compress(pickle.dumps(text, protocol=protocol))).decode()
    assert decode_compressed(packed) == text


class _Persistent(pickle.Pickler):
    def persistent_id(self, obj: object) -> str | None:
        return "id" if obj == "secret" else None


def _persistent() -> bytes:
    import io

    buf = io.BytesIO()
    _Persistent(buf).dump(["secret"])
    return buf.getvalue()


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (pickle.dumps(_Touch("/nonexistent/x")), "names io.open"),
        (pickle.dumps(Path("/etc")), "names pathlib"),
        (pickle.dumps(bytearray(b"x"), protocol=2), "names __builtin__.bytearray"),
        (pickle.dumps({1}, protocol=2), "names __builtin__.set"),
        (_persistent(), "persistent ids"),
        (b"\x80\x04garbage", "not a valid pickle"),
    ],
    ids=["reduce", "class", "bytearray-p2", "set-p2", "persistent", "garbage"],
)
def test_everything_but_plain_data_is_refused(data: bytes, message: str) -> None:
    with pytest.raises(UnsafePickle, match=message):
        restricted_loads(data)


def test_a_zlib_bomb_is_refused(bomb: Callable[[int], bytes]) -> None:
    with pytest.raises(TooLarge, match="decompresses to more than --max-row-bytes"):
        decode_compressed(base64.b64encode(bomb(600)).decode())  # 600 MiB in 600 KB
    with pytest.raises(TooLarge, match=r"decompresses to more than --max-row-bytes \(1024\)"):
        decode_compressed(base64.b64encode(zlib.compress(bytes(1025))).decode(), limit=1024)

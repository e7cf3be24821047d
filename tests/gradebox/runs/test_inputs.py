"""Samples are checked up front, line by line, and read from disk as the run reaches them."""

from __future__ import annotations

import json
import os
from importlib.resources import files
from pathlib import Path

import pytest

from gradebox.errors import BadInput
from gradebox.model import Sample
from gradebox.runs import inputs
from gradebox.runs.inputs import SampleFile, load_inputs, load_samples, open_samples
from sandbox.cases import read_jsonl

CODE = "def inc(x):\n    return x + 1\n"


def _line(sid: str, fn: str = "inc", **extra: object) -> str:
    return json.dumps({"id": sid, "fn": fn, "code": CODE, **extra})


def _write(path: Path, lines: list[str | bytes]) -> Path:
    path.write_bytes(b"".join(x if isinstance(x, bytes) else x.encode() + b"\n" for x in lines))
    return path


def _eager(path: Path) -> tuple[list[Sample], list[str]]:
    """The loader as it was: read_jsonl over the whole file, duplicates after."""
    schema = json.loads((files("gradebox") / "schemas" / "samples.schema.json").read_text())

    def build(obj, line):
        if ("reply" in obj) == ("code" in obj):
            return None, ["a sample needs exactly one of 'reply' (a model answer) or 'code'"]
        return Sample.from_json(obj, line), []

    items, found = read_jsonl(path, schema, build)
    seen: dict[str, int] = {}
    good = []
    for s in items:
        if s.id in seen:
            found.append((s.line, f"id: sample id {s.id!r} is already used on line {seen[s.id]}"))
            continue
        seen[s.id] = s.line
        good.append(s)
    return good, [f"{path}:{n}: {m}" for n, m in sorted(found)]


def _awkward(path: Path) -> Path:
    """Bad lines, blank lines, BOMs, CRLF and a duplicate, spread over several chunks."""
    lines: list[str | bytes] = [b"\xef\xbb\xbf" + _line("s0").encode() + b"\n"]
    for k in range(1, 40):
        lines.append(_line(f"s{k}"))
        if k % 7 == 0:
            lines.append("")
        if k % 9 == 0:
            lines.append(f'{{"id": "bad{k}", "fn": "inc"')  # torn JSON
        if k % 11 == 0:
            lines.append(b"\xff\xfe not utf-8\n")
        if k % 13 == 0:
            lines.append(_line(f"s{k - 1}"))  # a duplicate id, across chunks
        if k == 17:
            lines.append(b"\xef\xbb\xbf" + _line("bom-inside").encode() + b"\n")
        if k == 23:
            lines.append(_line("crlf").encode() + b"\r\n")
        if k == 29:
            lines.append(json.dumps({"id": "both", "fn": "inc", "code": "x", "reply": "y"}))
            lines.append('{"id": "nan", "fn": "inc", "code": "x", "meta": {"v": NaN}}')
    lines.append(_line("last").encode())  # no newline at the end
    return _write(path, lines)


@pytest.mark.parametrize("chunk", [1, 2, 3, 5, 8, 2048])
def test_chunked_checks_say_what_one_pass_over_the_file_says(tmp_path, monkeypatch, chunk):
    path = _awkward(tmp_path / "samples.jsonl")
    monkeypatch.setattr(inputs, "CHUNK_LINES", chunk)
    want, want_problems = _eager(path)
    assert want_problems  # the file has bad lines of every kind
    with pytest.raises(BadInput) as err:
        open_samples(path)
    assert err.value.problems == want_problems
    samples, problems = open_samples(path, skip_bad_lines=True)
    assert problems == want_problems
    assert list(samples) == want  # same samples, same line numbers
    assert [samples.line(k) for k in range(len(samples))] == [s.line for s in want]
    assert list(samples.ids) == [s.id for s in want]


def test_a_sample_is_read_from_the_file_when_asked_for_and_not_held(tmp_path):
    path = _write(tmp_path / "samples.jsonl", [_line(f"s{k}") for k in range(5)])
    samples, _ = open_samples(path)
    assert isinstance(samples, SampleFile) and len(samples) == 5
    held = [v for name in dir(samples) if not name.startswith("__")
            for v in [getattr(samples, name, None)]]  # fmt: skip
    flat = [x for v in held for x in (v if isinstance(v, list | tuple | dict) else [v])]
    assert not any(isinstance(x, Sample) for x in flat)
    first, again = samples[0], samples[0]
    assert first == again and first is not again  # built from the line at each read
    assert first == Sample("s0", "inc", code=CODE, line=1)
    it = iter(samples)
    assert next(it).id == "s0"  # an iterator: one line read per step


def test_the_run_reads_its_samples_lazily(tmp_path):
    hidden = tmp_path / "hidden.jsonl"
    hidden.write_text('{"fn": "inc", "args": [1], "expect": 2}\n')
    path = _write(tmp_path / "samples.jsonl", [_line("a"), _line("b", fn="dec"), _line("c")])
    run = load_inputs(hidden, path, skip_bad_lines=True)
    assert isinstance(run.samples, SampleFile)
    assert list(run.samples.ids) == ["a", "c"]
    assert run.problems == [f"{path}:2: fn: 'dec' has no hidden cases in {hidden}"]
    assert [s.line for s in run.samples] == [1, 3]


def test_a_line_edited_in_place_after_the_check_is_refused(tmp_path):
    """Same size, modification time put back: the line's digest still tells."""
    path = _write(tmp_path / "samples.jsonl", [_line("a"), _line("b")])
    samples, _ = open_samples(path)
    st = os.stat(path)
    text = path.read_bytes()
    path.write_bytes(text.replace(b"x + 1", b"x + 2"))  # same length
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    with pytest.raises(BadInput, match=r"samples\.jsonl:1: changed after it was checked"):
        samples[0]


@pytest.mark.parametrize("how", ["append", "truncate", "replace"])
def test_a_samples_file_changed_after_the_check_is_refused(tmp_path, how):
    path = _write(tmp_path / "samples.jsonl", [_line("a"), _line("b")])
    samples, _ = open_samples(path)
    assert samples[1].id == "b"
    if how == "append":
        with path.open("a") as fh:
            fh.write(_line("c") + "\n")
        why = "its size went from"
    elif how == "truncate":
        path.write_text(_line("a") + "\n")
        why = "its size went from"
    else:
        other = _write(tmp_path / "other.jsonl", [_line("a"), _line("b")])
        other.replace(path)  # what an editor's save does
        why = "replaced by another file"
    with pytest.raises(BadInput, match="changed after it was checked") as err:
        samples[0]
    assert why in str(err.value)
    with pytest.raises(BadInput):
        samples.check_unchanged()


def test_select_keeps_the_checks(tmp_path):
    path = _write(tmp_path / "samples.jsonl", [_line(f"s{k}") for k in range(4)])
    samples, _ = open_samples(path)
    odd = samples.select(lambda k: k % 2 == 1)
    assert [s.id for s in odd] == ["s1", "s3"] and odd.position("s3") == 1
    with path.open("a") as fh:
        fh.write("\n")
    with pytest.raises(BadInput, match="changed after it was checked"):
        odd[0]


@pytest.mark.parametrize(
    ("content", "message"),
    [(b"", "file is empty"), (b"\n  \n\r\n", "file is empty"), (None, "no such file")],
)
def test_file_level_problems(tmp_path, content, message):
    path = tmp_path / "samples.jsonl"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(BadInput) as err:
        open_samples(path)
    assert err.value.problems == [f"{path}: {message}"]


def test_load_samples_still_loads_them_all(tmp_path):
    path = _write(tmp_path / "samples.jsonl", [_line("a"), _line("b")])
    samples, problems = load_samples(path)
    assert isinstance(samples, list) and [s.id for s in samples] == ["a", "b"]
    assert problems == []


def test_samples_from_a_pipe_are_read_back_from_a_private_copy(tmp_path):
    """A pipe cannot be read twice: its bytes are copied aside once, then read as a file."""
    import gc
    import threading

    fifo = tmp_path / "samples.fifo"
    os.mkfifo(fifo)
    lines = [_line("a"), _line("b", fn="dec"), _line("c")]
    writer = threading.Thread(target=lambda: fifo.write_text("\n".join(lines) + "\n"))
    writer.start()
    samples, _ = open_samples(fifo)
    writer.join()
    copy = samples._source
    assert copy != fifo and copy.is_file()
    kept = samples.select(lambda k: k != 1)
    del samples
    gc.collect()
    assert [s.id for s in kept] == ["a", "c"]  # the copy lives as long as a view needs it
    del kept
    gc.collect()
    assert not copy.exists()

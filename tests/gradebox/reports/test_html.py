"""The HTML report: structure, self-containment, hostile text inert, and a real headless browser.

The browser tests run Debian's ``chromium`` (``apt-get install chromium``) and are
skipped, saying so, when it is not installed.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import shutil
import struct
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest
from click.testing import CliRunner

from gradebox.grade import Grade, StaticFinding, StaticReport
from gradebox.pipeline.extract import extract
from gradebox.reports.html import render_html, write_html
from gradebox.runs.summary import summarize
from judge.types import Issue, JudgeResult

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
GOLDEN = Path(__file__).resolve().parents[2] / "cases" / "golden" / "results.jsonl"
CHROMIUM = shutil.which("chromium")
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="Debian's chromium is not installed (apt-get install -y chromium)"
)
HOSTILE = "<script>document.title='pwned'</script><img src=x onerror=\"document.title='pwned'\">"


@pytest.fixture(scope="module")
def run():
    """The golden rows of the examples' run (static layers on), and the extracted code.

    Report tests read the checked-in results file, so they need no sandbox; one test
    below still renders a real run end to end through the CLI.
    """
    ids = []
    sources = {}
    for line in (EXAMPLES / "samples.jsonl").read_text().splitlines():
        s = json.loads(line)
        ids.append(s["id"])
        ext = extract(reply=s.get("reply"), code=s.get("code"), fn=s["fn"], helpers_allowed=False)
        if ext.code:
            sources[s["id"]] = ext.code
    golden = {}
    for line in GOLDEN.read_text().splitlines():
        row = json.loads(line)
        golden.setdefault(row["id"], row)
    rows = [golden[i] for i in ids]
    return rows, sources


def _g(rows):
    """The typed grades the report reads (every row must read back)."""
    return [Grade.from_row(r) for r in rows]


def _judged(rows):
    """The rows with judge annotations as a scored judge would leave them."""
    out = []
    for r in rows:
        tests_ok = r["outcomes"] and all(o == "ok" for o in r["outcomes"])
        judge = JudgeResult(
            status="scored", verdict="match" if tests_ok else "mismatch",
            scores={"intent": 3 if tests_ok else 1}, weighted=0.9 if tests_ok else 0.3,
            issues=() if tests_ok else (Issue(1, "error", "wrong"),),
            rationale="checked", rubric="default@1", model="judge-model",
        )  # fmt: skip
        out.append(r | {"judge": judge.to_row()})
    return out


HOSTILE_EXPLAIN = [  # --explain entries whose every text is hostile
    {"case": 3, "name": HOSTILE, "args": [HOSTILE], "kwargs": {HOSTILE: HOSTILE},
     "expect": {"error": HOSTILE}, "got": {"raised": HOSTILE, "message": HOSTILE},
     "outcome": "error", "detail": "raised"},
    {"case": 4, "name": None, "args": [], "kwargs": {}, "expect": {"$tuple": [HOSTILE]},
     "got": HOSTILE, "outcome": "wrong", "detail": "returned a different value"},
]  # fmt: skip


def _hostile_rows(rows):
    first = rows[1] | {
        "id": HOSTILE,
        "fn": HOSTILE,
        "detail": HOSTILE,
        "explain": HOSTILE_EXPLAIN,
        "static": StaticReport(
            findings=(StaticFinding("lint", HOSTILE, "high", 2, 1, HOSTILE),),
            metrics=None,
            diff=None,
            effect="pass",
            deciding=(),
            infra_error=None,
        ).to_json(),
        "judge": JudgeResult(
            status="scored",
            verdict="mismatch",
            rationale=HOSTILE,
            issues=(Issue(1, "error", HOSTILE),),
            unmet_requirements=(HOSTILE,),
            scores={HOSTILE: 1},
        ).to_row(),
    }
    code = f"def f():\n    return '</pre></details>{HOSTILE}'\n# \ud800 \x00 end\n"
    return [first, *rows[2:]], {HOSTILE: code}


class _Tags(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


def _tags(text):
    parser = _Tags()
    parser.feed(text)
    return parser.tags


def _classes(tags, tag, cls):
    return [a for t, a in tags if t == tag and cls in (a.get("class") or "").split()]


def test_sections_cards_tables_and_drill_down(run):
    rows, sources = run
    text = render_html(_g(_judged(rows)), summarize(rows), title="examples", sources=sources)
    tags = _tags(text)
    assert len(_classes(tags, "details", "sample")) == len(rows)
    cards = re.findall(r'<div class="card"><h3>([^<]+)</h3><div class="big">([^<]+)</div>', text)
    assert dict(cards) == {
        "pass@1": "0.300", "verdicts": "5 / 17", "timeouts": "2", "hidden cases": "36 / 73",
        "judge reliability": "\u03ba 1.00", "static findings": "7",
    }  # fmt: skip
    assert "pass@5, pass@10: no task has that many samples (undefined, not 1.0)." in text
    assert "agrees with hidden tests on <b>17</b> of 17 scored" in text
    task_links = [a["data-task"] for t, a in tags if t == "a" and "data-task" in a]
    assert task_links == ["dedupe", "fib", "is_even", "mean", "split_pair"]
    chart = [a for t, a in tags if t == "svg" and a.get("class") == "chart"]
    assert len(chart) == 1 and text.count("<title>") == 1 + 5  # the page's, one per bar
    cells = _classes(tags, "span", "case")
    assert len(cells) == sum(len(r["outcomes"]) for r in rows)
    assert {c["title"].split(": ")[1] for c in cells} == {
        "ok",
        "wrong answer",
        "unexpected exception",
        "expected exception not raised",
        "timed out",
        "not run",
    }
    # even-int-not-bool has a mypy finding on line 4, shown with lines 2-4 of its code
    assert "<span class=hit><i>4</i>    return 1 if n % 2 == 0 else 0</span>" in text
    assert "Incompatible return value type" in text
    assert "summary.json" in text


def test_rows_without_code_say_there_are_no_excerpts(run):
    rows, _ = run
    text = render_html(_g(rows), None)
    assert "code is not on the row: no excerpts" in text
    assert "<span class=hit>" not in text and "Run summary" not in text


def test_the_code_comes_from_the_sources_by_sample_id(run):
    rows, sources = run
    row = next(r for r in rows if r["id"] == "even-int-not-bool")
    text = render_html(_g([row]), None, sources={row["id"]: sources[row["id"]]})
    assert "<span class=hit><i>4</i>" in text


def test_self_contained_and_locked_down(run):
    rows, sources = run
    text = render_html(_g(rows), summarize(rows), sources=sources)
    tags = _tags(text)
    assert not [a for _, a in tags if "src" in a]
    assert {a["href"] for t, a in tags if t == "a"} == {"#samples"}
    assert "http://" not in text and "https://" not in text and "<link" not in text
    csp = next(a["content"] for t, a in tags if t == "meta" and "http-equiv" in a)
    assert "default-src 'none'" in csp
    for tag in ("script", "style"):
        body = re.search(rf"<{tag}>(.*?)</{tag}>", text, re.S).group(1)
        digest = base64.b64encode(hashlib.sha256(body.encode()).digest()).decode()
        assert f"{tag}-src 'sha256-{digest}'" in csp


def test_hostile_text_is_escaped(run):
    rows, sources = run
    bad_rows, bad_sources = _hostile_rows(rows)
    text = render_html(
        _g(bad_rows), {"note": HOSTILE}, title=HOSTILE, sources=sources | bad_sources
    )
    assert (
        text.count("<script") == 1 and "<img" not in text and "</pre></details><script" not in text
    )
    assert [t for t, _ in _tags(text)].count("script") == 1
    assert "&lt;script&gt;document.title=&#x27;pwned&#x27;&lt;/script&gt;" in text
    explained = text.split("Cases not ok, explained (2)")[1].split("</table>")[0]
    assert explained.count("&lt;/script&gt;&lt;img src=x onerror=") >= 6
    assert "\ud800" not in text and "\x00" not in text
    text.encode("utf-8")  # writable as UTF-8


def test_empty_run(tmp_path):
    write_html([], None, tmp_path / "r.html", title="nothing")
    text = (tmp_path / "r.html").read_text()
    assert "0 samples" in text and '<div class="big">n/a</div>' in text


# --- a real browser --------------------------------------------------------------------


def _chromium(tmp_path: Path, page: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    argv = [
        CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
        "--disable-background-networking", "--disable-component-update", "--no-first-run",
        "--disable-sync", f"--user-data-dir={tmp_path / 'profile'}",
        "--enable-logging=stderr", "--v=0", *extra, page.as_uri(),
    ]  # fmt: skip
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)


def _console(stderr: str) -> list[str]:
    """Console messages and uncaught errors the page produced (CSP violations included)."""
    return [line for line in stderr.splitlines() if "CONSOLE" in line or "Uncaught" in line]


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


@needs_chromium
def test_browser_catches_console_errors(tmp_path):
    """The check below is only worth something if a broken page is caught."""
    page = tmp_path / "broken.html"
    page.write_text("<!DOCTYPE html><p>x</p><script>throw new Error('kaboom')</script>")
    res = _chromium(tmp_path, page, "--dump-dom")
    assert any("Uncaught Error: kaboom" in line for line in _console(res.stderr)), res.stderr


@needs_chromium
def test_report_in_headless_chromium(tmp_path, run):
    rows, sources = run
    page = tmp_path / "report.html"
    write_html(_g(_judged(rows)), summarize(rows), page, title="gradebox examples", sources=sources)
    shot = tmp_path / "report.png"
    res = _chromium(tmp_path, page, f"--screenshot={shot}", "--window-size=1280,2000")
    assert res.returncode == 0, res.stderr[-2000:]
    assert _png_size(shot) == (1280, 2000)
    assert shot.stat().st_size > 50_000, "a blank page is ~12 kB"
    assert _console(res.stderr) == []
    dom = _chromium(tmp_path, page, "--dump-dom")
    assert _console(dom.stderr) == []
    assert 'data-ready="1"' in dom.stdout, "the report's script did not run"
    assert dom.stdout.count('class="sample"') == len(rows)
    assert re.search(r'<b id="shown">17</b>', dom.stdout)


@needs_chromium
def test_hostile_report_is_inert_in_chromium(tmp_path, run):
    rows, sources = run
    bad_rows, bad_sources = _hostile_rows(rows)
    page = tmp_path / "hostile.html"
    write_html(_g(bad_rows), None, page, title="safe title", sources=sources | bad_sources)
    dom = _chromium(tmp_path, page, "--dump-dom")
    assert _console(dom.stderr) == [], "a console message may be a refused injection"
    assert 'data-ready="1"' in dom.stdout
    assert "<title>safe title</title>" in dom.stdout and "pwned</title>" not in dom.stdout
    assert dom.stdout.count("<script") == 1 and "<img" not in dom.stdout
    assert "&lt;script&gt;document.title='pwned'&lt;/script&gt;" in dom.stdout


def test_report_of_a_real_run_shows_code_case_names_and_explained_failures(tmp_path):
    """A real grade with --explain: escaped code, finding lines marked, names, values."""

    from gradebox.cli import cli

    (tmp_path / "h.jsonl").write_text(
        '{"fn": "inc", "args": [41], "expect": 42, "name": "the answer"}\n'
        '{"fn": "inc", "args": [1], "expect": 2}\n'
    )
    code = "import json\n\n\ndef inc(x):\n    return x if x < 40 else '<b>no</b>'\n"
    (tmp_path / "s.jsonl").write_text(json.dumps({"id": "s1", "fn": "inc", "code": code}) + "\n")
    html_path = tmp_path / "r.html"
    res = CliRunner().invoke(
        cli,
        [
            "grade", "--hidden", str(tmp_path / "h.jsonl"), "--samples", str(tmp_path / "s.jsonl"),
            "--no-judge", "--explain", "--jobs", "1", "--html", str(html_path),
        ],
        env={"GRADEBOX_JUDGE_BASE_URL": None, "OPENAI_API_KEY": None},
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    text = html_path.read_text()
    assert "code is not on the row" not in text
    assert "&#x27;&lt;b&gt;no&lt;/b&gt;&#x27;" in text and "<b>no</b>" not in text
    assert "<span class=hit><i>1</i>import json</span>" in text  # F401 on line 1, marked
    assert "case 0 (the answer)" in text
    assert "Cases not ok, explained (2)" in text
    assert "<code>inc(41)</code>" in text and "<code>42</code>" in text
    assert "&lt;b&gt;no&lt;/b&gt;" in text.split("Cases not ok, explained")[1]


def test_a_large_run_embeds_a_capped_number_of_samples_failures_first(run):
    rows, sources = run
    many = [r | {"id": f"{r['id']}-{k}"} for k in range(20) for r in rows]
    grades = _g(many)
    text = render_html(iter(grades), summarize(many), sources=sources, max_samples=7)
    tags = _tags(text)
    embedded = _classes(tags, "details", "sample")
    failing = sum(g.verdict.verdict != "pass" for g in grades)
    assert len(embedded) == 7
    assert [a["data-verdict"] != "pass" for a in embedded] == [True] * min(7, failing) + [
        False
    ] * max(0, 7 - failing)
    assert f"embeds 7 of {len(many)} samples" in text
    # Cards and tables count every sample, not only the embedded ones.
    assert f"{len(many)} samples" in text
    passed = sum(g.verdict.verdict == "pass" for g in grades)
    assert f"{passed} / {len(many)}" in text


def test_a_run_under_the_cap_embeds_every_sample_without_a_note(run):
    rows, sources = run
    text = render_html(_g(rows), summarize(rows), sources=sources)
    assert len(_classes(_tags(text), "details", "sample")) == len(rows)
    assert "This report embeds" not in text


def test_the_report_holds_at_most_the_cap_while_reading(run):
    from gradebox.reports.html import _Overview

    rows, _ = run
    grades = _g([r | {"id": f"{r['id']}-{k}"} for k in range(30) for r in rows])
    seen = _Overview(5)
    for g in grades:
        seen.add(g)
        assert len(seen._failing) + len(seen._passing) <= 5
    embedded = seen.embedded()
    failing = [g for g in grades if g.verdict.verdict != "pass"]
    assert embedded == sorted(failing[:5], key=grades.index) or len(failing) < 5

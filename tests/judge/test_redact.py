"""``judge.redact``: what counts as the key, and that no run of it survives, whatever the text."""

from __future__ import annotations

import logging

from hypothesis import assume, example, given
from hypothesis import strategies as st

from judge import Judge, JudgeConfig
from judge.redact import HTTP_LOGGERS, MIN_RUN, REDACTED, RedactingFilter, Redactor
from judge.types import Reply

KEY_CHARS = st.characters(
    categories=("Lu", "Ll", "Nd"), include_characters="-_", max_codepoint=0x7F
)
KEYS = st.text(KEY_CHARS, min_size=MIN_RUN, max_size=60)


def runs(key: str, text: str) -> list[str]:
    """Every run of MIN_RUN characters of ``key`` in ``text`` (ASCII case-insensitive)."""
    low = text.lower()
    return [
        key[i : i + MIN_RUN]
        for i in range(len(key) - MIN_RUN + 1)
        if key[i : i + MIN_RUN].lower() in low
    ]


@st.composite
def texts_around(draw: st.DrawFn, key: str) -> str:
    """Text holding pieces of ``key`` (whole, cut anywhere, case changed) among noise."""
    parts: list[str] = []
    for _ in range(draw(st.integers(0, 6))):
        start = draw(st.integers(0, len(key)))
        end = draw(st.integers(start, len(key)))
        piece = key[start:end]
        if draw(st.booleans()):
            piece = piece.upper()
        parts += [draw(st.text(max_size=12)), piece]
    return "".join(parts) + draw(st.text(max_size=12))


@given(st.data(), KEYS)
@example(data=None, key="sk-proj-0123456789abcdef")
def test_no_run_of_eight_survives(data, key):
    assume("redacted" not in key.lower())  # the marker itself would be a run of such a key
    text = f"Incorrect API key provided: {key}." if data is None else data.draw(texts_around(key))
    out = Redactor([key]).text(text)
    assert not runs(key, out)


@given(KEYS, st.text(max_size=80))
def test_text_without_a_run_of_the_key_is_unchanged(key, text):
    assume(not runs(key, text))
    assert Redactor([key]).text(text) == text


@given(KEYS, st.text(max_size=80))
def test_redaction_is_idempotent(key, text):
    assume("redacted" not in key.lower())
    once = Redactor([key]).text(text)
    assert Redactor([key]).text(once) == once


def test_forms_a_proxy_prints():
    key = "sk-proj-4f1c9a7e2b6d8035"
    r = Redactor([key])
    assert (
        r.text(f"Incorrect API key provided: {key}.") == f"Incorrect API key provided: {REDACTED}."
    )
    # OpenAI's own mask shows the first 8 characters: a run, so cut; the tail of 4 is kept.
    assert r.text("sk-proj-************8035") == f"{REDACTED}************8035"
    assert r.text("sk-...8035 and sk-p...035") == "sk-...8035 and sk-p...035"  # < 8 in a row
    assert r.text(f"Bearer {key.upper()}") == f"Bearer {REDACTED}"
    assert r.text("middle: 4f1c9a7e2b") == f"middle: {REDACTED}"
    assert r.text(f"{key}{key}") == REDACTED  # overlapping runs merge


def test_short_keys_are_cut_out_whole_and_nothing_is_cut_without_a_key():
    assert Redactor(["EMPTY"]).text("key EMPTY, not empty") == f"key {REDACTED}, not empty"
    assert not Redactor([None, ""])
    assert Redactor([None, ""]).text("sk-anything-at-all") == "sk-anything-at-all"


def test_values_replies_and_exceptions():
    key = "sk-live-0123456789"
    r = Redactor([key])
    assert r.value({"error": {key: [key, 1, None]}}) == {"error": {REDACTED: [REDACTED, 1, None]}}
    reply = Reply(key, key, key, "stop", key, None, "json_schema")
    assert r.reply(reply) == Reply(
        REDACTED, REDACTED, REDACTED, "stop", REDACTED, None, "json_schema"
    )
    inner = ValueError(f"context {key}")
    exc = RuntimeError(f"failed with {key}")
    exc.body = {"message": key}  # type: ignore[attr-defined]
    exc.__context__ = inner
    r.exception(exc)
    assert exc.args == (f"failed with {REDACTED}",) and exc.body == {"message": REDACTED}  # type: ignore[attr-defined]
    assert inner.args == (f"context {REDACTED}",)


def test_the_filter_redacts_message_args_traceback_and_stack():
    key = "sk-live-0123456789"
    logger = logging.getLogger("httpx2.test-redact")
    records: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    handler = Keep(logging.DEBUG)
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    filt = RedactingFilter(Redactor([key]))
    logger.addFilter(filt)
    try:
        try:
            raise ValueError(f"bad {key}")
        except ValueError:
            logger.debug("header %s", key, exc_info=True, stack_info=True)
        logger.info("no key here %d", 3)
    finally:
        logger.removeFilter(filt)
        logger.removeHandler(handler)
    formatter = logging.Formatter()
    first, second = (formatter.format(rec) for rec in records)
    assert key not in first and f"header {REDACTED}" in first and "ValueError: bad" in first
    assert second == "no key here 3" and records[1].args == (3,)  # untouched


def test_a_judge_filters_the_http_loggers_while_open_and_only_then():
    config = JudgeConfig(base_url="http://127.0.0.1:9/v1", model="m", api_key="sk-live-0123456789")

    def filters() -> list[logging.Filter]:
        found = []
        for name in ("openai._base_client", "httpx2", "httpcore2.http11"):
            found += [f for f in logging.getLogger(name).filters if isinstance(f, RedactingFilter)]
        return found

    before = len(filters())
    judge = Judge(config)
    assert len(filters()) == before + 3
    judge.close()
    assert len(filters()) == before
    assert all(name.split(".")[0] in HTTP_LOGGERS for name in ("httpcore2.http11", "openai"))

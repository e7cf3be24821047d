"""Parsing a body strictly: lone surrogates never get in, whichever way they are written.

The surrogate check runs only when the text holds a ``u`` escape; these are the
ways a lone surrogate can be written, and the ways a valid text resembles one.
"""

from __future__ import annotations

import pytest

from gradebox.service.api.bodies import parse_json
from gradebox.service.problems import ApiError

REFUSED = {
    "lone high": (rb'{"code": "\ud800"}', "lone surrogate"),
    "lone low": (rb'{"code": "x\udfff"}', "lone surrogate"),
    "reversed pair": (rb'{"code": "\ude00\ud83d"}', "lone surrogate"),
    "upper-case escape": (rb'{"code": "\uD800"}', "lone surrogate"),
    "in a key": (rb'{"\ud800": 1}', "lone surrogate"),
    "raw bytes": (b'{"code": "\xed\xa0\x80"}', "invalid UTF-8"),
}
ACCEPTED = {
    "pair": (rb'{"code": "\ud83d\ude00"}', {"code": "\U0001f600"}),
    "escaped backslash": (rb'{"code": "\\ud800"}', {"code": "\\ud800"}),
    "non-ascii as is": ('{"code": "é😀"}'.encode(), {"code": "é😀"}),
    "plain": (b'{"code": "x"}', {"code": "x"}),
}


@pytest.mark.parametrize("name", REFUSED)
def test_a_lone_surrogate_is_refused(name):
    raw, words = REFUSED[name]
    with pytest.raises(ApiError) as caught:
        parse_json(raw)
    assert caught.value.status == 422
    assert words in caught.value.problems[0].message


@pytest.mark.parametrize("name", ACCEPTED)
def test_text_that_resembles_one_is_accepted(name):
    raw, value = ACCEPTED[name]
    assert parse_json(raw) == value

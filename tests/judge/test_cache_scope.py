"""Cache scopes: items of different scopes never share a cache entry; no scope keeps old keys."""

from __future__ import annotations

from judge.cache import cache_key, input_key

REQUEST = {
    "base_url": "http://127.0.0.1:1/v1",
    "model": "m",
    "messages": [{"role": "user", "content": "judge this"}],
    "schema_sha256": "0" * 64,
    "rubric": ("default", "1", "d" * 8),
    "code": "def f(): ...",
    "seed": 0,
    "temperature": 0.0,
}
ITEM = {"fn": "f", "signature": "def f()", "spec": "s", "code": "def f(): ..."}


def test_scopes_make_different_keys_and_no_scope_is_the_old_key():
    assert cache_key(**REQUEST, scope="token-a") != cache_key(**REQUEST, scope="token-b")
    assert cache_key(**REQUEST, scope="token-a") != cache_key(**REQUEST)
    assert cache_key(**REQUEST, scope="") == cache_key(**REQUEST)
    # The key of an unscoped request is what it was before scopes existed (pinned).
    assert cache_key(**REQUEST) == PINNED_REQUEST_KEY
    context = "c" * 64
    assert input_key(context, **ITEM, scope="token-a") != input_key(context, **ITEM, scope="b")
    assert input_key(context, **ITEM, scope="") == input_key(context, **ITEM)
    assert input_key(context, **ITEM) == PINNED_INPUT_KEY


def test_a_scope_cannot_be_forged_by_moving_text_between_fields():
    context = "c" * 64
    shifted = dict(ITEM, code=ITEM["code"] + "token-a")
    assert input_key(context, **ITEM, scope="token-a") != input_key(context, **shifted)


PINNED_REQUEST_KEY = "eec271b3cdb112fe0355436e604225ae9eada69d5023a939e084d08d28ad09c0"
PINNED_INPUT_KEY = "c88706373282c3bf57ba6ddfabb6b239bbf4e1aca14103349d0f64b2ac9f676e"
"""The keys of ``REQUEST`` and ``ITEM`` before scopes existed (computed with that code)."""

"""Nothing a client sends crashes the server: a table of hostile bodies, then Hypothesis."""

from __future__ import annotations

import contextlib
import json

import httpx
import pytest
from anyio.from_thread import start_blocking_portal
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

ENDPOINTS = [("POST", "/v1/grade"), ("POST", "/v1/runs"), ("PUT", "/v1/tasks/is_even")]
HOSTILE = [
    b"",
    b"null",
    b"0",
    b'"x"',
    b"[",
    b"{",
    b"\xff\xfe\x00",
    b"\xef\xbb\xbf{}",
    b"[" * 100_000 + b"]" * 100_000,
    b'{"a":' * 50_000 + b"1" + b"}" * 50_000,
    b"[" + b"9" * 100_000 + b"]",
    b'{"fn": "is_even", "code": "x", "code": "y"}',
    b'{"fn": "is_even", "code": NaN}',
    b'{"fn": "is_even", "code": 1e999}',
    b'{"fn": "is_even", "code": "\\ud800"}',
    b'{"fn": "is_even", "code": "\\u0000"}',
    b'{"fn": "is_even\\n", "code": "x"}',
    b'{"fn": "is_even", "reply": "```python\\n' + b"(" * 5000 + b'\\n```"}',
    b'{"fn": "is_even", "code": "' + b"(" * 100_000 + b'"}',
    b'[{"fn": "is_even", "code": "x"}, 5, null, []]',
    b'{"fn": "is_even", "code": "x"}\n{"fn": \n',
    b'{"hidden": [{"args": [{"$dict": [[[1], 2]]}], "expect": 1}]}',
    b'{"hidden": [{"args": [{"$bytes": 5}], "expect": {"$float": "big"}}]}',
    b'{"hidden": [{"args": [' + b'{"$tuple": [' * 3000 + b"]}" * 3000 + b'], "expect": 1}]}',
    b'{"hidden": [{"args": [1], "expect": 1, "error": "os.system"}]}',
    b'{"hidden": [{"args": [1], "error": "antigravity.X"}]}',
    b'{"hidden": [{"args": [1], "error": "__main__.X"}]}',
    b'{"hidden": {"0": 1}, "limits": {"memory_mb": true}}',
]


@pytest.fixture(scope="module")
def client(sandbox, tmp_path_factory):
    """One app for the module, driven from sync code through a blocking portal."""
    from gradebox.service import ServiceConfig, Store, create_app, create_token

    db = tmp_path_factory.mktemp("hostile") / "svc.sqlite"
    store = Store(db)
    admin = create_token(store, "admin")
    store.close()
    app = create_app(ServiceConfig(db=db, max_body_bytes=2 * 1024 * 1024), sandbox=sandbox)
    headers = {"Authorization": f"Bearer {admin}"}
    with start_blocking_portal() as portal, contextlib.ExitStack() as stack:
        stack.enter_context(portal.wrap_async_context_manager(app.router.lifespan_context(app)))
        transport = httpx.ASGITransport(app=app)
        ac = httpx.AsyncClient(transport=transport, base_url="http://svc", timeout=60)
        stack.enter_context(portal.wrap_async_context_manager(ac))
        body = {"hidden": [{"args": [2], "expect": True}]}
        portal.call(lambda: ac.put("/v1/tasks/is_even", json=body, headers=headers))

        def send(method, path, content):
            return portal.call(lambda: ac.request(method, path, content=content, headers=headers))

        yield send


@pytest.mark.parametrize("body", HOSTILE, ids=range(len(HOSTILE)))
def test_hostile_bodies(client, body):
    for method, path in ENDPOINTS:
        r = client(method, path, body)
        assert 200 <= r.status_code < 500, (path, r.status_code, r.text[:300])
        assert r.headers["content-type"].startswith("application/json")
        r.json()
    assert client("GET", "/healthz", b"").status_code == 200


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)
field_names = st.sampled_from(
    [
        "fn",
        "id",
        "code",
        "reply",
        "claim",
        "public",
        "hidden",
        "limits",
        "args",
        "expect",
        "error",
        "kwargs",
        "tol",
        "$tuple",
        "$set",
        "$bytes",
        "$float",
        "$dict",
    ]
)
structured = st.recursive(
    json_values,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(field_names, inner, max_size=5),
    max_leaves=30,
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    body=st.one_of(st.binary(max_size=200), structured.map(lambda v: json.dumps(v).encode())),
    endpoint=st.sampled_from(ENDPOINTS),
)
def test_random_bodies_never_5xx(client, body, endpoint):
    r = client(*endpoint, body)
    assert r.status_code < 500, (endpoint, body, r.text[:300])

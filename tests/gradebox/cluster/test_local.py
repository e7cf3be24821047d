"""`--scheduler local:N`: a real LocalCluster of worker processes, started and stopped by a run."""

from __future__ import annotations

import urllib.error
import urllib.request

import pytest
from distributed import Client, Security

from gradebox.cluster.address import parse_scheduler
from gradebox.cluster.coordinator import ClusterOptions, open_cluster
from sandbox.types import Limits, make_case

from .conftest import example_args, grade, rows, untimed


def test_rows_on_local_2_are_the_local_pools_static_layers_included(tmp_path):
    local = grade(*example_args(tmp_path / "local.jsonl"))
    assert local.returncode == 0, local.stderr
    dask = grade(*example_args(tmp_path / "dask.jsonl", "--scheduler", "local:2", "--jobs", "1"))
    assert dask.returncode == 0, dask.stderr
    want, got = rows(tmp_path / "local.jsonl"), rows(tmp_path / "dask.jsonl")
    assert [untimed(r) for r in got] == [untimed(r) for r in want]
    assert all(r["static"] is not None for r in got if r["gate"]["contract"] == "ok")


@pytest.mark.parametrize("value", ["local:0", "local:x", "tcp://h", "http://h:1", "h:8786"])
def test_a_malformed_scheduler_is_a_usage_error(tmp_path, value):
    res = grade(*example_args(tmp_path / "out.jsonl", "--scheduler", value))
    assert res.returncode == 2
    assert "--scheduler" in res.stderr
    assert not (tmp_path / "out.jsonl").exists()


def test_a_local_cluster_speaks_tls_only_with_its_own_certificate():
    """Another user on this host who connects to the run's port cannot join or submit."""
    options = ClusterOptions(parse_scheduler("local:1"), "auto", Limits(), 1)
    sb = open_cluster(options)
    try:
        address = sb.scheduler_address
        assert address.startswith("tls://127.0.0.1:")
        case = make_case("inc", 1, expect=2)
        assert sb.run("def inc(x):\n    return x + 1\n", "inc", (case,)).observations[0].value == 2
        with pytest.raises((OSError, TimeoutError)):
            Client(address, security=Security.temporary(), timeout=3)  # a certificate of its own
        with pytest.raises((OSError, TimeoutError, TypeError)):
            Client(address.replace("tls://", "tcp://"), timeout=3)  # no certificate at all
        # The scheduler's plain-HTTP server (TLS does not cover it): loopback, /health only.
        http = sb._cluster.scheduler.http_server
        assert {sock.getsockname()[0] for sock in http._sockets.values()} == {"127.0.0.1"}
        port = http.port
        assert urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5).status == 200
        for page in ("/info/main/workers.html", "/json/identity.json", "/metrics"):
            with pytest.raises(urllib.error.HTTPError) as err:
                urllib.request.urlopen(f"http://127.0.0.1:{port}{page}", timeout=5)
            assert err.value.code == 404, page
    finally:
        sb.close()
    after = sb.run("def inc(x):\n    return x + 1\n", "inc", (case,))  # closed: never hangs
    assert after.infra_error == "the cluster sandbox is closed"

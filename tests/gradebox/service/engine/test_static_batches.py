"""Samples that wait together are checked together, one token's samples per batch.

Real warm tools (ruff, mypy, bandit) behind a recorder that notes each batch it is
given and passes it on unchanged: batches form under concurrency, never mix two
tokens' samples, and give every sample the result it gets alone.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import anyio
import pytest

from gradebox.service.engine.batches import Batcher as _Batcher
from gradebox.service.engine.static import _warm_tools
from static.batch import Candidate, StaticConfig


class Recording:
    """Real warm tools; records which candidates each batch held."""

    def __init__(self) -> None:
        self.tools = _warm_tools(StaticConfig(jobs=1))
        self.batches: list[list[str]] = []
        self.gate = threading.Event()
        self.gate.set()

    def check_batch(self, candidates):
        self.gate.wait(30)
        self.batches.append([c.code for c in candidates])
        return self.tools.check_batch(candidates)

    def close(self) -> None:
        self.tools.close()


def candidate(owner: str, i: int) -> Candidate:
    unused = "    import os\n" if i % 2 else ""  # a finding on half of them
    code = f"def f_{owner}_{i}(n: int) -> int:\n{unused}    return n + {i}\n"
    return Candidate(code=code, fn=f"f_{owner}_{i}")


@pytest.fixture(scope="module")
def recording():
    tools = Recording()
    yield tools
    tools.close()


def test_batches_form_and_never_mix_tokens(recording):
    batcher = _Batcher(lambda _key, c: recording.check_batch(c), 1)
    recording.batches.clear()
    recording.gate.clear()  # hold the first batch so that the rest wait together
    jobs = [(owner, candidate(owner, i)) for i in range(6) for owner in ("alice", "bob")]
    with ThreadPoolExecutor(len(jobs)) as pool:
        futures = [pool.submit(batcher.check, owner, [c]) for owner, c in jobs]
        threading.Timer(0.5, recording.gate.set).start()
        together = [f.result(timeout=120)[0] for f in futures]
    owners = {c.code: owner for owner, c in jobs}
    for batch in recording.batches:
        assert len({owners[code] for code in batch}) == 1, batch  # one token per batch
    assert max(len(b) for b in recording.batches) > 1
    assert len(recording.batches) < len(jobs)
    alone = [recording.tools.check_batch([c])[0] for _, c in jobs]
    assert together == alone
    assert any(r.findings for r in alone) and any(not r.findings for r in alone)


def test_a_tool_error_reaches_every_caller_of_its_batch_only(recording):
    class Broken:
        def check_batch(self, candidates):
            raise RuntimeError("tool died")

        def close(self) -> None:
            pass

    batcher = _Batcher(lambda _key, c: Broken().check_batch(c), 1)
    with pytest.raises(RuntimeError, match="tool died"):
        batcher.check("alice", [candidate("alice", 0)])
    batcher = _Batcher(lambda _key, c: recording.check_batch(c), 1)  # a working one is fine
    assert batcher.check("alice", [candidate("alice", 1)])[0].findings


@pytest.mark.anyio
async def test_batch_sizes_are_in_the_metrics(kit, static_service):
    code = "def is_even(n: int) -> bool:\n    return n % 2 == {}\n"
    async with kit.running(static=static_service) as svc:

        async def grade(i):
            body = {"fn": "is_even", "code": code.format(i), "static": True}
            r = await svc.client.post("/v1/grade", json=body, headers=svc.grader)
            assert r.status_code == 200 and r.json()["static"] is not None

        async with anyio.create_task_group() as tg:
            for i in range(3):
                tg.start_soon(grade, i)
        text = (await svc.client.get("/metrics", headers=svc.admin)).text
    sizes = {
        line.split()[0]: float(line.split()[1])
        for line in text.splitlines()
        if line.startswith("gradebox_static_batch_size_")
    }
    assert sizes["gradebox_static_batch_size_sum"] == 3.0  # every sample, in some batch
    assert 1.0 <= sizes["gradebox_static_batch_size_count"] <= 3.0


def _until(predicate, timeout_s: float = 60.0) -> None:
    """Retry until ``predicate()`` or the deadline (the machine may be busy)."""
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, "never happened"
        time.sleep(0.005)


def _checked(batcher, key, c, announced: threading.Event | None = None, go=None):
    """In a thread: announce a sample of ``key``, then check ``c`` once ``go`` is set."""
    with batcher.expecting(key):
        if announced is not None:
            announced.set()
        if go is not None:
            go.wait(60)
        return batcher.check(key, [c])[0]


def test_a_batch_waits_for_its_keys_announced_samples(recording):
    # The window is long: only the second sample's arrival can start the batch.
    batcher = _Batcher(lambda _key, c: recording.check_batch(c), 1, window_s=600)
    recording.batches.clear()
    first, second = candidate("alice", 10), candidate("alice", 11)
    go, announced = threading.Event(), threading.Event()
    with ThreadPoolExecutor(2) as pool:
        late = pool.submit(_checked, batcher, "alice", second, announced, go)
        assert announced.wait(60)
        early = pool.submit(_checked, batcher, "alice", first)
        _until(lambda: len(batcher._waiting) == 1)  # the first waits for the second
        assert recording.batches == []
        go.set()
        results = [early.result(timeout=120), late.result(timeout=120)]
    assert recording.batches == [[first.code, second.code]]  # one call, not two
    assert results == [recording.tools.check_batch([c])[0] for c in (first, second)]


def test_nothing_on_its_way_or_a_withdrawn_sample_never_holds_a_batch(recording):
    batcher = _Batcher(lambda _key, c: recording.check_batch(c), 1, window_s=600)
    assert batcher.check("alice", [candidate("alice", 12)])  # nothing announced: at once
    entered, leave = threading.Event(), threading.Event()

    def withdrawn() -> None:  # a sample of bob's whose tests could not run: never checked
        with batcher.expecting("bob"):
            entered.set()
            leave.wait(60)

    with ThreadPoolExecutor(3) as pool:
        gone = pool.submit(withdrawn)
        assert entered.wait(60)
        bob = pool.submit(_checked, batcher, "bob", candidate("bob", 14))
        _until(lambda: len(batcher._waiting) == 1)  # bob's batch waits for the other
        # another token's batch never waits behind it
        assert pool.submit(batcher.check, "alice", [candidate("alice", 13)]).result(120)
        assert not bob.done()
        leave.set()  # withdrawn: bob's batch goes
        gone.result(timeout=60)
        assert bob.result(timeout=120).findings == []

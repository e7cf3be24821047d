"""Samples that wait together are checked together, one token's samples per batch.

Real warm tools (ruff, mypy, bandit) behind a recorder that notes each batch it is
given and passes it on unchanged: batches form under concurrency, never mix two
tokens' samples, and give every sample the result it gets alone.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import anyio
import pytest

from gradebox.service.engine.static import _Batcher, _warm_tools
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

"""Fingerprints held compactly give the same mappings and input hashes as before.

``fingerprints`` used to build a dict of every part for every sample (~1.1 KB a
sample, 108 MB at 100,000); now a sample keeps its task and a 32-byte digest and
its mapping is built when asked. Run directories made before must resume: the
input hashes below were computed by the old code (pinned), in its part order.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from gradebox.runs.fingerprint import Fingerprints, UsedJudge, combine, fingerprints
from gradebox.runs.output import _InputHashes

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
PINNED = {
    "even-good": "adeb7b54b00b6daa2c87055721a85133cf49f1bdfdc8b22b6f2cda26a935a7f3",
    "fib-good": "d40852c3c0257547b81b0b803a428150c64163b3fbb23e36a6865251a3251097",
}
ORDER = ["sample", "hidden", "public", "lockfile", "judge", "gradebox", "limits", "options"]


@dataclass
class _Limits:
    case_timeout_s: float = 2.0


def _prints(judge: UsedJudge | None) -> Fingerprints:
    return fingerprints(
        hidden=EXAMPLES / "hidden.jsonl",
        samples=EXAMPLES / "samples.jsonl",
        public=EXAMPLES / "public.jsonl",
        files={"lockfile": None},
        tools={"gradebox": "1.0"},
        limits=_Limits(),
        options={"banned": "os"},
        judge=judge,
    )


def test_input_hashes_and_part_order_are_those_of_earlier_run_dirs():
    prints = _prints(UsedJudge("http://judge/v1", "m", {"fib": "default@1:abc"}))
    assert {sid: combine(prints[sid]) for sid in PINNED} == PINNED
    assert list(prints["fib-good"]) == [*ORDER, "rubric"]
    assert list(_prints(None)["fib-good"]) == [p for p in ORDER if p != "judge"]
    hashes = _InputHashes(prints)
    assert {sid: hashes[sid] for sid in PINNED} == PINNED
    assert list(hashes) == list(prints) and len(hashes) == len(prints) == 17


def test_samples_of_one_task_share_its_parts_and_differ_in_their_own():
    prints = _prints(None)
    good, naive = prints["even-good"], prints["even-naive"]
    assert good["hidden"] == naive["hidden"] and good["public"] == naive["public"]
    assert good["sample"] != naive["sample"]
    assert prints["fib-good"]["hidden"] != good["hidden"]
    assert prints["even-good"] is not prints["even-good"]  # built when asked: nothing kept
    assert dict(prints) == {sid: prints[sid] for sid in prints}

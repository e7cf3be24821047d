"""``--validate``: the gate itself on three patches per instance, as SWE-bench validates.

* **gold**: the commit's own patch on its parent, with the test patch hidden:
  the gate must find it resolved;
* **noop**: a patch the tests cannot tell from none (a comment appended to a
  file the gold patch changes; the empty patch when there is no such file, which
  the gate fails without running a test): must not be resolved;
* **reversed**: the gold patch taken back, on top of the commit (whose tests are
  already in): must not be resolved.

Each is a plain :func:`~gradebox.patches.run_gate` with the instance's
FAIL_TO_PASS and PASS_TO_PASS, static layers off (they never decide
``resolved``), as many base runs as mining made.
"""

from __future__ import annotations

import time

from gradebox.mine.model import GateCheck, Instance, MineConfig, PatchKind, Validation
from gradebox.patches import GateConfig, GateSpec, TestIds, run_gate

__all__ = ["validate"]


def validate(config: MineConfig, instance: Instance, noop: str, reverse: str) -> Validation:
    """Gate the gold, no-op and reversed patches of ``instance``.

    Raises:
        SetupError: The sandbox or the environment is unavailable.
    """
    gate = GateConfig(limits=config.limits, base_runs=config.runs, env=config.env,
                      env_cache=config.env_cache, python=config.python, static=None,
                      install=config.install)  # fmt: skip
    tests = TestIds(instance.fail_to_pass, instance.pass_to_pass)

    def check(kind: PatchKind, base: str, patch: str, test_patch: str | None) -> GateCheck:
        spec = GateSpec(
            id=f"{instance.instance_id}:{kind}", repo=config.repo, base=base, patch=patch,
            tests=tests, test_patch=test_patch, where=f"mined {instance.commit[:12]} ({kind})",
        )  # fmt: skip
        t0 = time.monotonic()
        row = run_gate(spec, gate)
        return GateCheck(kind, row.verdict, row.reason, row.resolved,
                         round(time.monotonic() - t0, 3))  # fmt: skip

    return Validation(
        gold=check("gold", instance.base_commit, instance.patch, instance.test_patch),
        noop=check("noop" if noop else "empty", instance.base_commit, noop, instance.test_patch),
        reversed=check("reversed", instance.commit, reverse, None),
    )

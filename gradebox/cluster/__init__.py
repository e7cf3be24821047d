"""Grading on a Dask cluster: sandboxed tests on workers, everything else here.

* :mod:`gradebox.cluster.address` parses ``--scheduler`` (no Dask import);
* :mod:`gradebox.cluster.worker`: the worker side, a warm self-checked sandbox
  per Dask worker (:class:`~gradebox.cluster.worker.SandboxPlugin`) and the
  per-sample function it runs;
* :mod:`gradebox.cluster.tasksets`: task sets, arguments only, once per run;
* :mod:`gradebox.cluster.coordinator`: the cluster as a sandbox for the grader.

Worker hosts see hidden arguments (never expected values) and run candidates:
they must be trusted, as must the scheduler and anyone who can reach it.
"""

from gradebox.cluster.address import SchedulerAddress, parse_scheduler

__all__ = ["SchedulerAddress", "parse_scheduler"]

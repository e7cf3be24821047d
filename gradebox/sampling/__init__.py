"""Sampling candidates from a model: ``n`` completions per public task, for pass@k.

``gradebox sample`` asks an OpenAI-compatible endpoint (the judge's endpoint
configuration, its own model) for completions of each task's public spec and
signature (:mod:`gradebox.sampling.prompt`), resumably and durably
(:mod:`gradebox.sampling.store`), with the judge's retry policy
(:mod:`gradebox.sampling.sampler`). The output is a ``samples.jsonl`` that
``gradebox grade`` reads. Hidden cases are never read here.
"""

from gradebox.sampling.prompt import DEFAULT_TEMPLATE, check_template, render, task_name
from gradebox.sampling.sampler import MODEL_ENV, SampleConfig, Sampler, SampleReport, sample_id
from gradebox.sampling.store import SampleStore

__all__ = [
    "DEFAULT_TEMPLATE",
    "MODEL_ENV",
    "SampleConfig",
    "SampleReport",
    "SampleStore",
    "Sampler",
    "check_template",
    "render",
    "sample_id",
    "task_name",
]

"""What a model is asked for one task: the public spec and signature, in a template.

The prompt is built from a :class:`sandbox.types.PublicTask` only -- the line of
``public.jsonl`` that may be shown to a model. Hidden cases are never read by
the sampler, so they cannot reach a prompt.

The default template (:data:`DEFAULT_TEMPLATE`)::

    Write the Python function `$fn`.

    Specification:
    $spec

    Signature:
    $signature

    Reply with the complete function in one ```python fenced code block.

A template is ``string.Template`` text with these placeholders: ``$fn`` (the
entry point), ``$task`` (the task's name), ``$spec``, ``$signature`` and
``$examples`` (the task's public examples, one JSON object a line; empty when
there are none). ``$$`` is a dollar sign.
"""

from __future__ import annotations

import json
import string

from gradebox.errors import BadInput
from sandbox.types import PublicTask

__all__ = ["DEFAULT_TEMPLATE", "PLACEHOLDERS", "check_template", "render", "task_name"]

DEFAULT_TEMPLATE = """Write the Python function `$fn`.

Specification:
$spec

Signature:
$signature

Reply with the complete function in one ```python fenced code block.
"""
"""The prompt when ``--prompt-template`` is not given."""
PLACEHOLDERS = frozenset({"fn", "task", "spec", "signature", "examples"})
"""What a template may use."""


def task_name(task: PublicTask) -> str:
    """The task's id: a sample's id prefix, its ``task`` and ``meta.task``.

    ``HumanEval/85``; the entry point ``fn`` for a task that names no id.
    """
    return task.task


def check_template(text: str, *, where: str = "--prompt-template") -> string.Template:
    """Parse a prompt template, refusing unknown placeholders and lone ``$`` signs.

    Raises:
        BadInput: What is wrong, naming ``where``.
    """
    template = string.Template(text)
    if not template.is_valid():
        raise BadInput([f"{where}: an invalid placeholder (a lone '$'? write '$$')"])
    unknown = sorted(set(template.get_identifiers()) - PLACEHOLDERS)
    if unknown:
        allowed = ", ".join(f"${p}" for p in sorted(PLACEHOLDERS))
        raise BadInput([f"{where}: unknown placeholder(s) {unknown}; allowed: {allowed}"])
    return template


def render(template: string.Template, task: PublicTask) -> str:
    """The prompt for ``task`` (public fields only)."""
    examples = "\n".join(json.dumps(e, sort_keys=True) for e in task.examples)
    return template.substitute(
        fn=task.fn,
        task=task_name(task),
        spec=task.spec.strip(),
        signature=task.signature.strip(),
        examples=examples,
    )

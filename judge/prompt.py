"""Render the judge's messages from a rubric's templates and one item.

The templates live with the rubrics (``rubrics/prompts/``); this module only
fills them. Every item field is neutralised (:mod:`judge.neutralize`) before it
goes in, and the code goes in only numbered and between its boundaries.
"""

from __future__ import annotations

import json
import string
from dataclasses import dataclass
from typing import Any

from openai.types.chat import ChatCompletionMessageParam

from judge.neutralize import Boundaries, boundaries, neutralize, number_lines
from judge.types import JudgeItem, ResponseMode
from rubrics import Criterion, Rubric

__all__ = ["PromptBuilder", "RenderedPrompt", "render"]


@dataclass(frozen=True, slots=True)
class RenderedPrompt:
    """The filled-in prompt of one request."""

    system: str
    """System message (strict structured-output form)."""
    user: str
    """User message with the task and the delimited, numbered code."""
    json_mode_suffix: str
    """Appended to :attr:`system` on every rung: the schema in words (servers that take a
    response format do not all show it to the model; Ollama does not)."""
    boundaries: Boundaries
    """The boundary lines used."""
    line_count: int
    """Lines of candidate code shown (issue lines must fall in 1..line_count)."""

    def messages(self, mode: ResponseMode) -> list[ChatCompletionMessageParam]:
        """The chat messages to send on rung ``mode``.

        The same on every rung: the schema is always stated in the system prompt,
        whatever response format goes with it.
        """
        del mode  # one text for every rung, so that a reply never depends on the rung's words
        system = self.system + self.json_mode_suffix
        return [{"role": "system", "content": system}, {"role": "user", "content": self.user}]


class PromptBuilder:
    """Renders prompts for one rubric; the rubric's part of the text is built once."""

    def __init__(self, rubric: Rubric, schema: dict[str, Any]) -> None:
        """Prepare the rubric-wide parts.

        Args:
            rubric: The rubric whose templates and criteria to use.
            schema: The reply schema (shown in words on JSON-mode endpoints).
        """
        self._rubric = rubric
        self._criteria = "\n\n".join(_criterion(c) for c in rubric.criteria)
        self._labels = "\n".join(f"  {k}: {v}" for k, v in rubric.scale.labels.items())
        self._json_mode = string.Template(rubric.prompt.json_mode).substitute(
            schema=json.dumps(schema, indent=2, sort_keys=True)
        )

    def render(self, item: JudgeItem) -> RenderedPrompt:
        """Fill the rubric's templates for ``item``.

        Args:
            item: The candidate: public task fields and extracted code.

        Returns:
            The rendered prompt.
        """
        fn, signature, spec = (neutralize(t).strip() for t in (item.fn, item.signature, item.spec))
        code = neutralize(item.code).rstrip("\n")
        bounds = boundaries(fn, signature, spec, code)
        marks = {
            "begin_task": bounds.begin_task,
            "end_task": bounds.end_task,
            "begin_code": bounds.begin_code,
            "end_code": bounds.end_code,
        }
        line_count = code.count("\n") + 1
        user = string.Template(self._rubric.prompt.user).substitute(
            marks,
            fn=fn,
            signature=signature,
            spec=spec,
            code=number_lines(code),
            line_count=line_count,
        )
        return RenderedPrompt(self._system(marks), user, self._json_mode, bounds, line_count)

    def _system(self, marks: dict[str, str]) -> str:
        rubric = self._rubric
        return string.Template(rubric.prompt.system).substitute(
            marks,
            rubric_title=rubric.title,
            rubric_version=rubric.version,
            scale_min=rubric.scale.min,
            scale_max=rubric.scale.max,
            scale_labels=self._labels,
            criteria=self._criteria,
            verdict_rule=rubric.prompt.verdict if rubric.verdict else "",
        )


def render(item: JudgeItem, rubric: Rubric, schema: dict[str, Any]) -> RenderedPrompt:
    """Fill ``rubric``'s templates for ``item`` (a one-off :class:`PromptBuilder`).

    Args:
        item: The candidate: public task fields and extracted code.
        rubric: The rubric whose templates and criteria to use.
        schema: The reply schema (shown in words on JSON-mode endpoints).

    Returns:
        The rendered prompt.
    """
    return PromptBuilder(rubric, schema).render(item)


def _criterion(c: Criterion) -> str:
    return "\n".join(
        [
            f"{c.id} {c.name} (weight {c.weight:g})",
            f"  What it does: {_indent(c.what, 4).lstrip()}",
            f"  Why is this bad? {_indent(c.why, 4).lstrip()}",
            "  Example (scores low):",
            _indent(c.example, 6),
            "  Use instead (scores high):",
            _indent(c.use_instead, 6),
        ]
    )


def _indent(text: str, width: int) -> str:
    pad = " " * width
    return "\n".join(pad + line if line.strip() else "" for line in text.splitlines())

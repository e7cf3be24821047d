"""gradebox inside other evaluation frameworks.

* :mod:`~gradebox.integrations.taskset`: a task set on disk as an integration reads it
  (the public tasks for prompts, hidden and public together for grading);
* :mod:`~gradebox.integrations.engine`: gradebox's pipeline (sandbox workers,
  static layers, judge) opened once and fed one reply at a time;
* :mod:`~gradebox.integrations.inspect`: a dataset, a scorer, a pass@k reducer and a
  task for ``inspect_ai`` (the ``gradebox[inspect]`` extra).

Nothing here is imported by ``import gradebox``; only
:mod:`~gradebox.integrations.inspect` imports ``inspect_ai``.
"""

__all__: list[str] = []

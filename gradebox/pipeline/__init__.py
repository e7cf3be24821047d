"""The grading pipeline, stage by stage.

* :mod:`~gradebox.pipeline.extract`: the code in a raw model reply;
* :mod:`~gradebox.pipeline.gate`: syntax, banned imports, claims (nothing runs);
* :mod:`~gradebox.pipeline.tests`: the hidden cases in the sandbox (the deciding layer);
* :mod:`~gradebox.pipeline.static`: the static layers, batched per chunk;
* :mod:`~gradebox.pipeline.judge`: the LLM judge's annotation;
* :mod:`~gradebox.pipeline.task_static`: a task's own static settings;
* :mod:`~gradebox.pipeline.core`: the scheduling that streams samples through the
  stages and builds one :class:`~gradebox.grade.Grade` per sample.
"""

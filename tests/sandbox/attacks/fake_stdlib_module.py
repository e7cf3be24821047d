# ruff: noqa
"""Promise: a candidate cannot forge its results (an expected exception of a
standard-library module the sandbox has not imported yet).

Attack: for a case that expects ``statistics.StatisticsError`` (``statistics``
is not among the modules the harness loads, so no snapshot taken before the
candidate knows its class), raise a class of the candidate's own named
``statistics.StatisticsError`` and make the name lead to it (``mode``):

* ``registered``: a fake ``statistics`` module in ``sys.modules``, holding the
  fake class, before anything imported the real one.
* ``patched``: import the real ``statistics``, then set its ``StatisticsError``
  attribute to the fake class.
* ``swapped``: import the real ``statistics``, then replace it in
  ``sys.modules`` with a fake module.
* ``finder``: a finder first on ``sys.meta_path`` whose loader builds a fake
  ``statistics`` module; then ``import statistics``.
* ``probe`` (not an attack): whether ``statistics`` was loaded before the
  candidate ran; the test checks it was not, or the attack proves nothing.

Expected: ``error`` every time (only the genuine class, loaded by the harness,
or a subclass of it matches).
"""

import sys

PRELOADED = "statistics" in sys.modules


def _fake_class():
    class StatisticsError(ValueError):
        pass

    StatisticsError.__module__ = "statistics"
    StatisticsError.__qualname__ = "StatisticsError"
    return StatisticsError


def _fake_module(cls):
    mod = type(sys)("statistics")
    mod.StatisticsError = cls
    mod.__file__ = "/usr/lib/python3/statistics.py"
    return mod


class _Finder:
    fake = None

    @classmethod
    def find_spec(cls, name, path=None, target=None):
        if name != "statistics":
            return None
        import importlib.machinery

        return importlib.machinery.ModuleSpec(name, cls, origin="/usr/lib/python3/statistics.py")

    @classmethod
    def create_module(cls, spec):
        return None

    @classmethod
    def exec_module(cls, module):
        module.StatisticsError = cls.fake


def f(mode):
    if mode == "probe":
        return PRELOADED
    fake = _fake_class()
    if mode == "registered":
        sys.modules["statistics"] = _fake_module(fake)
        raise sys.modules["statistics"].StatisticsError("fake")
    if mode == "patched":
        import statistics

        statistics.StatisticsError = fake
        raise statistics.StatisticsError("fake")
    if mode == "swapped":
        import statistics

        sys.modules["statistics"] = _fake_module(fake)
        raise sys.modules["statistics"].StatisticsError("fake")
    if mode == "finder":
        _Finder.fake = fake
        sys.meta_path.insert(0, _Finder)
        import statistics

        # Raise the fake whichever module the import produced.
        raise fake("fake")
    raise ValueError(mode)

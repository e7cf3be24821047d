# ruff: noqa
"""Promise: a candidate cannot forge its results.

Attack: for a case that expects ``TypeError`` (or ``json.JSONDecodeError``),
raise something that only looks like it (``mode``):

* ``plain``: ``class TypeError(Exception)`` defined by the candidate.
* ``builtins_name``: the same, with ``__module__ = "builtins"``.
* ``patched_builtins``: the same, installed as ``builtins.TypeError`` so a
  harness that looks the genuine class up by name finds the fake.
* ``class_property``: ``__class__`` reports the real ``TypeError``
  (``isinstance`` believes it).
* ``mro_property``: a metaclass whose ``__mro__`` property lists the real
  ``TypeError``.
* ``patched_stdlib``: a fake ``JSONDecodeError`` named
  ``json.decoder.JSONDecodeError`` and installed in that module.

Expected: ``error`` every time (only a genuine instance, or an instance of a
genuine subclass, matches).
"""

import builtins
import json.decoder
import sys


def f(mode):
    if mode == "plain":

        class TypeError(Exception):
            pass

        raise TypeError("fake")
    if mode == "builtins_name":

        class TypeError(Exception):
            pass

        TypeError.__module__ = "builtins"
        TypeError.__qualname__ = "TypeError"
        raise TypeError("fake")
    if mode == "patched_builtins":

        class TypeError(Exception):
            pass

        TypeError.__module__ = "builtins"
        TypeError.__qualname__ = "TypeError"
        builtins.TypeError = TypeError
        raise TypeError("fake")
    if mode == "class_property":
        real = builtins.TypeError

        class Fake(Exception):
            @property
            def __class__(self):
                return real

        raise Fake("fake")
    if mode == "mro_property":
        real = builtins.TypeError

        class Meta(type):
            @property
            def __mro__(cls):
                return (real, Exception, BaseException, object)

        class Fake(Exception, metaclass=Meta):
            pass

        raise Fake("fake")
    if mode == "patched_stdlib":

        class JSONDecodeError(Exception):
            pass

        JSONDecodeError.__module__ = "json.decoder"
        JSONDecodeError.__qualname__ = "JSONDecodeError"
        json.decoder.JSONDecodeError = JSONDecodeError
        sys.modules["json.decoder"].JSONDecodeError = JSONDecodeError
        raise JSONDecodeError("fake")
    raise ValueError(mode)

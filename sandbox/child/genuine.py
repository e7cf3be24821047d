"""Which exception classes are genuine: those the harness loaded, never a name.

Imported as plain ``genuine`` by the harness (standard library only) and as
``sandbox.child.genuine`` by the tests. An expected ``error`` matches when its
dotted name is in the ``mro`` of the candidate's exception report
(:func:`describe`); only classes recorded here, by identity, enter it:

* the zygote records every exception class of ``builtins`` and of each
  standard-library module loaded before any candidate (:func:`record_loaded`);
* in the candidate's process, before its code runs, :func:`watch_imports` adds
  an audit hook (it cannot be removed) that sees each ``import`` of a
  standard-library module not loaded yet and loads it first itself, through the
  import machinery as it was before the candidate ran (the original
  ``sys.meta_path``, ``sys.path``, ``sys.path_hooks`` and path importer cache),
  then records the classes of every module that load added. The candidate's own
  import then finds that genuine module.

So a class the candidate registers in ``sys.modules`` under a standard-library
name, sets as a module's attribute, or has its own finder build, is not
recorded and does not match. A module loaded without an ``import`` statement or
``__import__`` (``importlib.import_module`` raises no audit event) is not
recorded either: its exceptions do not match, which is strict, never lenient.

This shares the candidate's process: a candidate determined enough can still
forge its own report, but only for itself (SECURITY.md says so).
"""

from __future__ import annotations

import _thread
import importlib
import sys
from typing import Any, NamedTuple

__all__ = ["describe", "genuine_name", "prepare", "record_loaded", "watch_imports"]

#: Captured before any candidate code runs (in the zygote, before the fork): the
#: real ``type.__mro__`` getter (a metaclass cannot override it) and ``type``.
_TYPE_MRO = type.__dict__["__mro__"]
_type = type
_STDLIB = sys.stdlib_module_names
_import_module = importlib.import_module
#: id -> dotted name of every genuine exception class recorded so far.
_GENUINE: dict[int, str] = {}
#: The recorded classes, kept alive so their ids stay theirs.
_KEEP: list[type] = []
#: Modules whose classes were recorded.
_RECORDED: set[str] = set()
#: Held while the hook loads a module (any thread): a second import meanwhile,
#: the load's own nested imports included, goes through as it is.
_LOADING = _thread.allocate_lock()
#: ``len(sys.modules)`` when :func:`record_loaded` last ran.
_SEEN = 0


def _stdlib_name(name: object) -> bool:
    return type(name) is str and (name == "builtins" or name.partition(".")[0] in _STDLIB)


def _record(name: str, module: Any) -> None:
    if name in _RECORDED or not _stdlib_name(name):
        return
    _RECORDED.add(name)
    try:
        items = list(vars(module).items())
    except TypeError:  # None, or not a module
        return
    for attr, obj in items:
        if isinstance(obj, type) and issubclass(obj, BaseException):
            qual = getattr(obj, "__qualname__", attr)
            if getattr(obj, "__module__", None) == name and qual == attr:
                _GENUINE[id(obj)] = f"{name}.{qual}"
                _KEEP.append(obj)


def record_loaded() -> None:
    """Record the exception classes of every builtin or stdlib module loaded now.

    Called by the zygote before any candidate (through :func:`prepare`), and in a
    candidate's process when the harness loaded a module since (modules already
    recorded are skipped).
    """
    global _SEEN  # noqa: PLW0603 - how many modules this record saw
    for name, module in list(sys.modules.items()):
        _record(name, module)
    _SEEN = len(sys.modules)


def prepare() -> None:
    """In the zygote, before it forks candidates: record what is loaded, copy the machinery.

    A candidate's process then starts :func:`watch_imports` from these, made once,
    instead of walking every module and copying the import machinery itself:
    each object that walk touches is a page the forked process copies (about 120
    of them, a fifth of what a candidate's process copies before its code runs).
    Call again after the zygote loads more.
    """
    global _PREPARED  # noqa: PLW0603 - set in the zygote only
    record_loaded()
    _PREPARED = _machinery()


def _machinery() -> _Machinery:
    """A copy of the import machinery as it is now."""
    return _Machinery(
        list(sys.meta_path),
        list(sys.path),
        list(sys.path_hooks),
        dict(sys.path_importer_cache),
    )


def watch_imports() -> None:
    """Record every standard-library module the candidate imports, loaded by us.

    Call in the candidate's process, before its code runs: the hook lives as
    long as the process. What :func:`prepare` made in the zygote is used when no
    module was loaded since (the count of ``sys.modules`` is what it was).
    """
    state = _PREPARED
    if state is None or len(sys.modules) != _SEEN:
        record_loaded()
        # Our own path importer cache, kept across loads: finders of package dirs are
        # then found once (a fresh copy per load would list those dirs again).
        state = _machinery()

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if event != "import" or not _LOADING.acquire(blocking=False):
            return
        try:
            name = args[0]
            if _stdlib_name(name) and name not in sys.modules:
                _load(name, state)
        finally:
            _LOADING.release()

    sys.addaudithook(hook)


class _Machinery(NamedTuple):
    """The import machinery as it was before the candidate ran."""

    meta_path: list[Any]
    path: list[Any]
    path_hooks: list[Any]
    cache: dict[Any, Any]


#: The machinery as :func:`prepare` copied it in the zygote (``None`` before).
_PREPARED: _Machinery | None = None


def _load(name: str, state: _Machinery) -> None:
    """Import ``name`` with the original import machinery; record what it added.

    A failure is left to the candidate's own import, which runs next: it fails
    the same way, or loads something of the candidate's that is never recorded.
    """
    before = set(sys.modules)
    saved = (sys.meta_path, sys.path, sys.path_hooks, sys.path_importer_cache)
    sys.meta_path, sys.path = list(state.meta_path), list(state.path)
    sys.path_hooks, sys.path_importer_cache = list(state.path_hooks), state.cache
    try:
        _import_module(name)
    except Exception:  # the candidate's own import reports it
        pass
    finally:
        sys.meta_path, sys.path, sys.path_hooks, sys.path_importer_cache = saved
    for new in set(sys.modules) - before:
        _record(new, sys.modules.get(new))


def genuine_name(cls: Any) -> str | None:
    """The dotted name of ``cls`` if it is a recorded genuine class, else ``None``."""
    return _GENUINE.get(id(cls))


def describe(exc: BaseException) -> dict[str, Any]:
    """Describe an exception as plain data; only genuine classes enter ``mro``.

    The MRO is read with the real ``type.__mro__`` getter and classes are matched
    by identity against what was recorded, so a class that merely shares a name
    (or patches ``builtins``, a module attribute, ``sys.modules`` or
    ``__mro__``) is left out.
    """
    t = _type(exc)
    mro = [n for n in (genuine_name(c) for c in _TYPE_MRO.__get__(t)) if n is not None]
    try:
        message = str(exc)[:500]
    except BaseException:  # the candidate's __str__ may raise anything
        message = "<unprintable>"
    message = message.encode("utf-8", "backslashreplace").decode("utf-8")
    try:
        name = f"{t.__module__}.{t.__qualname__}"
    except BaseException:  # likewise its class attributes
        name = "?"
    return {"type": str(name)[:200], "mro": mro, "message": message}

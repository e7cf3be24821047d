"""Stdio and test-program cases, run inside the candidate's child process.

Imported as plain ``programs`` by the harness (standard library only, no state
at import) and as ``sandbox.child.programs`` by the tests.

* **stdio**: the candidate's code runs as ``__main__`` once per case, with the
  case's stdin on file descriptor 0 (a memfd, so ``input()``, ``sys.stdin``,
  ``sys.stdin.buffer`` and ``open(0)`` all read it) and ``sys.stdout`` captured
  at the descriptor (a memfd on fd 1, so ``os.write(1, ...)`` and child
  processes count too), up to the result limit. The result is the captured
  text, a plain string: the expected stdout never comes here, it is compared
  outside.
* **program**: one test of a test program (a function taking no arguments, or
  ``Class.method`` of a ``unittest.TestCase``) runs against the candidate, in
  the candidate's process, which sees the candidate's functions but the real
  builtins and modules (:func:`_test_view`). Here the test holds its own expected values, so a
  candidate that is determined enough can forge the outcome: the row says
  ``kind: program``. What is detected of the known forgeries (:class:`Watch`):
  the candidate returning an object of its own class that defines ``__eq__``
  (or ``__ne__``, ``__bool__``...), inspecting frames that are not its own or
  the garbage collector's object lists while it runs, and changes to
  ``builtins``, ``math``, ``operator`` or ``unittest``'s classes and modules.
  Exiting early (``sys.exit``, ``os._exit``) needs no detection: a test passes
  only with its own result frame, published after the test returned.
"""

from __future__ import annotations

import builtins
import contextlib
import io
import math
import operator
import os
import sys
from collections.abc import Callable
from typing import Any

__all__ = ["TAMPERED", "Programs", "Watch", "load_unittest", "run_stdio"]

#: A passing test whose run tripped a forgery check reports ``TAMPERED + reason``.
TAMPERED = "tampered:"
#: Special methods a value's class may not define in candidate code for a test to trust it.
_EQ_METHODS = ("__eq__", "__ne__", "__bool__", "__len__", "__lt__", "__le__", "__gt__", "__ge__")
#: Frame-reaching attributes audited as ``object.__getattr__``.
_FRAME_ATTRS = frozenset({"tb_frame", "gi_frame", "cr_frame", "ag_frame", "f_code"})
_GC_EVENTS = frozenset({"gc.get_referrers", "gc.get_referents", "gc.get_objects"})
_TRACE_EVENTS = frozenset({"sys.settrace", "sys.setprofile"})
_TYPE_DICT = type.__dict__["__dict__"]
_TYPE_MRO = type.__dict__["__mro__"]
_type = type
_id = id


class _Stdout:
    """Descriptor 1 on a memfd for one case, and the pipe it replaced put back after.

    At the descriptor, so ``print``, ``sys.stdout.buffer``, ``os.write(1, ...)`` and
    child processes all land in the case's output.
    """

    def __init__(self, real: Any) -> None:
        with contextlib.suppress(BaseException):  # a stream an earlier case broke
            real.flush()  # nothing printed before this case may land in its output
        self.saved = os.dup(1)
        fd = os.memfd_create("stdout", 0)
        if fd != 1:
            os.dup2(fd, 1)
            os.close(fd)

    def take(self, cap: int) -> bytes | None:
        """What the case wrote (``None`` past ``cap`` bytes); descriptor 1 is the pipe again."""
        data = bytearray()
        try:
            while len(data) <= cap:
                chunk = os.pread(1, min(1 << 20, cap + 1 - len(data)), len(data))
                if not chunk:
                    break
                data += chunk
        except OSError:  # the program put something unreadable on descriptor 1
            data.clear()
        finally:
            os.dup2(self.saved, 1)
            os.close(self.saved)
        return None if len(data) > cap else bytes(data)


def _feed_stdin(text: str) -> None:
    """Put ``text`` on file descriptor 0 (a memfd) and a fresh ``sys.stdin`` over it."""
    data = text.encode("utf-8", "surrogateescape")
    fd = os.memfd_create("stdin", 0)
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
    os.lseek(fd, 0, os.SEEK_SET)
    if fd != 0:  # the last case's program may have closed fd 0 (``open(0)``)
        os.dup2(fd, 0)
        os.close(fd)
    raw = io.FileIO(0, "r", closefd=False)
    sys.stdin = io.TextIOWrapper(io.BufferedReader(raw), encoding="utf-8", errors="replace")


def run_stdio(
    code: Any, stdin: str, cap: int, describe: Callable[[BaseException], dict[str, Any]]
) -> dict[str, Any]:
    """Run compiled candidate code as a program with ``stdin``; return the result body.

    ``SystemExit`` with code ``0`` or ``None`` is a normal end (what was printed
    counts); any other exit code or exception is reported as raised.
    """
    real_out = sys.stdout
    namespace: dict[str, Any] = {"__name__": "__main__", "__builtins__": builtins}
    # Run with -S, so the site module's exit() and quit() are not there: programs use them.
    namespace["exit"] = namespace["quit"] = sys.exit
    raised: BaseException | None = None
    try:
        _feed_stdin(stdin)
    except OSError as exc:  # a stdin past the file-size limit: cannot be given
        return {"status": "raised", "exc": describe(exc)}
    capture = _Stdout(real_out)
    raw = io.FileIO(1, "w", closefd=False)
    out = io.TextIOWrapper(io.BufferedWriter(raw), encoding="utf-8", errors="replace")
    try:
        sys.stdout = out
        exec(code, namespace)
    except SystemExit as exc:
        if exc.code not in (None, 0):
            raised = exc
    except BaseException as exc:
        raised = exc
    finally:
        sys.stdout = real_out
    try:
        out.flush()
    except BaseException as exc:  # the candidate closed or broke its stdout
        raised = raised or exc
    data = capture.take(cap)
    if raised is not None:
        return {"status": "raised", "exc": describe(raised)}
    if data is None:
        return {"status": "unserializable", "detail": "output larger than the limit"}
    return {"status": "returned", "value": data.decode("utf-8", "replace")}


def load_unittest() -> Any:
    """``unittest``, imported on first use: only test programs need it.

    A worker that never runs a test program never pays for it (~35 ms of its
    start). Init calls this before it forks the child of a job with test programs
    (the supervisor asks it to), and :class:`Programs` again in the child, before
    the candidate's code runs; the module is kept from then on, so what the test
    and the watch use is the standard library's, loaded before any candidate code
    could stand in for it.
    """
    import unittest
    import unittest.case

    return unittest


def _module_state(unittest: Any) -> dict[str, dict[str, int]]:
    """Ids of the attributes of the namespaces a test relies on (``unittest`` as loaded first)."""
    spaces: dict[str, Any] = {
        "builtins": vars(builtins),
        "math": vars(math),
        "operator": vars(operator),
        "unittest": vars(unittest),
        "unittest.case": vars(unittest.case),
        "TestCase": _TYPE_DICT.__get__(unittest.TestCase),
    }
    return {name: {k: _id(v) for k, v in dict(space).items()} for name, space in spaces.items()}


class Watch:
    """Detects the known forgeries of a test program's candidate (see the module docstring).

    The audit hook cannot be removed once added. Everything here shares the
    candidate's process, so it catches what a candidate does naively; a
    determined one can still forge a test's outcome (SECURITY.md says so).
    """

    def __init__(self) -> None:
        self.depth = 0  # > 0 while the candidate's entry point runs
        self.reason = ""
        self._busy = False
        self.sticky = ""
        self.unittest = load_unittest()  # before the candidate's code: the genuine one
        self._baseline = _module_state(self.unittest)
        self._modules = {name: _id(m) for name, m in list(sys.modules.items())}
        sys.addaudithook(self._hook)

    def _hook(self, event: str, args: tuple[Any, ...]) -> None:
        if event in _TRACE_EVENTS and not self.sticky:
            # A trace or profile function sees every frame of every later test, so it
            # taints them all, wherever it was set (at import included).
            self.sticky = "the candidate set a trace or profile function"
        if self.depth <= 0 or self._busy or self.reason:
            return
        self._busy = True
        try:
            if event in _GC_EVENTS or event == "sys._current_frames":
                self.reason = "the candidate searched the interpreter's objects or frames"
            elif event == "sys._getframe" and (_called_by_candidate() or not _own(args[0])):
                self.reason = "the candidate reached for the stack's frames"
            elif event == "object.__getattr__" and args[1] in _FRAME_ATTRS:
                frame = args[0] if args[1] == "f_code" else getattr(args[0], args[1], None)
                if frame is not None and not _own(frame):
                    self.reason = "the candidate reached a frame that is not its own"
        finally:
            self._busy = False

    def wrap(self, fn: Any) -> Any:
        """The candidate's entry point as the test sees it: counted, results checked."""

        def entry(*args: Any, **kwargs: Any) -> Any:
            self.depth += 1
            try:
                value = fn(*args, **kwargs)
            finally:
                self.depth -= 1
            if not self.reason and _custom_eq(value):
                self.reason = "the candidate returned an object whose class defines __eq__"
            return value

        return entry

    def start(self) -> None:
        """Before a test: no reason yet."""
        self.reason = ""
        self.depth = 0

    def verdict(self) -> str:
        """After a passing test: ``""`` when nothing tripped, else why not to trust it."""
        self.reason = self.reason or self.sticky
        if not self.reason and _module_state(self.unittest) != self._baseline:
            self.reason = "the candidate changed builtins, math, operator or unittest"
        if not self.reason and not self._modules_genuine():
            self.reason = "the candidate put a stand-in module in sys.modules"
        return self.reason

    def _modules_genuine(self) -> bool:
        """Whether ``sys.modules`` holds only genuine modules where the test looks.

        Modules loaded before the candidate are still the ones loaded, and every
        standard-library module imported since comes from the standard library.
        """
        for name, module in list(sys.modules.items()):
            known = self._modules.get(name)
            if known is not None:
                if known != _id(module):
                    return False
            elif name.partition(".")[0] in sys.stdlib_module_names and not _stdlib(module):
                return False
        return True


_STDLIB_DIR = os.path.realpath(os.path.dirname(os.__file__)) + os.sep


def _stdlib(module: Any) -> bool:
    """A genuine module of the standard library: built in, frozen, or a file under its dir."""
    if _type(module) is not _ModuleType:
        return False
    spec = vars(module).get("__spec__")
    origin = getattr(spec, "origin", None)
    if origin in ("built-in", "frozen"):
        return True
    path = vars(module).get("__file__")
    return isinstance(path, str) and os.path.realpath(path).startswith(_STDLIB_DIR)


_ModuleType = type(os)


def _called_by_candidate() -> bool:
    """Whether candidate code itself called ``sys._getframe``.

    Asked from inside the hook: frame 1 is the hook, frame 2 whoever called the
    audited function.
    """
    try:
        caller = sys._getframe(2).f_code
        if caller.co_filename == "<candidate>":
            return True
        # inspect.currentframe() hands the caller its own frame, to walk f_back from.
        return bool(
            caller.co_name == "currentframe"
            and caller.co_filename.endswith("inspect.py")
            and sys._getframe(3).f_code.co_filename == "<candidate>"
        )
    except (ValueError, AttributeError):
        return False


def _own(frame: Any) -> bool:
    """Whether ``frame`` runs the candidate's code (or the standard library's)."""
    try:
        name = frame.f_code.co_filename
    except BaseException:
        return False
    return name not in ("<test>",) and not name.endswith(("harness.py", "programs.py"))


def _custom_eq(value: Any, depth: int = 0) -> bool:
    """Whether ``value`` (or an element, 3 levels deep) has a candidate-defined comparison.

    That is: a class from candidate code (by its module, or by where the method's
    code was compiled, so renaming the class's module does not hide it) defining
    a comparison or truth method.
    """
    cls = _type(value)
    for klass in _TYPE_MRO.__get__(cls):
        space = _TYPE_DICT.__get__(klass)
        methods = [space[m] for m in _EQ_METHODS if m in space]
        if methods and (
            space.get("__module__") == "candidate" or any(_from_candidate(m) for m in methods)
        ):
            return True
    if depth < 3 and cls in (list, tuple, set, frozenset):
        return any(_custom_eq(v, depth + 1) for v in list(value)[:1000])
    if depth < 3 and cls is dict:
        items = list(value.items())[:1000]
        return any(_custom_eq(k, depth + 1) or _custom_eq(v, depth + 1) for k, v in items)
    return False


def _from_candidate(method: Any) -> bool:
    code = getattr(method, "__code__", None) if _type(method) is _FunctionType else None
    return code is not None and code.co_filename == "<candidate>"


_FunctionType = type(_from_candidate)


def _test_view(namespace: dict[str, Any]) -> dict[str, Any]:
    """The candidate's module as the test program sees it.

    Its functions and helpers are there (tests call them by name), but not what
    would change the test's own meaning: the real ``builtins`` (a module-level
    ``__builtins__`` of the candidate's is not used), no global shadowing a
    builtin (a candidate's ``abs`` or ``isinstance`` stays the candidate's own),
    and no stand-in bound to a standard-library module's name.
    """
    space: dict[str, Any] = {}
    for name, value in namespace.items():
        if name in _BUILTIN_NAMES and not name.startswith("_"):
            continue
        if name in sys.stdlib_module_names and sys.modules.get(name) is not value:
            continue
        space[name] = value
    space["__builtins__"] = builtins
    space["__name__"] = "test"
    return space


_BUILTIN_NAMES = frozenset(vars(builtins))


def _is_test_case(cls: Any, base: type) -> bool:
    """Whether ``cls`` is a class derived from ``unittest.TestCase`` (``base``)."""
    return isinstance(cls, type) and issubclass(cls, base)


class Programs:
    """The test programs of one job, each loaded on first use.

    Each is loaded into a copy of the candidate's namespace, so test code sees the
    candidate's functions (the entry point wrapped by a :class:`Watch`).
    """

    def __init__(self, sources: list[str], namespace: dict[str, Any], entry: str) -> None:
        # The watch's baseline is taken here: before the candidate's code runs.
        self.watch = Watch()
        self.sources = sources
        self.namespace = namespace
        self.entry = entry
        self.loaded: dict[int, dict[str, Any]] = {}
        self.classes_set_up: set[int] = set()

    def _load(self, index: int) -> dict[str, Any]:
        if index not in self.loaded:
            space = _test_view(self.namespace)
            if callable(space.get(self.entry)):
                space[self.entry] = self.watch.wrap(space[self.entry])
            code = compile(self.sources[index], "<test>", "exec", dont_inherit=True)
            self.loaded[index] = space
            exec(code, space)
        return self.loaded[index]

    def run(self, index: int, test: str) -> str:
        """Run one test; return ``""`` or a tampering reason; raise what the test raised."""
        space = self._load(index)
        self.watch.start()
        owner, _, method = test.partition(".")
        if not method:
            space[owner]()
        else:
            self._run_method(space[owner], method)
        return self.watch.verdict()

    def _run_method(self, cls: Any, method: str) -> None:
        if not _is_test_case(cls, self.watch.unittest.TestCase):
            raise TypeError(f"{cls!r} is not a unittest.TestCase class")
        if _id(cls) not in self.classes_set_up:
            self.classes_set_up.add(_id(cls))
            cls.setUpClass()
        case = cls(method)
        try:
            case.setUp()
            try:
                getattr(case, method)()
            finally:
                case.tearDown()
        finally:
            case.doCleanups()

"""Tamper risk: added code that reaches into the test machinery it shares a process with.

A patch's code runs inside the pytest process that reports on it. Code that
does any of the following on an **added line** of a non-test ``.py`` file is a
tamper risk (``tamper_risk``): a would-be pass becomes ``needs_review``, with
the lines. Each check has a stable id:

- ``T001`` imports the test machinery (``pytest``, ``_pytest``, ``unittest``,
  ``pluggy``, ``doctest``, ``py``) outside the tests;
- ``T002`` touches ``sys.modules``, ``sys.meta_path``, ``sys.path_hooks``,
  ``sys.settrace``/``setprofile``, ``sys.exit``/``sys.excepthook``,
  ``sys._getframe``, or reads the runner's command line (``sys.argv``);
- ``T003`` walks frames or the heap: ``inspect.currentframe``/``stack``/
  ``getouterframes``, ``gc.get_objects``/``get_referrers``/``get_referents``,
  ``f_back``/``f_globals``/``f_locals``/``tb_frame``;
- ``T004`` ends or outlives the process on its own terms: ``atexit``,
  ``weakref.finalize``, ``os._exit``, ``os.kill``, ``signal``, ``faulthandler``,
  ``ctypes``, ``threading.excepthook``;
- ``T005`` patches builtins: imports ``builtins``, or names ``__builtins__``;
- ``T006`` reaches for names in strings: ``importlib``/``__import__``,
  ``getattr``/``setattr`` with a non-literal name (a literal one is judged as
  the attribute it names), ``vars()``, ``exec``/``eval``/``compile``, and
  ``.__dict__`` of anything but a plain local name that is not an imported module
  (``os.__dict__``, ``type(x).__dict__``, ``sys.modules[k].__dict__`` are hits;
  ``obj.__dict__.setdefault(...)`` in a descriptor, as ``functools.cached_property``
  does, is an object's own state and is not: cachetools 86352ae);
- ``T007`` adds a top-level module (``json.py``, ``src/re/__init__.py``) named like
  a standard-library module: on the tests' ``PYTHONPATH`` it would be imported
  in its place, by pytest too (:func:`shadows`).

This is a tripwire for review, not a proof: the scan reads syntax, and code
can reach the same places in ways it cannot see. The sandbox and the
cross-checks of :mod:`gradebox.patches.testrun` hold without it.
"""

from __future__ import annotations

import ast
import sys
import warnings
from collections.abc import Iterator
from dataclasses import dataclass

__all__ = ["TamperHit", "scan", "shadows"]

_MODULES = {"pytest": "T001", "_pytest": "T001", "unittest": "T001", "pluggy": "T001",
            "doctest": "T001", "py": "T001", "atexit": "T004", "signal": "T004",
            "faulthandler": "T004", "builtins": "T005", "importlib": "T006",
            "ctypes": "T004"}  # fmt: skip
_ATTRS = {
    ("sys", "modules"): "T002", ("sys", "meta_path"): "T002", ("sys", "path_hooks"): "T002",
    ("sys", "settrace"): "T002", ("sys", "setprofile"): "T002", ("sys", "exit"): "T002",
    ("sys", "excepthook"): "T002", ("sys", "_getframe"): "T002",
    ("inspect", "currentframe"): "T003", ("inspect", "stack"): "T003",
    ("inspect", "getouterframes"): "T003", ("gc", "get_objects"): "T003",
    ("gc", "get_referrers"): "T003", ("gc", "get_referents"): "T003",
    ("os", "_exit"): "T004", ("os", "kill"): "T004", ("os", "killpg"): "T004",
    ("threading", "excepthook"): "T004", ("weakref", "finalize"): "T004",
    ("sys", "argv"): "T002",
}  # fmt: skip
_FRAME_ATTRS = {"f_back", "f_globals", "f_locals", "tb_frame", "gi_frame", "cr_frame"}
_CALLS = {"__import__": "T006", "exec": "T006", "eval": "T006", "compile": "T006",
          "vars": "T006"}  # fmt: skip
_BY_NAME = {attr: rule for (_, attr), rule in _ATTRS.items()}
_FRAME_ATTRS_RULES = {**dict.fromkeys(_FRAME_ATTRS, "T003"), "__dict__": "T006"}


@dataclass(frozen=True, slots=True)
class TamperHit:
    """One added line that reaches into the test machinery."""

    path: str
    """File, relative to the repository."""
    line: int
    """1-based line at head."""
    rule: str
    """``T001`` .. ``T006`` (see the module docstring)."""
    what: str
    """What it does, e.g. ``imports pytest``."""


def scan(path: str, source: str, added: frozenset[int]) -> list[TamperHit]:
    """The tamper risks on ``added`` lines of one head file.

    Args:
        path: The file's path (for the hits).
        source: Its text at head.
        added: Its added line numbers.

    Returns:
        Hits in line order; a file that does not parse gives none (the lint
        layer reports it, and its tests fail).
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return []
    hits = {
        (getattr(node, "lineno", 0), rule, what)
        for node, rule, what in _risks(tree)
        if _lines(node) & added
    }
    return [TamperHit(path, line, rule, what) for line, rule, what in sorted(hits)]


def _lines(node: ast.AST) -> set[int]:
    start = getattr(node, "lineno", 0)
    end = getattr(node, "end_lineno", start) or start
    return set(range(start, end + 1))


def _risks(tree: ast.AST) -> Iterator[tuple[ast.AST, str, str]]:
    modules = _imported(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                rule = _MODULES.get(alias.name.split(".")[0])
                if rule:
                    yield node, rule, f"imports {alias.name}"
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            top = node.module.split(".")[0]
            if top in _MODULES:
                yield node, _MODULES[top], f"imports from {node.module}"
            for alias in node.names:
                rule = _ATTRS.get((top, alias.name))
                if rule:
                    yield node, rule, f"imports {top}.{alias.name}"
        elif isinstance(node, ast.Attribute):
            yield from _attribute(node, modules)
        elif isinstance(node, ast.Name) and node.id == "__builtins__":
            yield node, "T005", "names __builtins__"
        elif isinstance(node, ast.Call):
            yield from _call(node)


def _imported(tree: ast.AST) -> set[str]:
    """Every name an import binds in the file (a module, or anything ``from`` one)."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            for alias in node.names:
                names.add(alias.asname or alias.name.split(".")[0])
    return names


def _attribute(node: ast.Attribute, modules: set[str]) -> Iterator[tuple[ast.AST, str, str]]:
    if isinstance(node.value, ast.Name):
        rule = _ATTRS.get((node.value.id, node.attr))
        if rule:
            yield node, rule, f"uses {node.value.id}.{node.attr}"
    if node.attr in _FRAME_ATTRS:
        yield node, "T003", f"walks frames (.{node.attr})"
    own_state = isinstance(node.value, ast.Name) and node.value.id not in modules
    if node.attr == "__dict__" and not own_state:
        yield node, "T006", "reaches into a namespace (.__dict__)"


def _call(node: ast.Call) -> Iterator[tuple[ast.AST, str, str]]:
    if not isinstance(node.func, ast.Name):
        return
    name = node.func.id
    if name in _CALLS:
        yield node, _CALLS[name], f"calls {name}()"
    elif name in ("getattr", "setattr", "delattr") and len(node.args) >= 2:
        attr = node.args[1]
        if not isinstance(attr, ast.Constant):
            yield node, "T006", f"calls {name}() with a computed name"
        elif isinstance(attr.value, str) and attr.value in _BY_NAME | _FRAME_ATTRS_RULES:
            rule = (_BY_NAME | _FRAME_ATTRS_RULES)[attr.value]
            yield node, rule, f"calls {name}() for {attr.value}"


def shadows(name: str) -> TamperHit | None:
    """A ``T007`` hit when a new importable top-level module ``name`` is named like a stdlib one.

    ``name`` is the module's name (``json``), found as ``json.py``, a package
    ``json/__init__.py`` or a link at the repository's root or under ``src/``.
    """
    if name in sys.stdlib_module_names:
        return TamperHit(name, 1, "T007", f"shadows the standard library module {name}")
    return None

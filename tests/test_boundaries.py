"""The layout is the architecture: every package's imports, checked from its source.

* ``sandbox``, ``static``, ``judge`` and ``rubrics`` (the bottom layers) never
  import each other or ``gradebox`` (``rubrics`` is data the judge reads);
* no module anywhere imports a private name (``_x``) of another package;
* no layer module of ``static`` imports the batch runner (``static.config``
  holds what they share), so ``static/`` has no import cycle;
* code that runs inside the sandbox (``sandbox/child``) uses the standard
  library only;
* inside ``gradebox``, each subpackage imports only the ones below it: the
  records (``grade``, ``model``, ``verdict``, ``errors``) nothing but records and
  the extractor's ``Contract``; ``pipeline`` and ``suite`` records only;
  ``reports`` records and ``runs.passk``; ``runs`` and ``service`` never the
  CLI; only the CLI and the package's front door import everything.

Imports are read with ``ast`` (``TYPE_CHECKING`` blocks and function-level
imports included), so a new module is covered the day it is added.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("sandbox", "static", "judge", "rubrics", "gradebox")
BOTTOM = {"sandbox": set(), "static": set(), "judge": {"rubrics"}, "rubrics": set()}


def _modules() -> list[tuple[str, Path]]:
    out = []
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            rel = path.relative_to(ROOT).with_suffix("")
            name = ".".join(p for p in rel.parts if p != "__init__")
            out.append((name, path))
    return out


def _imports(path: Path) -> list[tuple[str, list[str]]]:
    """(module, names) for every import statement in a file."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(alias.name, []) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.module, [alias.name for alias in node.names]))
    return found


MODULES = _modules()
_HARNESS = {"wire", "region", "programs", "genuine", "sandbox.child"}
_HARNESS |= {"sandbox.child.wire", "sandbox.child.region", "sandbox.child.programs"}
_HARNESS |= {"sandbox.child.genuine"}


_RECORDS = {"gradebox.grade", "gradebox.model", "gradebox.verdict", "gradebox.errors"}
_LAYERS = {  # gradebox subpackage -> what it may import of gradebox
    "records": _RECORDS | {"gradebox.pipeline.extract"},
    "gradebox.pipeline": _RECORDS | {"gradebox.pipeline"},
    "gradebox.suite": _RECORDS | {"gradebox.suite"},
    "gradebox.reports": _RECORDS
    | {"gradebox.reports", "gradebox.runs.passk", "gradebox.runs.private", "gradebox.judging"},
    "gradebox.judging": _RECORDS | {"gradebox.judging"},
    "gradebox.runs": _RECORDS
    | {"gradebox.runs", "gradebox.pipeline", "gradebox.suite", "gradebox.judging"}
    | {"gradebox.reports"},
    "gradebox.service": _RECORDS
    | {"gradebox.service", "gradebox.pipeline", "gradebox.runs", "gradebox.patches"}
    | {"gradebox.judging"},
    # The cluster is a sandbox over Dask: the sandbox layer and itself, no grading engine.
    "gradebox.cluster": _RECORDS | {"gradebox.cluster"},
    "gradebox.patches": _RECORDS | {"gradebox.patches"},
    # Mining reads history and runs tests as the gate does: the gate and itself.
    "gradebox.mine": _RECORDS | {"gradebox.mine", "gradebox.patches"},
    # Importers read benchmark files; the gate's default denylist is the one thing of the
    # pipeline they need (BigCodeBench tasks that are about `os` may import it).
    # It writes hidden.jsonl 0600 through gradebox.runs.private (a leaf).
    "gradebox.benchmarks": _RECORDS
    | {"gradebox.benchmarks", "gradebox.pipeline.gate", "gradebox.runs.private"},
    # Where gates are read (PR comments, check runs, the Action, pre-commit): over the gate.
    "gradebox.github": _RECORDS | {"gradebox.github", "gradebox.patches"},
    # The sampler: public tasks in, samples.jsonl out, through the judge's endpoint client.
    "gradebox.sampling": _RECORDS | {"gradebox.sampling"},
    # Other frameworks' doors (inspect_ai): the pipeline as the CLI drives it, the sampling
    # prompt, pass@k and the service's disclosure rule; never the CLI.
    "gradebox.integrations": _RECORDS
    | {"gradebox.integrations", "gradebox.pipeline", "gradebox.runs", "gradebox.sampling"}
    | {"gradebox.service"},
}
_ENTRY_POINTS = {"gradebox.service.__main__"}  # `python -m gradebox.service` runs the CLI's serve


def _layer(name: str) -> str | None:
    if name in _RECORDS:
        return "records"
    parts = name.split(".")
    sub = ".".join(parts[:2])
    return sub if sub in _LAYERS else None


def _allowed(layer: str, module: str) -> bool:
    return any(module == a or module.startswith(a + ".") for a in _LAYERS[layer])


@pytest.mark.parametrize(("name", "path"), MODULES, ids=[n for n, _ in MODULES])
def test_gradebox_subpackages_import_only_what_is_below_them(name, path):
    layer = _layer(name)
    if layer is None or name in _ENTRY_POINTS:
        return
    ours = [module for module, _ in _imports(path) if module.split(".")[0] == "gradebox"]
    bad = [module for module in ours if module == "gradebox" or not _allowed(layer, module)]
    assert not bad, f"{name} ({layer}) imports {bad}"


def test_the_gradebox_layering_rule_is_not_empty():
    layers = {_layer(name) for name, _ in MODULES}
    assert layers >= set(_LAYERS), set(_LAYERS) - layers
    for sub in ("gradebox.cli", "gradebox.pipeline", "gradebox.runs", "gradebox.reports"):
        assert any(n.startswith(sub + ".") for n, _ in MODULES), sub


def test_every_package_and_subpackage_is_covered():
    names = {name for name, _ in MODULES}
    for sub in ("sandbox.child", "gradebox.service", "gradebox.suite"):
        assert any(n.startswith(sub + ".") or n == sub for n in names), sub
    assert len(MODULES) > 60


@pytest.mark.parametrize(("name", "path"), MODULES, ids=[n for n, _ in MODULES])
def test_imports_respect_the_layers(name, path):
    top = name.split(".")[0]
    problems = []
    for module, names in _imports(path):
        target = module.split(".")[0]
        if top in BOTTOM and target in PACKAGES and target not in (top, *BOTTOM[top]):
            problems.append(f"{name} imports {module}: a bottom layer imports another layer")
        if target in PACKAGES and target != top:
            private = [n for n in names if n.startswith("_")]
            private += [p for p in module.split(".")[1:] if p.startswith("_") and p != "__init__"]
            if private:
                problems.append(f"{name} imports private {private} from {module}")
        if (
            name.startswith("static.")
            and name not in ("static.batch",)
            and module == "static.batch"
        ):
            problems.append(f"{name} imports the batch runner (use static.config)")
        inside = name.startswith("sandbox.child.")
        if inside and target not in sys.stdlib_module_names and module not in _HARNESS:
            problems.append(f"{name} (runs in the sandbox) imports {module}")
    assert not problems, "\n".join(problems)


# ------------------------------------------------------------- inside the service
# ``gradebox.service`` keeps three layers inside itself: ``api`` (HTTP: one router per
# resource) over ``engine`` (grading with the CLI's pipeline, queues, state) over
# ``store`` (SQLite, behind typed methods). A few shared modules sit beside them and
# import none of the three; the composition root (``app``) and the package's doors
# import everything.

_SERVICE = "gradebox.service"
_SERVICE_SHARED = {f"{_SERVICE}.{m}" for m in ("config", "problems", "rows", "logs")}
_SERVICE_ROOTS = {f"{_SERVICE}.{m}" for m in ("app", "auth", "__main__")} | {_SERVICE}
_ENGINE_ONLY = ("gradebox.pipeline", "gradebox.runs", "gradebox.patches", "gradebox.judging")
_HTTP = ("fastapi", "starlette", "uvicorn")
_SERVICE_RULES = {  # layer -> (modules it must not import, prefixes)
    "api": ("sqlite3", *_ENGINE_ONLY, f"{_SERVICE}.store.", f"{_SERVICE}.app"),
    "engine": ("sqlite3", *_HTTP, f"{_SERVICE}.api", f"{_SERVICE}.store.", f"{_SERVICE}.app"),
    "store": (*_HTTP, *_ENGINE_ONLY, f"{_SERVICE}.api", f"{_SERVICE}.engine", f"{_SERVICE}.app"),
    "shared": (
        "sqlite3",
        *_ENGINE_ONLY,
        f"{_SERVICE}.api",
        f"{_SERVICE}.engine",
        f"{_SERVICE}.store",
        f"{_SERVICE}.app",
    ),
}
"""What each layer may not import (``store.`` with a dot: the store's front door,
``gradebox.service.store``, is its interface; its modules are its inside)."""


def _banned(module: str, rule: str) -> bool:
    """``rule`` ending in a dot bans what is inside a package, else the module and below it."""
    if rule.endswith("."):
        return module.startswith(rule)
    return module == rule or module.startswith(rule + ".")


def _service_layer(name: str) -> str | None:
    if name in _SERVICE_SHARED:
        return "shared"
    parts = name.split(".")
    if len(parts) >= 3 and parts[:2] == ["gradebox", "service"] and parts[2] in _SERVICE_RULES:
        return parts[2]
    return None


SERVICE_MODULES = [(n, p) for n, p in MODULES if n == _SERVICE or n.startswith(_SERVICE + ".")]


@pytest.mark.parametrize(("name", "path"), SERVICE_MODULES, ids=[n for n, _ in SERVICE_MODULES])
def test_service_layers_import_only_what_is_below_them(name, path):
    layer = _service_layer(name)
    if layer is None:
        assert name in _SERVICE_ROOTS, f"{name}: a service module outside api/engine/store"
        return
    banned = _SERVICE_RULES[layer]
    inside = f"{_SERVICE}.{layer}"
    bad = [
        module
        for module, _ in _imports(path)
        if not module.startswith(inside + ".") and any(_banned(module, b) for b in banned)
    ]
    assert not bad, f"{name} ({layer}) imports {bad}"


def test_only_the_store_writes_sql_and_only_the_engine_grades():
    sql = [n for n, p in SERVICE_MODULES if any(m == "sqlite3" for m, _ in _imports(p))]
    assert sql and all(n.startswith(f"{_SERVICE}.store.") for n in sql), sql
    grading = [
        n
        for n, p in SERVICE_MODULES
        if any(m.startswith(_ENGINE_ONLY) for m, _ in _imports(p)) and n not in _SERVICE_ROOTS
    ]
    assert grading and all(n.startswith(f"{_SERVICE}.engine.") for n in grading), grading
    for layer in ("api", "engine", "store"):
        assert any(n.startswith(f"{_SERVICE}.{layer}.") for n, _ in SERVICE_MODULES), layer


def test_the_store_is_a_protocol_the_sqlite_store_implements():
    from gradebox.service.store import GradeStore, Store

    assert getattr(GradeStore, "_is_protocol", False)
    methods = [m for m in vars(GradeStore) if not m.startswith("_")]
    assert len(methods) > 20, methods
    missing = [m for m in methods if not callable(getattr(Store, m, None))]
    assert not missing, missing


# The size of the service, measured on its source (``python tests/test_boundaries.py``
# prints the figures).
SERVICE_MAX_MODULE_LINES = 400
SERVICE_MAX_FUNCTION_LINES = 50
SERVICE_MAX_ANY_SHARE = 0.15


def _is_any(annotation: ast.expr) -> bool:
    return any(
        (isinstance(n, ast.Name) and n.id == "Any")
        or (isinstance(n, ast.Attribute) and n.attr == "Any")
        for n in ast.walk(annotation)
    )


def _any_aliases(tree: ast.Module) -> set[str]:
    """Module-level aliases that stand for ``Any`` somewhere (``Row = dict[str, Any]``)."""
    found = set()
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
            if isinstance(target, ast.Name) and _is_any(value):
                found.add(target.id)
    return found


def service_shape(sources=None) -> dict[str, object]:
    """Lines per module, lines per function and signatures with ``Any`` in ``gradebox/service``.

    An alias that stands for ``Any`` (defined in any service module) counts as ``Any``.
    ``sources`` (``[(module name, path)]``) measures other modules the same way.
    """
    sources = SERVICE_MODULES if sources is None else sources
    trees = {name: ast.parse(path.read_text(encoding="utf-8")) for name, path in sources}
    aliases = set().union(*(_any_aliases(t) for t in trees.values())) | {"Any"}
    modules = {name: len(path.read_text(encoding="utf-8").splitlines()) for name, path in sources}
    functions: dict[str, int] = {}
    signatures = with_any = 0
    for name, tree in trees.items():
        for node in ast.walk(tree):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            functions[f"{name}:{node.name}:{node.lineno}"] = node.end_lineno - node.lineno + 1
            a = node.args
            params = (*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg)
            annotations = [p.annotation for p in params if p is not None and p.annotation]
            annotations += [node.returns] if node.returns is not None else []
            signatures += 1
            names = {n.id for ann in annotations for n in ast.walk(ann) if isinstance(n, ast.Name)}
            names |= {
                n.attr for ann in annotations for n in ast.walk(ann) if isinstance(n, ast.Attribute)
            }
            with_any += bool(names & aliases)
    return {
        "modules": modules,
        "functions": functions,
        "signatures": signatures,
        "with_any": with_any,
        "any_share": with_any / signatures,
    }


def test_no_service_module_or_function_is_too_long():
    shape = service_shape()
    long_modules = {m: n for m, n in shape["modules"].items() if n > SERVICE_MAX_MODULE_LINES}
    long_functions = {f: n for f, n in shape["functions"].items() if n > SERVICE_MAX_FUNCTION_LINES}
    assert not long_modules, long_modules
    assert not long_functions, long_functions


def test_few_service_signatures_say_any():
    shape = service_shape()
    assert shape["any_share"] <= SERVICE_MAX_ANY_SHARE, (shape["with_any"], shape["signatures"])


def test_the_size_measures_see_long_code_and_any_behind_an_alias(tmp_path):
    body = "".join(f"    x{i} = {i}\n" for i in range(SERVICE_MAX_FUNCTION_LINES))
    source = (
        "from typing import Any\n\nRow = dict[str, Any]\n\n\n"
        f"def long(a: int) -> int:\n{body}    return a\n\n\n"
        "def aliased(row: Row) -> None:\n    pass\n\n\n"
        "async def plain(a: int) -> int:\n    return a\n"
    )
    padded = source + "# -\n" * SERVICE_MAX_MODULE_LINES
    path = tmp_path / "m.py"
    path.write_text(padded, encoding="utf-8")
    shape = service_shape([("pkg.m", path)])
    assert shape["modules"]["pkg.m"] > SERVICE_MAX_MODULE_LINES
    lengths = {key.split(":")[1]: n for key, n in shape["functions"].items()}
    assert lengths["long"] == SERVICE_MAX_FUNCTION_LINES + 2 and lengths["plain"] == 2
    assert (shape["with_any"], shape["signatures"]) == (1, 3)  # ``aliased``, through Row


if __name__ == "__main__":
    shape = service_shape()
    top = sorted(shape["modules"].items(), key=lambda kv: -kv[1])[:5]
    longest = sorted(shape["functions"].items(), key=lambda kv: -kv[1])[:5]
    print(f"modules: {len(shape['modules'])}, longest {top}")
    print(f"functions: {len(shape['functions'])}, longest {longest}")
    share = f"{shape['with_any']} of {shape['signatures']} ({shape['any_share']:.1%})"
    print(f"signatures with Any: {share}")

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
    "gradebox.benchmarks": _RECORDS | {"gradebox.benchmarks", "gradebox.pipeline.gate"},
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

"""Tests for static.imports: imports resolved against stdlib, the candidate and the lockfile."""

from __future__ import annotations

from pathlib import Path

import pytest

from static.findings import Finding
from static.imports import KNOWN_IMPORTS, check
from static.lockfiles import read_lockfile

LOCKS = Path(__file__).parent / "lockfiles"

# id, code, pins, expected [(rule, line)]. The environment is empty unless a test says
# otherwise, so the results do not depend on what happens to be installed.
CASES = [
    ("yaml-with-pyyaml-pinned", "import yaml", {"pyyaml": "6.0.2"}, []),
    ("yaml-pin-spelled-as-written", "import yaml", {"PyYAML": "6.0.2"}, []),
    ("yaml-unpinned", "import yaml", {"requests": "2"}, [("GBX102", 1)]),
    (
        "invented-package",
        "import fastjsonx",
        {"requests": "2"},
        [("GBX101", 1)],
    ),
    ("invented-submodule", "from fastjsonx.core import dumps", {}, [("GBX101", 1)]),
    ("requests-unpinned", "import requests", {"pyyaml": "6.0.2"}, [("GBX102", 1)]),
    ("requests-pinned", "import requests.adapters", {"requests": "2.32.3"}, []),
    ("stdlib", "import os, sys, json\nfrom collections import abc\nimport __future__", {}, []),
    ("stdlib-private", "import _thread\nfrom importlib.metadata import version", {}, []),
    ("relative-ignored", "from . import helper\nfrom .utils import x\nfrom .. import y", {}, []),
    ("pil-with-pillow", "from PIL import Image", {"pillow": "10.4.0"}, []),
    ("pil-without-pillow", "from PIL import Image", {"numpy": "2"}, [("GBX102", 1)]),
    ("cv2-headless", "import cv2", {"opencv-python-headless": "4.10"}, []),
    ("sklearn", "from sklearn.linear_model import Ridge", {"scikit-learn": "1.5.1"}, []),
    ("bs4", "from bs4 import BeautifulSoup", {"beautifulsoup4": "4.12.3"}, []),
    ("dateutil", "from dateutil import parser", {"python-dateutil": "2.9"}, []),
    ("identity-underscore", "import typing_extensions", {"typing-extensions": "4"}, []),
    ("protobuf", "from google.protobuf import json_format", {"protobuf": "5"}, []),
    ("google-cloud", "from google.cloud import storage", {"google-cloud-storage": "2"}, []),
    (
        "google-cloud-unpinned",
        "from google.cloud import storage",
        {"protobuf": "5"},
        [("GBX102", 1)],
    ),
    ("google-invented", "import google.fastcloudx", {"protobuf": "5"}, [("GBX101", 1)]),
    ("dynamic-invented", 'm = __import__("leftpadx")', {}, [("GBX101", 1)]),
    (
        "dynamic-importlib",
        'import importlib\nm = importlib.import_module("sklearn.svm")',
        {},
        [("GBX102", 2)],
    ),
    (
        "dynamic-import-module",
        'from importlib import import_module\nimport_module("fastjsonx")',
        {},
        [("GBX101", 2)],
    ),
    ("dynamic-relative", 'import importlib\nimportlib.import_module(".x", "pkg")', {}, []),
    ("dynamic-not-literal", "name = 'x'\nm = __import__(name)", {}, []),
    (
        "nested-in-function",
        "def f():\n    import fastjsonx\n    return fastjsonx",
        {},
        [("GBX101", 2)],
    ),
    (
        "reported-once-per-name",
        "import fastjsonx\nimport fastjsonx.core\nfrom fastjsonx import a",
        {},
        [("GBX101", 1)],
    ),
    (
        "source-order",
        "import requests\nimport os\nimport fastjsonx\nimport yaml",
        {"pyyaml": "6"},
        [("GBX102", 1), ("GBX101", 3)],
    ),
    ("syntax-error-gives-nothing", "import fastjsonx\ndef (:", {}, []),
]


@pytest.mark.parametrize(
    ("code", "pins", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_import_table(code: str, pins: dict[str, str], expected: list[tuple[str, int]]) -> None:
    findings = check(code, pins, environment={})
    assert [(f.rule, f.line) for f in findings] == expected
    assert all(f.layer == "imports" for f in findings)


def test_invented_import_message_and_severity() -> None:
    [finding] = check("import fastjsonx", {"requests": "2"}, environment={})
    assert finding == Finding(
        "imports",
        "GBX101",
        "high",
        1,
        8,
        "import 'fastjsonx' matches no standard-library module and no pinned distribution: "
        "possibly a hallucinated package",
    )


def test_unpinned_import_names_the_distribution() -> None:
    [finding] = check("from PIL import Image", {"numpy": "2"}, environment={})
    assert finding.severity == "medium"
    assert finding.message == (
        "import 'PIL' needs distribution 'Pillow', which the lockfile does not pin"
    )


def test_local_modules_are_the_candidate_itself() -> None:
    code = "import solution_helpers\nfrom solution_helpers.io import read"
    assert check(code, {}, local_modules=["solution_helpers"], environment={}) == []
    assert [f.rule for f in check(code, {}, environment={})] == ["GBX101"]


def test_environment_maps_import_names_to_distributions() -> None:
    env = {"fancy_import": ["Fancy-Dist"]}
    assert check("import fancy_import", {"fancy-dist": "1.0"}, environment=env) == []
    [finding] = check("import fancy_import", {"numpy": "2"}, environment=env)
    assert (finding.rule, finding.message) == (
        "GBX102",
        "import 'fancy_import' needs distribution 'Fancy-Dist', which the lockfile does not pin",
    )


def test_with_a_lockfile_installed_is_not_enough() -> None:
    env = {"hypothesis": ["hypothesis"]}
    assert [f.rule for f in check("import hypothesis", {"pyyaml": "6"}, environment=env)] == [
        "GBX102"
    ]


def test_namespace_top_level_of_another_distribution_does_not_count() -> None:
    env = {"google": ["protobuf"]}
    findings = check("import google.cloud.storage", {"protobuf": "5"}, environment=env)
    assert [(f.rule, f.message.split(" needs")[0]) for f in findings] == [
        ("GBX102", "import 'google.cloud.storage'")
    ]


def test_a_distribution_named_like_the_namespace_does_not_count() -> None:
    # ``google`` on PyPI is an unrelated distribution; it provides no google.cloud.*.
    findings = check("from google.cloud import storage", {"google": "3"}, environment={})
    assert [f.rule for f in findings] == ["GBX102"]


NO_LOCKFILE = [
    ("installed", "import yaml", []),
    ("stdlib", "import json", []),
    ("well-known-not-installed", "import requests", [("GBX102", 1)]),
    ("table-not-installed", "import cv2", [("GBX102", 1)]),
    ("invented", "import fastjsonx", [("GBX101", 1)]),
]


@pytest.mark.parametrize(
    ("code", "expected"), [c[1:] for c in NO_LOCKFILE], ids=[c[0] for c in NO_LOCKFILE]
)
def test_without_lockfile_the_environment_stands_in(
    code: str, expected: list[tuple[str, int]]
) -> None:
    findings = check(code, None, environment={"yaml": ["PyYAML"]})
    assert [(f.rule, f.line) for f in findings] == expected


def test_without_lockfile_messages_say_installed() -> None:
    findings = check("import requests\nimport fastjsonx", None, environment={})
    assert findings[0].message.endswith("which is not installed (no lockfile)")
    assert "no installed distribution" in findings[1].message


def test_real_environment_by_default() -> None:
    # pytest runs this test, so the real installed environment provides it.
    assert check("import pytest\nimport _pytest", None) == []


def test_column_counts_characters_not_bytes() -> None:
    [finding] = check("é = 1; import fastjsonx", {}, environment={})
    assert finding.col == 15


def test_with_real_lockfiles() -> None:
    pins = read_lockfile(LOCKS / "requirements.txt")
    code = (
        "import yaml, requests, cv2, numpy, sklearn, attr, dateutil\n"
        "from PIL import Image\nfrom bs4 import BeautifulSoup\n"
        "import pandas\nimport fastjsonx\n"
    )
    findings = check(code, pins, environment={})
    assert [(f.rule, f.line, f.message.split("'")[1]) for f in findings] == [
        ("GBX102", 4, "pandas"),
        ("GBX101", 5, "fastjsonx"),
    ]


def test_known_imports_are_not_identity_entries() -> None:
    # A top-level entry only earns its place when the import name is not the
    # distribution's name (dotted namespace entries also mark the name as real).
    from packaging.utils import canonicalize_name

    for module, dists in KNOWN_IMPORTS.items():
        if "." not in module:
            assert any(canonicalize_name(d) != canonicalize_name(module) for d in dists), module


def test_position_uses_the_parser_line_breaks() -> None:
    # A form feed is a line break for str.splitlines but not for the parser.
    [finding] = check("x = 1  # \x0c\nimport fastjsonx", {}, environment={})
    assert (finding.line, finding.col) == (2, 8)

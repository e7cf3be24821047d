"""Imports versus the lockfile: every import must come from somewhere real.

Each absolute import in the candidate (``import x``, ``from x import y``, and
``__import__("x")`` / ``importlib.import_module("x")`` with a literal name) is
resolved, in order, to:

1. the standard library (``sys.stdlib_module_names`` of the running Python);
2. the candidate itself (``local_modules``);
3. a distribution the lockfile pins. An import name maps to distributions
   through :data:`KNOWN_IMPORTS` (well-known names that differ from their
   distribution: ``yaml`` -> PyYAML, ``cv2`` -> opencv-python, ``PIL`` -> Pillow),
   the installed environment's own mapping (``importlib.metadata.packages_distributions()``),
   and the name itself (``requests`` -> requests; ``google.cloud.storage`` ->
   google-cloud-storage, the convention for namespace packages).

An import that resolves to nothing known is reported as ``GBX101`` (high): an
invented package is a supply-chain risk, since anyone can register the name. An
import of a real distribution that the lockfile does not pin is ``GBX102``
(medium). "Real" means listed in :data:`KNOWN_IMPORTS`, in
:data:`WELL_KNOWN_DISTRIBUTIONS`, or installed here.

Without a lockfile (``pins=None``) the installed environment stands in for it:
an installed distribution is allowed, a well-known one that is not installed is
``GBX102``, anything else is ``GBX101``.

Relative imports are the candidate's own and are ignored. Each offending name is
reported once, at its first import. No library maps import names well enough to
depend on (pipreqs pins an old IPython and caps Python below 3.13; pigar ships a
40 MB database of every PyPI upload, squatted names included), so the table here
is small, curated and documented.

This module uses only the standard library and ``packaging``.
"""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
import warnings
from collections.abc import Collection, Iterator, Mapping, Sequence

from packaging.utils import canonicalize_name

from static.findings import Finding, Severity

__all__ = ["KNOWN_IMPORTS", "WELL_KNOWN_DISTRIBUTIONS", "check", "imported_distributions"]

KNOWN_IMPORTS: Mapping[str, tuple[str, ...]] = {
    # Import names that are not their distribution's name (canonical forms that
    # already match, like typing_extensions -> typing-extensions, need no entry).
    "Bio": ("biopython",),
    "Crypto": ("pycryptodome", "pycrypto"),
    "Cryptodome": ("pycryptodomex",),
    "Levenshtein": ("Levenshtein", "python-Levenshtein"),
    "MySQLdb": ("mysqlclient",),
    "OpenGL": ("PyOpenGL",),
    "OpenSSL": ("pyOpenSSL",),
    "PIL": ("Pillow", "pillow-simd"),
    "RPi": ("RPi.GPIO",),
    "Xlib": ("python-xlib",),
    "argon2": ("argon2-cffi",),
    "attr": ("attrs",),
    "bs4": ("beautifulsoup4",),
    "cairo": ("pycairo",),
    "corsheaders": ("django-cors-headers",),
    "cpuinfo": ("py-cpuinfo",),
    "cv2": (
        "opencv-python",
        "opencv-python-headless",
        "opencv-contrib-python",
        "opencv-contrib-python-headless",
    ),
    "dateutil": ("python-dateutil",),
    "discord": ("discord.py",),
    "dns": ("dnspython",),
    "docx": ("python-docx",),
    "dotenv": ("python-dotenv",),
    "faiss": ("faiss-cpu", "faiss-gpu"),
    "ffmpeg": ("ffmpeg-python",),
    "fitz": ("PyMuPDF",),
    "gi": ("PyGObject",),
    "git": ("GitPython",),
    "github": ("PyGithub",),
    "gitlab": ("python-gitlab",),
    "google.auth": ("google-auth",),
    "google.genai": ("google-genai",),
    "google.generativeai": ("google-generativeai",),
    "google.oauth2": ("google-auth",),
    "google.protobuf": ("protobuf",),
    "googleapiclient": ("google-api-python-client",),
    "grpc": ("grpcio",),
    "jose": ("python-jose",),
    "jwt": ("PyJWT",),
    "kafka": ("kafka-python",),
    "magic": ("python-magic",),
    "mpl_toolkits": ("matplotlib",),
    "multipart": ("python-multipart",),
    "nacl": ("PyNaCl",),
    "pdfminer": ("pdfminer.six",),
    "pkg_resources": ("setuptools",),
    "pptx": ("python-pptx",),
    "psycopg2": ("psycopg2", "psycopg2-binary"),
    "pylab": ("matplotlib",),
    "rest_framework": ("djangorestframework",),
    "serial": ("pyserial",),
    "skimage": ("scikit-image",),
    "sklearn": ("scikit-learn",),
    "slugify": ("python-slugify",),
    "socks": ("PySocks",),
    "speech_recognition": ("SpeechRecognition",),
    "telebot": ("pyTelegramBotAPI",),
    "telegram": ("python-telegram-bot",),
    "umap": ("umap-learn",),
    "usb": ("pyusb",),
    "websocket": ("websocket-client",),
    "win32api": ("pywin32",),
    "win32com": ("pywin32",),
    "wx": ("wxPython",),
    "yaml": ("PyYAML",),
    "zmq": ("pyzmq",),
}
"""Import name (top level, or dotted for namespace packages) -> distributions providing it."""

WELL_KNOWN_DISTRIBUTIONS: frozenset[str] = frozenset(
    # Popular distributions importable under their own name: real, so an
    # unpinned import of one is GBX102 (not pinned), never GBX101 (invented).
    """aiohttp alembic anthropic anyio arrow asyncpg attrs babel bcrypt
    black boto3 botocore cachetools celery certifi chardet click cloudpickle colorama
    cryptography dask datasets dill django docker elasticsearch emoji faker fastapi
    filelock flask fsspec gensim geopandas gradio gunicorn h5py httpx hypothesis idna
    jinja2 jmespath joblib jsonschema keras kubernetes langchain lightgbm loguru lxml
    markdown marshmallow matplotlib more-itertools motor msgpack mypy nltk networkx
    numba numpy openai openpyxl orjson packaging pandas paramiko pendulum pexpect
    pika plotly polars psutil psycopg pyarrow pydantic pygments pymongo pymysql
    pyparsing pytest pytz redis regex requests rich scipy scrapy seaborn
    selenium setuptools simplejson six sortedcontainers spacy sqlalchemy starlette
    statsmodels streamlit sympy tabulate tenacity tensorflow termcolor tiktoken toml
    tomli toolz torch torchvision tornado tqdm transformers typer typing-extensions
    tzdata ujson urllib3 uvicorn websockets werkzeug xgboost xlrd
    azure-core azure-identity azure-storage-blob backports-zoneinfo google-api-core
    google-cloud-bigquery google-cloud-firestore google-cloud-pubsub google-cloud-storage""".split()  # noqa: SIM905 (compact)
)
"""Canonical names of popular distributions whose import name is their own name."""

_NAMESPACES = frozenset({"azure", "backports", "google"})


def check(
    code: str,
    pins: Mapping[str, str] | None,
    *,
    local_modules: Collection[str] = (),
    environment: Mapping[str, Sequence[str]] | None = None,
) -> list[Finding]:
    """Check that every import resolves to the stdlib, the candidate, or a pinned distribution.

    Args:
        code: The candidate's source; parsed, never run. Code that does not parse
            gives no findings (the gate reports syntax errors).
        pins: ``{canonical distribution name: version}`` from
            :func:`static.lockfiles.read_lockfile`, or ``None`` when no lockfile
            was given (the installed environment stands in for it).
        local_modules: Top-level module names the candidate provides itself.
        environment: Top-level import name -> distributions installed here, as
            ``importlib.metadata.packages_distributions()`` returns it. Compute it
            once per run and pass it in: ``None`` computes it now (~0.1 s).

    Returns:
        ``GBX101`` and ``GBX102`` findings, in source order.
    """
    tree = _parse(code)
    if tree is None:
        return []
    env = importlib.metadata.packages_distributions() if environment is None else environment
    installed: set[str] = {canonicalize_name(d) for dists in env.values() for d in dists}
    allowed = installed if pins is None else {str(canonicalize_name(name)) for name in pins}
    local = {name.split(".", 1)[0] for name in local_modules}
    lines = re.split(r"\r\n|\r|\n", code)  # the parser's line breaks, not str.splitlines
    findings: list[Finding] = []
    reported: set[str] = set()
    for module, node in _imports(tree):
        top = module.split(".", 1)[0]
        shown = _shown_name(module)
        if top in sys.stdlib_module_names or top in local or shown in reported:
            continue
        verdict = _resolve(module, shown, env, allowed, lockfile=pins is not None)
        if verdict is not None:
            reported.add(shown)
            line, col = _position(node, lines)
            findings.append(Finding("imports", verdict[0], verdict[1], line, col, verdict[2]))
    return findings


def imported_distributions(
    code: str,
    available: Collection[str],
    *,
    local_modules: Collection[str] = (),
    environment: Mapping[str, Sequence[str]],
) -> list[tuple[str, int, int]]:
    """The distributions the code imports, among ``available``, each at its first import.

    Resolved as :func:`check` resolves them (the table, the name, the environment);
    imports that resolve to nothing in ``available`` are :func:`check`'s business.

    Args:
        code: The candidate's source; parsed, never run.
        available: Canonical names of the distributions that may provide imports
            (the lockfile's, or the installed ones).
        local_modules: Top-level module names the candidate provides itself.
        environment: ``importlib.metadata.packages_distributions()``.

    Returns:
        ``(canonical distribution, line, column)`` in source order, each distribution once.
    """
    tree = _parse(code)
    if tree is None:
        return []
    local = {name.split(".", 1)[0] for name in local_modules}
    lines = re.split(r"\r\n|\r|\n", code)
    found: dict[str, tuple[int, int]] = {}
    for module, node in _imports(tree):
        top = module.split(".", 1)[0]
        if top in sys.stdlib_module_names or top in local:
            continue
        table, names, installed = _distributions(module, environment)
        for dist in (str(canonicalize_name(d)) for d in (*table, *names, *installed)):
            if dist in available:
                found.setdefault(dist, _position(node, lines))
                break
    return [(dist, line, col) for dist, (line, col) in found.items()]


def _parse(code: str) -> ast.Module | None:
    # Parsing can warn (invalid escapes); a library must not print.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return ast.parse(code)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return None


def _imports(tree: ast.Module) -> Iterator[tuple[str, ast.expr | ast.stmt | ast.alias]]:
    nodes = sorted(
        (n for n in ast.walk(tree) if isinstance(n, ast.Import | ast.ImportFrom | ast.Call)),
        key=lambda n: (n.lineno, n.col_offset),
    )
    for node in nodes:
        if isinstance(node, ast.Import):
            yield from ((alias.name, alias) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0 and node.module:
                yield from _from_import(node.module, node)
        else:
            name = _dynamic_import(node)
            if name:
                yield name, node


def _from_import(module: str, node: ast.ImportFrom) -> Iterator[tuple[str, ast.ImportFrom]]:
    if module.split(".", 1)[0] not in _NAMESPACES:
        yield module, node
        return
    # ``from google.cloud import storage`` imports the module google.cloud.storage.
    yield from ((f"{module}.{alias.name}", node) for alias in node.names if alias.name != "*")


def _dynamic_import(call: ast.Call) -> str | None:
    func = call.func
    called = func.id if isinstance(func, ast.Name) else ""
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
        called = f"{func.value.id}.{func.attr}"
    if called not in {"__import__", "import_module", "importlib.import_module"}:
        return None
    if not call.args or not isinstance(call.args[0], ast.Constant):
        return None
    name = call.args[0].value
    return name if isinstance(name, str) and name and not name.startswith(".") else None


def _shown_name(module: str) -> str:
    parts = module.split(".")
    if parts[0] in _NAMESPACES:
        return ".".join(parts[:3])
    return parts[0]


def _resolve(
    module: str,
    shown: str,
    env: Mapping[str, Sequence[str]],
    allowed: set[str],
    *,
    lockfile: bool,
) -> tuple[str, Severity, str] | None:
    table, names, installed = _distributions(module, env)
    if any(canonicalize_name(d) in allowed for d in (*table, *names, *installed)):
        return None
    known = [*table, *installed, *(n for n in names if n in WELL_KNOWN_DISTRIBUTIONS)]
    if not known:
        where = "pinned" if lockfile else "installed"
        message = (
            f"import {shown!r} matches no standard-library module and no {where} "
            "distribution: possibly a hallucinated package"
        )
        return "GBX101", "high", message
    why = "which the lockfile does not pin" if lockfile else "which is not installed (no lockfile)"
    return "GBX102", "medium", f"import {shown!r} needs distribution {known[0]!r}, {why}"


def _distributions(
    module: str, env: Mapping[str, Sequence[str]]
) -> tuple[tuple[str, ...], list[str], list[str]]:
    """Distributions that may provide ``module``: from the table, by name, and installed."""
    parts = module.split(".")
    prefixes = [".".join(parts[:i]) for i in range(len(parts), 0, -1)]
    entry = next((p for p in prefixes if p in KNOWN_IMPORTS), None)
    table = KNOWN_IMPORTS[entry] if entry else ()
    if entry and "." in entry:
        return table, [], []  # a dotted entry names exactly what provides the submodule
    if parts[0] in _NAMESPACES:
        # The top level is shared by unrelated distributions (and ``google`` on PyPI
        # is one of them): only the dotted name counts, never the bare namespace.
        return table, [_dist_name(p) for p in prefixes[:-1]], []
    names = [_dist_name(p) for p in prefixes]
    return table, names, list(dict.fromkeys(env.get(parts[0], ())))


def _dist_name(module: str) -> str:
    return str(canonicalize_name(module.replace(".", "-")))


def _position(node: ast.AST, lines: list[str]) -> tuple[int, int]:
    """1-based line and character column (the AST counts UTF-8 bytes)."""
    line, offset = int(getattr(node, "lineno", 0)), int(getattr(node, "col_offset", 0))
    text = lines[line - 1] if 0 < line <= len(lines) else ""
    return line, len(text.encode("utf-8")[:offset].decode("utf-8", errors="ignore")) + 1

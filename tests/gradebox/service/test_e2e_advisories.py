"""``GRADEBOX_ADVISORIES``: a real ``gradebox serve`` flags a vulnerable pin from a real advisory.

The advisory database is one real record of the PyPA advisory database
(``tests/cases/advisories``: PYSEC-2014-8, Jinja2 before 2.7.2), given to the
server as an operator gives it, through the environment. A task whose lockfile
pins ``jinja2==2.7`` gets the ``deps`` layer's finding on a candidate importing
jinja2, with the advisory's id, aliases and fixed version; the same task pinning
``jinja2==2.7.2`` (fixed) gets none; without the variable the layer is off.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import httpx
import pytest
from serving import serve

CASES = Path(__file__).resolve().parents[2] / "cases" / "advisories"
CODE = (
    "import jinja2\n\n\ndef render(name: str) -> str:\n"
    "    return jinja2.Template('hi {{ n }}').render(n=name)\n"
)
TASK = {
    "public": {"spec": "Greet name.", "signature": "def render(name: str) -> str"},
    "hidden": [{"args": ["a"], "expect": "hi a"}],
    "disclosure": "cases",
}


def _task(pin: str) -> dict:
    return TASK | {"static": {"lockfile": {"name": "requirements.txt", "content": pin + "\n"}}}


def _deps(url: str, admin: dict[str, str], pin: str) -> list[dict]:
    r = httpx.put(f"{url}/v1/tasks/render", json=_task(pin), headers=admin, timeout=60)
    assert r.status_code == 200, r.text
    body = {"id": "s1", "fn": "render", "code": CODE, "static": True}
    row = httpx.post(f"{url}/v1/grade", json=body, headers=admin, timeout=120).json()
    assert row["static"] is not None and row["static"]["infra_error"] is None, row
    return [f for f in row["static"]["findings"] if f["layer"] == "deps"]


@pytest.fixture
def advisories(tmp_path: Path) -> Path:
    """A copy of the case data: the server builds its index beside its source."""
    return Path(shutil.copytree(CASES, tmp_path / "advisories"))


def test_the_service_flags_a_vulnerable_pin_from_gradebox_advisories(tmp_path, advisories):
    env = {"GRADEBOX_ADVISORIES": str(advisories)}
    with serve(tmp_path, env, "--no-judge", "--static-sessions", "1") as served:
        [finding] = _deps(served.url, served.admin, "jinja2==2.7")
        assert finding["rule"] in ("GBX311", "GBX312"), finding
        text = str(finding)
        for expected in ("PYSEC-2014-8", "CVE-2014-1402", "GHSA-8r7q-cvjq-x353", "2.7.2"):
            assert expected in text, finding
        assert _deps(served.url, served.admin, "jinja2==2.7.2") == []


def test_without_gradebox_advisories_the_deps_layer_finds_nothing(tmp_path):
    with serve(tmp_path, {}, "--no-judge", "--static-sessions", "1") as served:
        assert _deps(served.url, served.admin, "jinja2==2.7") == []

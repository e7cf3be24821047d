"""The docs site builds strict from this checkout, and a broken link fails the build.

`make docs` runs the same build; here it also fails on the OpenAPI renderer's own
warnings (a ``$ref`` that resolves nowhere), which MkDocs' strict mode does not count.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MKDOCS = Path(sys.executable).with_name("mkdocs")


def build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(MKDOCS), "build", "--strict", "-f", str(config), "-d", str(site)],
        cwd=ROOT, capture_output=True, text=True, timeout=900, check=False,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1", "COLUMNS": "400"},
    )  # fmt: skip


def warnings(done: subprocess.CompletedProcess[str]) -> list[str]:
    return [line for line in (done.stdout + done.stderr).splitlines() if "WARNING" in line]


def test_the_site_builds_strict_with_no_warning_and_both_references(tmp_path):
    done = build(ROOT / "mkdocs.yml", tmp_path / "site")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert not warnings(done), warnings(done)
    cli = (tmp_path / "site/reference/cli/index.html").read_text()
    for command in ("grade", "serve", "gate", "token-create", "advisories-update"):
        assert f'id="gradebox-{command}"' in cli, command
    assert "--judge-repeat" in cli  # an option that was once only in --help
    http = (tmp_path / "site/reference/http/index.html").read_text()
    for route in ('id="post-v1grade"', 'id="put-v1tasks', 'id="get-readyz"'):
        assert route in http, route
    security = (tmp_path / "site/security/index.html").read_text()
    assert (ROOT / "SECURITY.md").read_text().splitlines()[2][:40] in security


def test_a_broken_link_fails_the_build(tmp_path):
    shutil.copytree(ROOT / "docs", tmp_path / "docs")
    shutil.copy(ROOT / "openapi.json", tmp_path / "openapi.json")
    page = tmp_path / "docs/examples.md"
    page.write_text(page.read_text() + "\nSee [the gone page](guides/gone.md).\n")
    config = tmp_path / "mkdocs.yml"
    config.write_text(f"INHERIT: {ROOT / 'mkdocs.yml'}\ndocs_dir: {tmp_path / 'docs'}\n")
    done = build(config, tmp_path / "site")
    assert done.returncode != 0
    assert any("guides/gone.md" in line for line in warnings(done)), warnings(done)

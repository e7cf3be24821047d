"""``gradebox advisories``: keep the OSV advisory snapshot the deps layer reads offline."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import click

from gradebox.cli.errors import exit_codes
from gradebox.errors import BadInput, SetupError

__all__ = ["advisories"]

MAX_DOWNLOAD = 1024 * 1024 * 1024
"""A snapshot larger than this is refused (osv.dev's PyPI zip is tens of MB)."""
_CREDIT = (
    "PyPI advisories: the PyPA advisory database (CC-BY 4.0), github.com/pypa/advisory-database"
)


def _cache(given: Path | None) -> Path:
    if given is not None:
        return given
    base = os.environ.get("XDG_CACHE_HOME", "").strip()
    return (Path(base) if base else Path.home() / ".cache") / "gradebox"


@click.group(context_settings={"max_content_width": 100})
def advisories() -> None:
    """Keep the OSV advisory database that --advisories reads (offline at grading time).

    A snapshot is a directory of OSV records (JSON, or YAML as the PyPA advisory
    database keeps them) or osv.dev's zip of one ecosystem. It is indexed once
    into the cache; every run records its date and digest.

    \b
    Examples:
      gradebox advisories update --to ~/advisories/PyPI.zip \\
        --from https://osv-vulnerabilities.storage.googleapis.com/PyPI/all.zip
      gradebox advisories info ~/advisories/PyPI.zip
    """  # noqa: D301 - click needs a real \b


@advisories.command()
@click.option("--from", "source", required=True, metavar="URL|FILE|DIR",
              help="The new snapshot: an http(s) URL of a zip, a zip, or a directory.")  # fmt: skip
@click.option("--to", "dest", type=click.Path(path_type=Path), required=True,
              help="Where the snapshot is kept (replaced once the new one indexes).")  # fmt: skip
@click.option("--cache-dir", type=click.Path(path_type=Path, file_okay=False),
              help="Where indexes are kept (default: $XDG_CACHE_HOME/gradebox).")  # fmt: skip
@click.option("--json", "as_json", is_flag=True, help="Print the new snapshot as JSON.")
@exit_codes
def update(source: str, dest: Path, cache_dir: Path | None, as_json: bool) -> None:
    """Fetch or copy a new snapshot, check that it indexes, then put it in place.

    Without network (or when the new snapshot does not read) the old one is kept
    and the command says so (exit 2).
    """
    from gradebox.pipeline.static import open_advisories  # noqa: PLC0415

    dest = dest.expanduser().absolute()
    dest.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".gradebox-advisories-", dir=dest.parent))
    try:
        new = _fetch(source, staging, dest)
        store = open_advisories(new, _cache(cache_dir))
        snap = store.snapshot
        store.close()
        if snap.records == 0:
            raise BadInput([f"{source}: no advisory records in it; kept {dest} as it was"])
        _replace(new, dest)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    store = open_advisories(dest, _cache(cache_dir))  # indexed now, not on the first run
    _show(store.snapshot, as_json=as_json)
    store.close()


@advisories.command()
@click.argument("path", type=click.Path(path_type=Path))
@click.option("--cache-dir", type=click.Path(path_type=Path, file_okay=False),
              help="Where indexes are kept (default: $XDG_CACHE_HOME/gradebox).")  # fmt: skip
@click.option("--json", "as_json", is_flag=True, help="Print the snapshot as JSON.")
@exit_codes
def info(path: Path, cache_dir: Path | None, as_json: bool) -> None:
    """Index PATH if needed and say how old it is, its digest and what did not read."""
    from gradebox.pipeline.static import open_advisories  # noqa: PLC0415

    store = open_advisories(path, _cache(cache_dir))
    _show(store.snapshot, as_json=as_json)
    store.close()


def _fetch(source: str, staging: Path, dest: Path) -> Path:
    if source.startswith(("http://", "https://")):
        return _download(source, staging / "snapshot.zip", dest)
    given = Path(source).expanduser()
    if given.is_dir():
        shutil.copytree(given, staging / "snapshot", symlinks=True)
        return staging / "snapshot"
    if given.is_file():
        shutil.copyfile(given, staging / "snapshot.zip")
        return staging / "snapshot.zip"
    raise BadInput([f"--from {source}: no such file, directory or http(s) URL"])


def _download(url: str, target: Path, dest: Path) -> Path:
    import httpx  # noqa: PLC0415 - only when fetching

    kept = f"kept {dest} as it was" if dest.exists() else f"{dest} not created"
    try:
        with httpx.stream("GET", url, follow_redirects=True, timeout=60) as reply:
            reply.raise_for_status()
            size = 0
            with target.open("wb") as out:
                for chunk in reply.iter_bytes():
                    size += len(chunk)
                    if size > MAX_DOWNLOAD:
                        raise SetupError(f"{url}: larger than {MAX_DOWNLOAD} bytes; {kept}")
                    out.write(chunk)
    except httpx.HTTPStatusError as exc:
        raise SetupError(f"cannot fetch {url}: HTTP {exc.response.status_code}; {kept}") from exc
    except httpx.HTTPError as exc:
        raise SetupError(f"cannot fetch {url} (no network?): {exc}; {kept}") from exc
    return target


def _replace(new: Path, dest: Path) -> None:
    if new.is_file() and not dest.is_dir():
        os.replace(new, dest)
        return
    old = dest.with_name(dest.name + ".old")
    shutil.rmtree(old, ignore_errors=True)
    if dest.exists():
        os.replace(dest, old)
    os.replace(new, dest)
    if old.is_dir():
        shutil.rmtree(old, ignore_errors=True)
    else:
        old.unlink(missing_ok=True)


def _show(snap: object, *, as_json: bool) -> None:
    from static.advisories import Snapshot  # noqa: PLC0415

    assert isinstance(snap, Snapshot)  # noqa: S101 - what open_advisories returns
    fields = {k: getattr(snap, k) for k in Snapshot.__dataclass_fields__}
    if as_json:
        click.echo(json.dumps({**fields, "problems": list(snap.problems)}))
        return
    click.echo(f"{snap.source}: {snap.records} advisories as of {snap.date or 'unknown'}")
    click.echo(f"digest {snap.digest}; {snap.withdrawn} withdrawn left out; {snap.skipped} skipped")
    for problem in snap.problems:
        click.echo(f"  skipped {problem}")
    click.echo(_CREDIT)

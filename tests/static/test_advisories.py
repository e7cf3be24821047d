"""The advisory store on the real PyPA snapshot: OSV's matching rules, bad records, the index.

Data: the PyPA advisory database (CC-BY 4.0), github.com/pypa/advisory-database.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest
import yaml
from advisory_data import SNAPSHOT, real_store

from static.advisories import AdvisoryError, AdvisoryStore
from static.advisories.matching import check_compiled, compile_entry, public
from static.advisories.records import Affected

JINJA = SNAPSHOT / "vulns" / "jinja2" / "PYSEC-2014-8.yaml"


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    with real_store(tmp_path_factory) as s:
        yield s


def _ids(store, dist, version):
    return {v.ids[0]: v for v in store.vulnerabilities(dist, version)}


def test_the_whole_snapshot_indexes_with_nothing_skipped(store):
    snap = store.snapshot
    assert (snap.records, snap.withdrawn, snap.skipped) == (2651, 10, 0)
    assert snap.date == "2024-10-10T17:22:00.587279Z"
    assert snap.digest.startswith("sha256:") and len(snap.digest) == 71


def test_a_known_affected_pin_gets_its_id_aliases_range_and_fix(store):
    found = _ids(store, "jinja2", "2.7")
    vuln = found["PYSEC-2014-8"]
    assert vuln.ids == ("PYSEC-2014-8", "CVE-2014-1402", "GHSA-8r7q-cvjq-x353")
    assert (vuln.fixed, vuln.ranges, vuln.rating) == ("2.7.2", ("<2.7.2",), "unknown")
    assert found["PYSEC-2014-82"].fixed == "2.7.3"


def test_the_fixed_version_is_just_outside_the_range(store):
    found = _ids(store, "jinja2", "2.7.2")
    assert "PYSEC-2014-8" not in found
    assert "PYSEC-2014-82" in found  # fixed one release later, in 2.7.3
    assert _ids(store, "jinja2", "3.1.4") == {}
    assert _ids(store, "requests", "2.32.3") == {}


def test_a_pre_release_of_the_fix_is_still_affected(store):
    # A specifier (<2.7.2) would leave pre-releases out; PEP 440 order puts 2.7.2rc1 first.
    assert "PYSEC-2014-8" in _ids(store, "jinja2", "2.7.2rc1")
    assert "PYSEC-2014-8" in _ids(store, "jinja2", "2.7.2.dev1")
    assert "PYSEC-2014-8" not in _ids(store, "jinja2", "2.7.2.post1")


def test_a_local_version_is_its_public_version(store):
    assert "PYSEC-2014-8" in _ids(store, "jinja2", "2.7+ubuntu1")
    assert "PYSEC-2014-8" not in _ids(store, "jinja2", "2.7.2+ubuntu1")


def test_last_affected_includes_that_version_and_nothing_after(store):
    vuln = _ids(store, "py", "1.11.0")["PYSEC-2022-42969"]
    assert (vuln.ranges, vuln.fixed) == (("<=1.11.0",), None)
    assert "PYSEC-2022-42969" not in _ids(store, "py", "1.11.0.post1")


def test_a_withdrawn_record_never_matches(store):
    record = yaml.safe_load((SNAPSHOT / "vulns" / "redis" / "PYSEC-2023-73.yaml").read_text())
    assert record["withdrawn"] and "0.6.0" in record["affected"][0]["versions"]
    assert "PYSEC-2023-73" not in _ids(store, "redis", "0.6.0")


def test_a_version_that_is_not_pep_440_matches_explicit_versions_only(store):
    assert _ids(store, "jinja2", "not-a-version") == {}


def test_ranges_agree_with_the_versions_osv_expanded_from_them(store):
    # osv.dev's tooling expands each ECOSYSTEM range into the `versions` it lists; our
    # range evaluation alone (the list ignored) must hold every listed version, except
    # where a record is inconsistent in itself (each case read and explained here).
    misses = set()
    checked = 0
    for package in store.packages():
        for advisory in store.advisories(package):
            for entry in (e for e in advisory.affected if e.package == package and e.ranges):
                ranges_only = compile_entry(Affected(entry.package, entry.ranges, ()))
                for version in (v for v in entry.versions if public(v) is not None):
                    checked += 1
                    if not check_compiled(ranges_only, version).affected:
                        misses.add((advisory.id, version))
    assert checked > 130_000
    assert misses == {
        # introduced 3.2 and 4.2 list their own pre-releases (PEP 440 puts them before)
        ("PYSEC-2023-61", "3.2a1"), ("PYSEC-2023-61", "3.2b1"), ("PYSEC-2023-61", "3.2rc1"),
        ("PYSEC-2023-61", "4.2a1"), ("PYSEC-2023-61", "4.2b1"), ("PYSEC-2023-61", "4.2rc1"),
        # lists its own fix, 23.9.0
        ("PYSEC-2023-177", "23.9.0"), ("PYSEC-2023-177", "23.9.0.post1"),
        # overlapping ranges written out of order: [2.11, 2.11.7) and [0, 2.11.6)
        ("PYSEC-2021-114", "2.11.6"),
        # PYSEC-2022-236 ("fixed: 3.1.1" then "introduced: 3.1.1") is not here: 3.1.1 is in
    }  # fmt: skip


def _twin_zip(path: Path) -> None:
    """osv.dev's shape: the PYSEC record and its GHSA twin (rated) as JSON in one zip."""
    record = yaml.safe_load(JINJA.read_text())
    twin = dict(record, id="GHSA-8r7q-cvjq-x353", aliases=["CVE-2014-1402", "PYSEC-2014-8"])
    twin["database_specific"] = {"severity": "MODERATE"}
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("PYSEC-2014-8.json", json.dumps(record))
        zf.writestr("GHSA-8r7q-cvjq-x353.json", json.dumps(twin))


def test_aliases_merge_into_one_vulnerability_rated_by_either(tmp_path):
    _twin_zip(tmp_path / "PyPI.zip")
    with AdvisoryStore.open(tmp_path / "PyPI.zip", tmp_path / "cache") as store:
        assert store.snapshot.records == 2
        [vuln] = store.vulnerabilities("jinja2", "2.7")
    assert vuln.ids == ("PYSEC-2014-8", "CVE-2014-1402", "GHSA-8r7q-cvjq-x353")
    assert (vuln.rating, vuln.fixed) == ("medium", "2.7.2")


def _bad_source(root: Path) -> None:
    (root / "jinja2").mkdir(parents=True)
    (root / "jinja2" / "PYSEC-2014-8.yaml").write_bytes(JINJA.read_bytes())
    (root / "broken.yaml").write_text("id: [unclosed\n")
    (root / "list.json").write_text("[1, 2]")
    (root / "noid.yaml").write_text("affected: []\n")
    (root / "types.yaml").write_text("id: X-1\naffected: {package: 1}\n")
    (root / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    (root / "huge.json").write_bytes(b" " * (4 * 1024 * 1024 + 1))
    (root / "latin1.yaml").write_bytes(b"id: X-2\ndetails: caf\xe9\n")
    (root / "outside.yaml").symlink_to(JINJA)
    (root / "README.md").write_text("not a record")


def test_bad_records_are_named_skipped_and_counted(tmp_path):
    _bad_source(tmp_path / "src")
    with AdvisoryStore.open(tmp_path / "src", tmp_path / "cache") as store:
        snap = store.snapshot
        assert "PYSEC-2014-8" in _ids(store, "jinja2", "2.7")
    assert (snap.records, snap.skipped) == (1, 7)
    problems = dict(p.split(": ", 1) for p in snap.problems)
    assert set(problems) == {
        "broken.yaml", "list.json", "noid.yaml", "types.yaml", "deep.json", "huge.json",
        "latin1.yaml",
    }  # fmt: skip
    assert problems["huge.json"].startswith("larger than")
    assert problems["deep.json"] in {"nested too deeply"} or problems["deep.json"].startswith("not")
    assert problems["types.yaml"] == "`affected` is not a list"
    assert problems["latin1.yaml"].startswith("not UTF-8")


def test_yaml_versions_keep_their_text(tmp_path):
    # PyYAML's implicit types would read 2.10 as the float 2.1; the base loader keeps the text.
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "X-3.yaml").write_text(
        "id: X-3\nmodified: 2024-01-01T00:00:00Z\naffected:\n"
        "- package: {ecosystem: PyPI, name: Demo_Pkg}\n  versions: [2.10]\n"
    )
    with AdvisoryStore.open(tmp_path / "src", tmp_path / "cache") as store:
        assert [v.ids[0] for v in store.vulnerabilities("demo-pkg", "2.10")] == ["X-3"]
        assert store.vulnerabilities("demo-pkg", "2.1") == []
        assert store.snapshot.date == "2024-01-01T00:00:00Z"


def test_the_index_is_reused_until_the_source_changes(tmp_path):
    src = tmp_path / "src"
    (src / "jinja2").mkdir(parents=True)
    (src / "jinja2" / "PYSEC-2014-8.yaml").write_bytes(JINJA.read_bytes())
    with AdvisoryStore.open(src, tmp_path / "cache") as first:
        digest = first.snapshot.digest
    [index] = (tmp_path / "cache").iterdir()
    built = index.stat().st_ino
    with AdvisoryStore.open(src, tmp_path / "cache") as again:
        assert again.snapshot.digest == digest
    assert index.stat().st_ino == built  # not rebuilt
    py = SNAPSHOT / "vulns" / "py" / "PYSEC-2022-42969.yaml"
    (src / "py.yaml").write_bytes(py.read_bytes())
    with AdvisoryStore.open(src, tmp_path / "cache") as changed:
        assert changed.snapshot.digest != digest
        assert changed.snapshot.records == 2
        assert changed.vulnerabilities("py", "1.11.0")


def test_a_private_index_is_removed_at_close_and_on_a_failed_open(tmp_path):
    src = tmp_path / "src"
    (src / "jinja2").mkdir(parents=True)
    (src / "jinja2" / "PYSEC-2014-8.yaml").write_bytes(JINJA.read_bytes())
    kept, private = tmp_path / "kept", tmp_path / "private"
    with AdvisoryStore.open(src, private, private=True) as store:
        assert "PYSEC-2014-8" in _ids(store, "jinja2", "2.7")
        assert any(private.iterdir())
    assert not private.exists()
    store.close()  # twice: nothing left to remove, no error
    with AdvisoryStore.open(src, kept):
        pass
    assert any(kept.iterdir())  # a cache that is not private stays
    (tmp_path / "missing").mkdir()
    private.mkdir()  # as the caller's mkdtemp made it
    with pytest.raises(AdvisoryError):
        AdvisoryStore.open(tmp_path / "missing" / "no.zip", private, private=True)
    assert not private.exists()

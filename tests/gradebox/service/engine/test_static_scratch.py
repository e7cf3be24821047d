"""The static sessions' temporary files live below one directory the server removes.

pebble ends a session process with SIGTERM (at close, or when one is stuck), and a
session so ended cleans nothing itself: each used to leave its warm tools' scratch
(mypy's cache) and an advisory index in the temporary directory, one set per session
per start of ``serve``. Real sessions, real tools, a real advisory record.
"""

from __future__ import annotations

import tempfile

from advisory_data import SNAPSHOT

from gradebox.service.engine.static import StaticService


def test_every_session_file_is_below_the_servers_scratch_and_gone_at_close(tmp_path, monkeypatch):
    src = tmp_path / "advisories" / "jinja2"
    src.mkdir(parents=True)
    (src / "PYSEC-2014-8.yaml").write_bytes(
        (SNAPSHOT / "vulns" / "jinja2" / "PYSEC-2014-8.yaml").read_bytes()
    )
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    service = StaticService(sessions=2, advisories=src.parent, start_timeout_s=300)  # hang bound
    try:
        [root] = scratch.glob("gradebox-static-*")
        assert len(list(root.glob("gradebox-warm-*"))) == 2  # one per session, below the root
        assert len(list(root.glob("gradebox-adv-*/advisories-*.sqlite"))) == 2
    finally:
        service.close()
    # (multiprocessing's own folder may be here too: the forkserver's, this process's)
    assert [p.name for p in scratch.iterdir() if not p.name.startswith("pymp-")] == []
    service.close()  # twice: nothing left, no error

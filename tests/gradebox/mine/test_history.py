"""Reading history: ranges, merges left out, commit objects parsed, the repository never written."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gradebox.errors import BadInput
from gradebox.mine import MineConfig, Miner
from gradebox.mine.history import changed_paths, commits_in_range, listing, read_commits
from gradebox.patches.tree import ObjectStore


def _linear(history: Any) -> list[str]:
    return [
        history.shas["root"],
        history.commit("two", {"calc/two.py": "x = 2\n"}),
        history.commit("three", {"calc/three.py": "x = 3\n"}, "Three\n\nbody line\n"),
    ]


def test_ranges_newest_first(history: Any) -> None:
    root, two, three = _linear(history)
    store = ObjectStore(history.root)
    assert commits_in_range(store, None) == [three, two, root]
    assert commits_in_range(store, f"{root}..{three}") == [three, two]
    assert commits_in_range(store, f"{two}..") == [three]
    assert commits_in_range(store, two) == [two, root]
    assert commits_in_range(store, "main~1..main") == [three]


@pytest.mark.parametrize("bad", ["a...b", "..main", "nope..main", "main..nope", "--all", "x y"])
def test_a_bad_range_is_bad_input(history: Any, bad: str) -> None:
    with pytest.raises(BadInput, match="--rev-range"):
        commits_in_range(ObjectStore(history.root), bad)


def test_merges_are_left_out(history: Any) -> None:
    root = history.shas["root"]
    history.git("checkout", "-q", "-b", "side")
    side = history.commit("side", {"calc/side.py": "s = 1\n"})
    history.git("checkout", "-q", "main")
    main = history.commit("main", {"calc/main.py": "m = 1\n"})
    history.git("merge", "-q", "--no-ff", "-m", "merge side", "side")
    got = commits_in_range(ObjectStore(history.root), None)
    assert set(got) == {root, side, main} and len(got) == 3


def test_commit_objects_are_parsed(history: Any) -> None:
    root, two, three = _linear(history)
    found = read_commits(ObjectStore(history.root), [three, root])
    assert found[three].parents == (two,)
    assert found[root].parents == ()
    assert found[three].message == "Three\n\nbody line\n"
    assert found[three].subject == "Three"
    assert found[three].created_at == "2024-01-31T11:00:00Z"  # +01:00 in UTC


def test_listings_compare_without_reading_blobs(history: Any) -> None:
    root, two, _ = _linear(history)
    store = ObjectStore(history.root)
    assert changed_paths(listing(store, root), listing(store, two)) == ["calc/two.py"]


def test_reading_history_never_writes_the_repository(history: Any) -> None:
    _linear(history)
    before = history.hash()
    store = ObjectStore(history.root)
    shas = commits_in_range(store, None)
    read_commits(store, shas)
    for sha in shas:
        listing(store, sha)
        store.tree(sha)
    assert history.hash() == before


def test_not_a_repository_is_bad_input(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match="not a git repository"):
        Miner(MineConfig(tmp_path, "acme/x"))

"""Tests for static.lockfiles: every format, and bad files named by file and line."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from static.lockfiles import LockfileError, lockfile_format, read_lockfile

HERE = Path(__file__).parent / "lockfiles"


def test_requirements_txt_with_hashes_markers_continuations_and_includes() -> None:
    pins = read_lockfile(HERE / "requirements.txt")
    assert pins == {
        # -r sub/base.txt, which itself includes common.txt relative to sub/
        "python-dateutil": "2.9.0.post0",
        "attrs": "24.2.0",
        # hashes on continuation lines, a comment line inside the continuation
        "pyyaml": "6.0.2",
        # environment marker and a trailing comment
        "requests": "2.32.3",
        # marker, then a hash on the continuation line
        "tomli": "2.0.1",
        # extras and spaces around ==
        "opencv-python-headless": "4.10.0.84",
        # unpinned here, pinned by -c constraints.txt
        "beautifulsoup4": "4.12.3",
        "pillow": "10.4.0",
        # one pin per environment marker
        "numpy": "1.26.4 || 2.1.0",
        # PEP 508 direct reference; the `#` in the URL is not a comment
        "mypkg": "@ https://example.invalid/mypkg-1.0.tar.gz#sha256=abc",
        # bare wheel URL: name and version from the file name
        "scikit-learn": "1.5.1",
        # editable VCS URL named by #egg=
        "fastapi-utils": "@ git+https://github.com/example/fastapi-utils.git@v0.2#egg=fastapi_utils",
    }


def test_constraints_alone_declare_nothing() -> None:
    assert "six" not in read_lockfile(HERE / "requirements.txt")


def test_requirements_keep_file_order() -> None:
    assert list(read_lockfile(HERE / "requirements.txt"))[:4] == [
        "python-dateutil",
        "attrs",
        "pyyaml",
        "requests",
    ]


def test_unpinned_requirement_keeps_its_specifier(tmp_path: Path) -> None:
    path = tmp_path / "requirements.txt"
    path.write_text("Requests>=2,<3\nflask\nDjango==4.*\n", encoding="utf-8")
    assert read_lockfile(path) == {"requests": "<3,>=2", "flask": "", "django": "==4.*"}


def test_uv_lock() -> None:
    assert read_lockfile(HERE / "uv.lock") == {
        "candidate-project": "",
        "numpy": "1.26.4 || 2.1.0",
        "pyyaml": "6.0.2",
    }


def test_poetry_lock() -> None:
    assert read_lockfile(HERE / "poetry.lock") == {
        "beautifulsoup4": "4.12.3",
        "soupsieve": "2.6",
        "scikit-learn": "1.5.1",
    }


@pytest.mark.parametrize("name", ["pylock.toml", "pylock.dev.toml"])
def test_pylock_toml(name: str) -> None:
    assert read_lockfile(HERE / name) == {"attrs": "24.2.0", "pillow": "10.4.0", "local-tool": ""}


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("requirements.txt", "requirements"),
        ("requirements-dev.txt", "requirements"),
        ("constraints.txt", "requirements"),
        ("uv.lock", "uv"),
        ("poetry.lock", "poetry"),
        ("pylock.toml", "pylock"),
        ("pylock.gpu.toml", "pylock"),
    ],
)
def test_format_from_file_name(name: str, kind: str) -> None:
    assert lockfile_format(Path("some/dir") / name) == kind


@pytest.mark.parametrize(
    "name", ["Pipfile.lock", "package-lock.json", "pylock.a.b.toml", "pyproject.toml", "uv.toml"]
)
def test_unknown_format_is_a_clear_error(name: str) -> None:
    with pytest.raises(LockfileError, match=r"unknown lockfile format; expected requirements\.txt"):
        lockfile_format(name)


BROKEN = [
    ("broken/requirements.txt", r"broken/requirements\.txt:7: invalid requirement 'pandas==='"),
    ("broken/unknown-option.txt", r"broken/unknown-option\.txt:2: unknown option '--frobnicate'"),
    (
        "broken/missing-include.txt",
        r"broken/missing-include\.txt:2: included file .*does-not-exist\.txt not found",
    ),
    ("broken/cycle-a.txt", r"broken/cycle-b\.txt:2: including cycle-a\.txt again makes a cycle"),
    (
        "broken/includes-bad.txt",
        r"sub/bad-nested\.txt:2: invalid requirement 'not a requirement at all!'",
    ),
    ("broken/uv/uv.lock", r"broken/uv/uv\.lock:5:15: Expected newline"),
    ("broken/poetry/poetry.lock", r"broken/poetry/poetry\.lock:5: package 'attrs' has no string"),
    ("broken/pylock/pylock.toml", r"broken/pylock/pylock\.toml:2: unsupported lock-version '2\.0'"),
    ("broken/pylock2/pylock.toml", r"broken/pylock2/pylock\.toml:7: invalid distribution name"),
]


@pytest.mark.parametrize(("name", "message"), BROKEN, ids=[b[0] for b in BROKEN])
def test_broken_lockfile_names_file_and_line(name: str, message: str) -> None:
    with pytest.raises(LockfileError) as info:
        read_lockfile(HERE / name)
    assert re.search(message, str(info.value)), str(info.value)
    assert "\n" not in str(info.value)


def test_lockfile_error_is_bad_input_not_a_tool_error() -> None:
    from static.findings import ToolError

    assert issubclass(LockfileError, ValueError)
    assert not issubclass(LockfileError, ToolError)


def test_toml_error_at_end_of_file_names_last_line(tmp_path: Path) -> None:
    path = tmp_path / "poetry.lock"
    path.write_text('[[package]]\nname = "six"\nversion = "1.16.0\n', encoding="utf-8")
    with pytest.raises(LockfileError, match=r"poetry\.lock:3:\d+: "):
        read_lockfile(path)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(LockfileError, match=r"uv\.lock: cannot read"):
        read_lockfile(tmp_path / "uv.lock")


def test_not_utf8_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "requirements.txt"
    path.write_bytes(b"six==1.16.0\nattrs==\xff\n")
    with pytest.raises(LockfileError, match=r"requirements\.txt:2: not UTF-8"):
        read_lockfile(path)


def test_remote_include_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "requirements.txt"
    path.write_text("-r https://example.invalid/reqs.txt\n", encoding="utf-8")
    with pytest.raises(LockfileError, match=r"requirements\.txt:1: remote include"):
        read_lockfile(path)


def test_continuation_error_reports_first_physical_line(tmp_path: Path) -> None:
    path = tmp_path / "requirements.txt"
    path.write_text("six==1.16.0\n\nbad name \\\n  ==1.0\n", encoding="utf-8")
    with pytest.raises(LockfileError, match=r"requirements\.txt:3: invalid requirement"):
        read_lockfile(path)


def test_attached_short_options_and_global_flags(tmp_path: Path) -> None:
    (tmp_path / "more.txt").write_text("attrs==24.2.0\n", encoding="utf-8")
    path = tmp_path / "requirements.txt"
    path.write_text(
        "-rmore.txt\n--pre\n-i https://pypi.org/simple\n--only-binary=:all:\n"
        "--trusted-host example.invalid\nsix==1.16.0 --config-settings=x=y\n",
        encoding="utf-8",
    )
    assert read_lockfile(path) == {"attrs": "24.2.0", "six": "1.16.0"}


def test_editable_local_path_names_nothing(tmp_path: Path) -> None:
    path = tmp_path / "requirements.txt"
    path.write_text("-e .\n--editable=./libs/helper\nsix==1.16.0\n", encoding="utf-8")
    assert read_lockfile(path) == {"six": "1.16.0"}


def test_continuation_left_open_at_end_of_file(tmp_path: Path) -> None:
    path = tmp_path / "requirements.txt"
    path.write_text("six==1.16.0 \\\n", encoding="utf-8")
    assert read_lockfile(path) == {"six": "1.16.0"}

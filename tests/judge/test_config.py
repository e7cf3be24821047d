"""JudgeConfig: the environment is read only by from_env, from the mapping it is given."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

from judge import Judge, JudgeConfig, JudgeConfigError, JudgeNotConfigured

REPO = Path(__file__).resolve().parents[2]


def test_gradebox_variables_win_over_openai_ones():
    cfg = JudgeConfig.from_env(
        {
            "GRADEBOX_JUDGE_BASE_URL": "http://judge.local/v1",
            "GRADEBOX_JUDGE_API_KEY": "gk",
            "GRADEBOX_JUDGE_MODEL": "m",
            "OPENAI_BASE_URL": "http://openai.local/v1",
            "OPENAI_API_KEY": "ok",
        }
    )
    assert (cfg.base_url, cfg.api_key, cfg.model) == ("http://judge.local/v1", "gk", "m")


def test_openai_variables_are_the_fallback_and_empty_counts_as_unset():
    cfg = JudgeConfig.from_env(
        {
            "GRADEBOX_JUDGE_BASE_URL": "",
            "GRADEBOX_JUDGE_MODEL": "m",
            "OPENAI_BASE_URL": "http://openai.local/v1",
            "OPENAI_API_KEY": "ok",
        }
    )
    assert (cfg.base_url, cfg.api_key) == ("http://openai.local/v1", "ok")


def test_a_key_alone_means_the_openai_api():
    cfg = JudgeConfig.from_env({"OPENAI_API_KEY": "ok", "GRADEBOX_JUDGE_MODEL": "m"})
    assert cfg.base_url == "https://api.openai.com/v1"


def test_nothing_configured_says_so_in_one_line():
    with pytest.raises(JudgeNotConfigured) as info:
        JudgeConfig.from_env({"PATH": "/usr/bin"})
    assert "\n" not in str(info.value)
    assert "GRADEBOX_JUDGE_BASE_URL" in str(info.value)


def test_endpoint_without_model_is_an_error():
    with pytest.raises(JudgeConfigError, match="GRADEBOX_JUDGE_MODEL"):
        JudgeConfig.from_env({"GRADEBOX_JUDGE_BASE_URL": "http://x/v1"})


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("base_url", "ftp://x"),
        ("model", " "),
        ("max_attempts", 0),
        ("concurrency", 0),
        ("timeout_s", 0),
        ("timeout_s", float("nan")),
        ("backoff_initial_s", -1),
    ],
)
def test_invalid_settings_are_refused(field, value):
    with pytest.raises(JudgeConfigError):
        JudgeConfig(**{"base_url": "http://x/v1", "model": "m", field: value})


def test_temperature_is_always_zero_and_the_key_is_never_shown():
    cfg = JudgeConfig(base_url="http://x/v1", model="m", api_key="sk-secret")
    assert cfg.temperature == 0.0
    assert "sk-secret" not in repr(cfg)
    with pytest.raises(TypeError):
        JudgeConfig(base_url="http://x/v1", model="m", temperature=0.7)  # type: ignore[call-arg]
    assert dataclasses.replace(cfg, seed=3).temperature == 0.0


def test_no_module_reads_the_environment():
    for package in ("judge", "rubrics"):
        for path in (REPO / package).glob("*.py"):
            tree = ast.parse(path.read_text())
            # os.environ / os.getenv, or `from os import environ`: the parameter of
            # from_env is called `environ` but is whatever mapping the caller passes.
            names = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
            names |= {
                a.name
                for n in ast.walk(tree)
                if isinstance(n, ast.ImportFrom) and n.module == "os"
                for a in n.names
            }
            assert not names & {"environ", "getenv", "environb", "getenvb"}, path


def test_process_environment_does_not_redirect_the_judge(server, make_config, item, monkeypatch):
    # The openai client reads OPENAI_* when not given values; the judge always gives them.
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-the-process-env")
    with Judge(make_config(api_key=None)) as judge:
        result = judge.judge_one(item())
    assert result.status == "scored"
    assert server.requests[0].headers["authorization"] == "Bearer no-key"


def test_layers_import_no_other_gradebox_layer():
    forbidden = {"gradebox", "sandbox", "static"}
    allowed_local = {"judge": {"judge", "rubrics"}, "rubrics": {"rubrics"}}
    for package, allowed in allowed_local.items():
        for path in (REPO / package).glob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Import):
                    roots = {a.name.split(".")[0] for a in node.names}
                elif isinstance(node, ast.ImportFrom) and node.module:
                    roots = {node.module.split(".")[0]}
                else:
                    continue
                assert not roots & forbidden, f"{path}: imports {roots & forbidden}"
                if package == "rubrics":
                    assert "judge" not in roots, f"{path}: rubrics must not import judge"
                assert roots & (allowed | forbidden) <= allowed


def test_the_request_timeout_can_be_raised_for_slow_local_servers():
    env = {"GRADEBOX_JUDGE_BASE_URL": "http://127.0.0.1:8000/v1", "GRADEBOX_JUDGE_MODEL": "m"}
    assert JudgeConfig.from_env(env).timeout_s == 60.0
    assert JudgeConfig.from_env({**env, "GRADEBOX_JUDGE_TIMEOUT_S": "600"}).timeout_s == 600.0
    for bad in ("ten", "0", "-1", "nan"):
        with pytest.raises(JudgeConfigError):
            JudgeConfig.from_env({**env, "GRADEBOX_JUDGE_TIMEOUT_S": bad})

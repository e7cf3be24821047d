"""``gradebox serve``'s options become the service's configuration, as its help says."""

from __future__ import annotations

from gradebox.cli.serve import _config, serve
from gradebox.service.config import ServiceConfig


def _parsed(*args: str) -> ServiceConfig:
    ctx = serve.make_context("serve", ["--db", "svc.sqlite", *args])
    return _config(dict(ctx.params))


def test_defaults_match_the_service_defaults():
    cfg = _parsed()
    assert cfg.workers == 2 and cfg.sync_reserved_workers == 1
    assert cfg.limits.case_timeout_s == 2.0 and cfg.limits.memory_mb == 1024
    assert cfg.static_sessions == 2


def test_every_shared_limit_and_lane_option_arrives():
    cfg = _parsed(
        "--workers", "4", "--sync-reserved-workers", "2", "--case-timeout", "0.5",
        "--candidate-timeout", "3", "--memory-mb", "256", "--no-tree-limits",
        "--static-sessions", "0",
    )  # fmt: skip
    assert (cfg.workers, cfg.sync_reserved_workers) == (4, 2)
    lim = cfg.limits
    assert (lim.case_timeout_s, lim.candidate_timeout_s, lim.memory_mb) == (0.5, 3.0, 256)
    assert lim.tree_limits is False
    assert cfg.static_sessions == 0


def test_every_option_is_described_in_help():
    undocumented = [p.name for p in serve.params if not p.hidden and not getattr(p, "help", None)]
    assert undocumented == []


def test_judge_backlog_and_log_format_arrive():
    cfg = _parsed("--judge-backlog", "7")
    assert cfg.judge_backlog == 7
    ctx = serve.make_context("serve", ["--log-format", "text"])
    assert ctx.params["log_format"] == "text"

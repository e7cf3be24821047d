"""The committed openapi.json is the app's schema.

Regenerate it with ``python -m gradebox.service openapi --out openapi.json``.
"""

from __future__ import annotations

import json
from pathlib import Path

from gradebox.service import ServiceConfig, create_app

ROOT = Path(__file__).resolve().parents[4]


def test_openapi_json_is_current():
    schema = create_app(ServiceConfig(db=Path("unused.sqlite"))).openapi()
    committed = json.loads((ROOT / "openapi.json").read_text(encoding="utf-8"))
    assert committed == json.loads(json.dumps(schema)), (
        "openapi.json is stale: run `python -m gradebox.service openapi --out openapi.json`"
    )


def test_openapi_lists_every_endpoint():
    schema = json.loads((ROOT / "openapi.json").read_text(encoding="utf-8"))
    assert set(schema["paths"]) == {
        "/healthz",
        "/readyz",
        "/metrics",
        "/v1/tasks/{task}",
        "/v1/grade",
        "/v1/grades/{grade_id}",
        "/v1/runs",
        "/v1/runs/{run_id}",
        "/v1/runs/{run_id}/results",
        "/v1/runs/{old}/diff/{new}",
        "/v1/rubrics/{name}",
        "/v1/tokens",
        "/v1/tokens/{token_id}",
        "/v1/grades/{grade_id}/feedback",
        "/v1/repos/{name}",
        "/v1/gates",
        "/v1/gates/{gate_id}",
        "/v1/runs/{run_id}/samples/{sample_id}/feedback",
        "/v1/stats",
    }
    assert "HTTPBearer" in schema["components"]["securitySchemes"]

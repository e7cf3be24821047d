"""Rubric files: the shipped ones load and keep their ids; bad ones say `file: criterion: what`."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import jsonschema
import pytest
from hypothesis import given
from hypothesis import strategies as st

import rubrics
from rubrics import RubricError

CASES = Path(__file__).parent / "cases"
BAD = CASES / "bad_rubrics"
BAD_CASES = [json.loads(line) for line in (CASES / "bad_rubrics.jsonl").read_text().splitlines()]

# Stable ids: a shipped criterion is never renumbered or dropped. Add new ids here; never edit.
SHIPPED_IDS = {
    "intent": ("INT001", "INT002", "INT003", "INT004"),
    "quality": ("QLT001", "QLT002", "QLT003", "QLT004"),
}


def test_shipped_rubrics_are_intent_quality_and_default():
    assert set(rubrics.builtin_names()) >= {"intent", "quality", "default"}


@pytest.mark.parametrize("name", ["intent", "quality"])
def test_shipped_ids_are_stable(name):
    loaded = rubrics.load(name).criterion_ids
    assert loaded[: len(SHIPPED_IDS[name])] == SHIPPED_IDS[name]


def test_default_is_intent_then_quality():
    default = rubrics.load("default")
    assert default.criterion_ids == SHIPPED_IDS["intent"] + SHIPPED_IDS["quality"]
    assert default.verdict
    assert {c.origin for c in default.criteria} == {"intent", "quality"}


def test_quality_asks_no_verdict_and_intent_does():
    assert rubrics.load("intent").verdict
    assert not rubrics.load("quality").verdict


@pytest.mark.parametrize("name", ["intent", "quality", "default"])
def test_every_criterion_is_documented_in_ruffs_shape(name):
    for c in rubrics.load(name).criteria:
        assert c.what and c.why and c.example and c.use_instead, c.id
        assert c.weight > 0


def test_shipped_schema_is_a_valid_json_schema():
    schema = json.loads((rubrics.BUILTIN_DIR / "rubric.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)


def test_load_by_path_uses_builtin_prompts(tmp_path):
    rubric = rubrics.load(BAD / "good_base.toml")
    assert rubric.criterion_ids == ("BAS001",)
    assert rubric.scale.values == (0, 1, 2, 3, 4)
    assert "$criteria" in rubric.prompt.system


def test_unknown_name_lists_builtins():
    with pytest.raises(RubricError) as info:
        rubrics.load("no-such-rubric")
    assert str(info.value) == (
        "no-such-rubric: rubric: no such rubric file; built-in: default, intent, patch, quality"
    )


def test_digest_changes_with_content_even_without_a_version_bump(tmp_path):
    shutil.copy(BAD / "good_base.toml", tmp_path / "r.toml")
    before = rubrics.load(tmp_path / "r.toml")
    text = (tmp_path / "r.toml").read_text().replace("Checks a thing.", "Checks another thing.")
    (tmp_path / "r.toml").write_text(text)
    after = rubrics.load(tmp_path / "r.toml")
    assert before.version == after.version
    assert before.digest != after.digest


@pytest.mark.parametrize("case", BAD_CASES, ids=[c["id"] for c in BAD_CASES])
def test_bad_rubric_says_file_criterion_what(case):
    with pytest.raises(RubricError) as info:
        rubrics.load(BAD / case["rubric"])
    wanted = [
        p
        for p in info.value.problems
        if p.file.endswith(case["file"]) and p.criterion == case["criterion"]
    ]
    assert wanted, f"no problem for {case['file']}: {case['criterion']} in:\n{info.value}"
    assert any(case["what"] in p.what for p in wanted), str(info.value)
    line = f"{case['file']}: {case['criterion']}: "
    assert line in str(info.value)


def test_every_bad_rubric_file_has_a_case():
    covered = {c["rubric"] for c in BAD_CASES} | {"good_base.toml", "cycle_b.toml"}
    assert {p.name for p in BAD.glob("*.toml")} == covered


def test_all_problems_reported_at_once(tmp_path):
    text = (BAD / "negative_weight.toml").read_text().replace('"Because."', '""')
    (tmp_path / "two.toml").write_text(text)
    with pytest.raises(RubricError) as info:
        rubrics.load(tmp_path / "two.toml")
    assert len(info.value.problems) >= 3  # two empty `why`s and a negative weight


@given(st.dictionaries(st.sampled_from(SHIPPED_IDS["intent"]), st.integers(1, 5), min_size=4))
def test_weighted_is_normalised_between_zero_and_one(scores):
    rubric = rubrics.load("intent")
    assert 0.0 <= rubric.weighted(scores) <= 1.0


def test_weighted_extremes():
    rubric = rubrics.load("default")
    assert rubric.weighted(dict.fromkeys(rubric.criterion_ids, 1)) == 0.0
    assert rubric.weighted(dict.fromkeys(rubric.criterion_ids, 5)) == 1.0

"""`teacher synthetic { discovery SHARE }`: declared once in the IR, lowered like `noise`,
written into plan.json only when set, so a recipe without it compiles to the plan it did."""

from __future__ import annotations

import json

import pytest
from compiler_support import ADS_TEACHER, ads_text_without_levers

from craftc.emit.compile import compile_recipe
from craftc.frontend import load_recipe

TEACHER = ADS_TEACHER


def _recipe(tmp_path, teacher: str):
    text = ads_text_without_levers()
    assert TEACHER in text
    path = tmp_path / "r.craft"
    path.write_text(text.replace(TEACHER, teacher))
    return path


@pytest.mark.parametrize("written, share", [("20%", 0.2), ("0.35", 0.35)])
def test_the_share_reaches_the_plan_as_a_fraction(tmp_path, written, share):
    teacher = f"teacher synthetic {{ candidates 4  noise 50%  discovery {written} }}"
    compiled = compile_recipe(_recipe(tmp_path, teacher))
    assert compiled.ok, compiled.load.render()
    assert json.loads(compiled.files["plan.json"])["recipe"]["teacher"]["discovery"] == share


def test_a_recipe_without_it_writes_no_discovery_key(tmp_path):
    compiled = compile_recipe(_recipe(tmp_path, TEACHER))
    assert compiled.ok and "discovery" not in json.loads(compiled.files["plan.json"])["recipe"]["teacher"]


def test_a_share_above_one_is_a_range_error_that_names_the_setting(tmp_path):
    result = load_recipe(_recipe(tmp_path, "teacher synthetic { candidates 4  discovery 150% }"))
    errors = [d for d in result.diagnostics if d.severity == "error"]
    assert len(errors) == 1 and "discovery" in errors[0].message, result.render()


def test_a_judge_backend_has_no_discovery_setting(tmp_path):
    result = load_recipe(_recipe(tmp_path, TEACHER + '\n  judge biz { kind llm  backend { kind openai  model "m"  '
                                                     'discovery 20% } }'))
    assert [d.code for d in result.diagnostics if d.severity == "error"] == ["E201"]
    assert "unknown setting `discovery`" in result.render()

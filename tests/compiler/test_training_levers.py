"""The training levers (volume, compact stripped prompt, digit-wise numbers) are recipe settings.

Each defaults to what craft did before it existed: a recipe that leaves it out compiles
to the plan it always did. A profile that turns all three on changes nothing else.
"""

from __future__ import annotations

import json

import pytest
from compiler_support import ads_text_without_levers

from craftc.diff import PlanSide, diff_sides, render_text
from craftc.emit.compile import compile_recipe
from craftc.frontend import load_recipe



LEVERS = """
  profile probe {
    stripped_prompt compact
    teacher synthetic { instances 40 }
    model tiny_moe { digits split }
  }
"""


def with_levers_profile(directory):
    """A copy of the ads recipe with one more profile, `probe`, that sets the three levers."""
    text = ads_text_without_levers()
    at = text.rindex("}")
    recipe = directory / "ads_levers.craft"
    recipe.write_text(text[:at] + LEVERS + text[at:])
    return recipe


@pytest.fixture(scope="module")
def plans(tmp_path_factory):
    recipe = with_levers_profile(tmp_path_factory.mktemp("levers"))
    out = {}
    for profile in ("default", "probe"):
        compiled = compile_recipe(recipe, profile)
        assert compiled.ok, compiled.load.render()
        out[profile] = compiled.files
    return out


def test_the_probe_profile_turns_on_the_three_levers(plans):
    recipe = json.loads(plans["probe"]["plan.json"])["recipe"]
    assert recipe["teacher"]["instances"] == 40
    assert recipe["stripped_prompt"] == "compact"
    assert [m["digits"] for m in recipe["models"]] == ["split"]


def test_the_probe_profile_changes_nothing_but_the_levers(plans):
    default, probe = (json.loads(plans[p]["plan.json"])["recipe"] for p in ("default", "probe"))
    probe["teacher"].pop("instances")
    probe.pop("stripped_prompt")
    probe["models"][0].pop("digits")
    assert {k for k in default if default[k] != probe[k]} == {"profile"}
    changed = {path for path in plans["default"].keys() | plans["probe"].keys()
               if plans["default"].get(path) != plans["probe"].get(path)}
    assert changed == {"plan.json", "prompts/system_stripped.md", "review/token_budget.json"}


def test_craftc_diff_names_each_lever_the_probe_sets(plans):
    default, probe = (PlanSide(p, json.loads(plans[p]["plan.json"]), plans[p]) for p in ("default", "probe"))
    text = render_text(diff_sides(default, probe))
    assert 'stripped_prompt "compact" (added)' in text
    assert "teacher { instances 40 (added) }" in text
    assert 'model tiny_moe { digits "split" (added) }' in text


def test_the_default_plan_does_not_mention_the_levers(plans):
    recipe = json.loads(plans["default"]["plan.json"])["recipe"]
    assert "stripped_prompt" not in recipe and "instances" not in recipe["teacher"]
    assert all("digits" not in m for m in recipe["models"])


def test_a_judge_backend_draws_no_training_instances(tmp_path):
    recipe = tmp_path / "r.craft"
    text = ads_text_without_levers().replace(
        'teacher synthetic { candidates 4  noise 50% }',
        'teacher synthetic { candidates 4  noise 50% }\n  judge biz { kind llm  backend { kind openai  '
        'model "m"  instances 3 } }')
    recipe.write_text(text)
    result = load_recipe(recipe)
    assert [d.code for d in result.diagnostics if d.severity == "error"] == ["E201"]
    assert "unknown setting `instances`" in result.render()


def test_compacted_earlier_turns_reach_the_input_builder_that_every_step_reads(tmp_path):
    text = ads_text_without_levers()
    at = text.rindex("}")
    recipe = tmp_path / "ads_compact.craft"
    recipe.write_text(text[:at] + "  profile compact {\n    earlier_turns compact\n"
                      "    stage grpo { history reference }\n  }\n" + text[at:])
    default, compact = (compile_recipe(recipe, p) for p in ("default", "compact"))
    assert default.ok and compact.ok, compact.load.render()
    builder = json.loads(compact.files["specs/input_builder.json"])
    assert builder["earlier_turns"] == "compact"
    assert json.loads(compact.files["plan.json"])["recipe"]["earlier_turns"] == "compact"
    # Left out, the plan is the one craft always compiled: no key, in either file.
    assert "earlier_turns" not in json.loads(default.files["specs/input_builder.json"])
    assert "earlier_turns" not in json.loads(default.files["plan.json"])["recipe"]


@pytest.mark.parametrize("rule", ["compact", "thinks"])
def test_a_shortened_history_with_policy_history_grpo_is_refused_with_the_fix(tmp_path, rule):
    text = ads_text_without_levers()
    at = text.rindex("}")
    recipe = tmp_path / "ads_short.craft"
    recipe.write_text(text[:at] + f"  profile short {{\n    earlier_turns {rule}\n  }}\n" + text[at:])
    result = compile_recipe(recipe, "short")
    errors = [d for d in result.load.diagnostics if d.severity == "error"]
    assert [d.code for d in errors] == ["E519"]
    assert f"`earlier_turns {rule}` needs `history reference`" in result.load.render()

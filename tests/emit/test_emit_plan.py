"""Emission writes exactly the plan dir docs/plan-dir.md describes, reproducibly and atomically."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from craftc.emit.errors import EmitError
from craftc.emit.plan import emit_plan, render_plan_files
from craftc.ir import BlockFormat, Reward
from craftc.tokens import estimate_tokens
from runtime.plan import load_plan, plan_content_hash

CONTRACT_FILES = {
    "plan.json", "prompts/system_stripped.md", "prompts/system_stuffed.md", "prompts/turn.md",
    "specs/input_builder.json", "specs/masking.json", "specs/gates.json", "specs/reward.json",
    "sql/binding.sql", "sql/logical_ddl.sql", "solutions/top_clicks/1.py", "review/token_budget.json",
    "stages/sft/trl_config.json", "stages/sft/accelerate.yaml", "stages/sft/launch.sh",
    "stages/grpo/trl_config.json", "stages/grpo/accelerate.yaml", "stages/grpo/launch.sh",
}


def tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_plan_dir_holds_exactly_the_contract_files(tmp_path, recipe, solutions):
    out = emit_plan(recipe, solutions, tmp_path / "plan")
    assert set(tree(out)) == CONTRACT_FILES


def test_plan_json_is_canonical_hashed_and_accepted_by_the_runtime(tmp_path, recipe, solutions):
    out = emit_plan(recipe, solutions, tmp_path / "plan")
    text = (out / "plan.json").read_text(encoding="utf-8")
    data = json.loads(text)
    assert text == json.dumps(data, sort_keys=True, indent=2, ensure_ascii=False) + "\n"
    assert data["content_hash"] == plan_content_hash(data)
    assert data["recipe"]["schema"]["name"] == "shop"       # by alias, not `schema_`
    files = tree(out)
    assert data["artifacts"] == {rel: hashlib.sha256(b).hexdigest() for rel, b in files.items() if rel != "plan.json"}
    plan = load_plan(out)                                      # verifies hash and every artifact
    assert plan.recipe == recipe


def test_plan_has_no_absolute_paths_or_host_details(tmp_path, recipe, solutions):
    out = emit_plan(recipe, solutions, tmp_path / "plan")
    for rel, data in tree(out).items():
        assert str(tmp_path).encode() not in data, rel
        assert str(Path.cwd()).encode() not in data, rel


def test_emission_is_byte_identical_from_two_working_dirs(tmp_path, monkeypatch, recipe, solutions):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    monkeypatch.chdir(tmp_path / "a")
    first = tree(emit_plan(recipe, solutions, "out"))
    monkeypatch.chdir(tmp_path / "b")
    second = tree(emit_plan(recipe, solutions, "out"))
    assert first == second


def test_recompiling_replaces_the_previous_plan_dir(tmp_path, recipe, solutions):
    out = tmp_path / "plan"
    emit_plan(recipe, solutions, out)
    (out / "stale.txt").write_text("from an older compile")
    emit_plan(recipe.model_copy(update={"seed": 8}), solutions, out)
    assert not (out / "stale.txt").exists()
    assert json.loads((out / "plan.json").read_text())["recipe"]["seed"] == 8
    assert [p.name for p in tmp_path.iterdir()] == ["plan"]      # no temp dirs left behind


def test_a_failed_emission_leaves_the_previous_plan_untouched(tmp_path, recipe, solutions):
    out = emit_plan(recipe, solutions, tmp_path / "plan")
    before = tree(out)
    with pytest.raises(EmitError, match="solutions/top_clicks/1.py"):
        emit_plan(recipe.model_copy(update={"seed": 9}), {}, out)
    assert tree(out) == before
    assert [p.name for p in tmp_path.iterdir()] == ["plan"]


def test_recompiling_an_unchanged_plan_leaves_its_dir_untouched(tmp_path, recipe, solutions):
    out = emit_plan(recipe, solutions, tmp_path / "plan")
    before = {p: (p.stat().st_ino, p.stat().st_mtime_ns) for p in [out, *out.rglob("*")]}
    emit_plan(recipe, solutions, out)
    assert {p: (p.stat().st_ino, p.stat().st_mtime_ns) for p in [out, *out.rglob("*")]} == before
    assert [p.name for p in tmp_path.iterdir()] == ["plan"]


@pytest.mark.parametrize("change", ["edited", "mode", "extra file", "extra dir", "missing"])
def test_a_plan_dir_that_differs_in_any_way_is_replaced_whole(tmp_path, recipe, solutions, change):
    out = emit_plan(recipe, solutions, tmp_path / "plan")
    expected = tree(out)
    if change == "edited":
        (out / "sql" / "binding.sql").write_text("-- edited by hand\n")
    elif change == "mode":
        (out / "stages" / "grpo" / "launch.sh").chmod(0o644)
    elif change == "extra file":
        (out / "prompts" / "notes.md").write_text("mine")
    elif change == "extra dir":
        (out / "scratch").mkdir()
    else:
        (out / "specs" / "gates.json").unlink()
    emit_plan(recipe, solutions, out)
    assert tree(out) == expected
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_dir()) == \
        ["prompts", "review", "solutions", "solutions/top_clicks", "specs", "sql", "stages", "stages/grpo",
         "stages/sft"]
    assert (out / "stages" / "grpo" / "launch.sh").stat().st_mode & 0o777 == 0o755


def test_a_directory_that_is_not_a_plan_is_never_replaced(tmp_path, recipe, solutions):
    precious = tmp_path / "src"
    precious.mkdir()
    (precious / "notes.txt").write_text("keep me")
    with pytest.raises(EmitError, match="not a plan dir"):
        emit_plan(recipe, solutions, precious)
    assert (precious / "notes.txt").read_text() == "keep me"


def test_prompts_use_the_recipe_tag_names_and_only_stuffed_shows_the_schema(recipe, solutions):
    custom = recipe.model_copy(update={"format": BlockFormat(think="SCRATCH", plan="STEPS", code="PY")})
    files = render_plan_files(custom, solutions)
    stripped = files["prompts/system_stripped.md"].decode()
    stuffed = files["prompts/system_stuffed.md"].decode()
    assert "<SCRATCH>" in stripped and "</STEPS>" in stripped and "<PY>" in stripped
    assert "<THINK>" not in stripped
    assert "CREATE TABLE campaign" in stuffed and "CREATE TABLE" not in stripped
    assert "api.describe(entity)" in stuffed
    assert stuffed.startswith(stripped.rstrip("\n"))     # stuffed = stripped + schema and API
    assert "Output of the PY block" in files["prompts/turn.md"].decode()


def test_both_prompts_document_the_discovery_calls_as_the_code_writes_them(recipe, solutions):
    files = render_plan_files(recipe, solutions)
    for mode in ("stripped", "stuffed"):
        prompt = files[f"prompts/system_{mode}.md"].decode()
        tools = prompt[prompt.index("# Tools"):]
        assert "- `api.list_entities()`: lists the entities" in tools, mode
        assert "- `api.describe(entity)`: one entity's fields" in tools, mode
        assert "(list_entities)" not in tools and "describe_entity" not in tools, mode


def test_a_tool_doc_from_the_recipe_replaces_the_kinds_own_and_a_renamed_tool_keeps_its_name(recipe, solutions):
    from craftc.ir import Tool

    tools = (Tool(name="run_code", kind="run_code"), Tool(name="schema", kind="describe_entity", doc="look one up"))
    prompt = render_plan_files(recipe.model_copy(update={"tools": tools}), solutions)["prompts/system_stripped.md"]
    assert "- `api.describe(entity)` (`schema`): look one up\n" in prompt.decode()


def test_the_compact_stripped_prompt_is_three_lines_and_the_stuffed_control_is_unchanged(recipe, solutions):
    full = render_plan_files(recipe, solutions)
    compact = render_plan_files(recipe.model_copy(update={"stripped_prompt": "compact"}), solutions)
    prompt = compact["prompts/system_stripped.md"].decode()
    assert prompt.splitlines() == [
        "You are a data analyst agent for the `shop` warehouse (schema version 1).",
        "Reply with <THINK>, <PLAN>, <CODE> blocks, or <ANSWER> once a result answers.",
        "Tools: the <CODE> block, `api.list_entities()`, `api.describe(entity)`.",
    ]
    assert estimate_tokens(prompt) < 100 and len(prompt.split()) < 40
    assert compact["prompts/system_stuffed.md"] == full["prompts/system_stuffed.md"]
    assert compact["prompts/turn.md"] == full["prompts/turn.md"]
    budget = json.loads(compact["review/token_budget.json"])["system"]
    assert budget["stripped"] == estimate_tokens(prompt)
    assert budget["stuffed"] == json.loads(full["review/token_budget.json"])["system"]["stuffed"]


def test_settings_left_at_their_default_are_not_written_into_plan_json(recipe, solutions):
    recipe_of = json.loads(render_plan_files(recipe, solutions)["plan.json"])["recipe"]
    assert "stripped_prompt" not in recipe_of and "instances" not in recipe_of["teacher"]
    assert "discovery" not in recipe_of["teacher"]
    assert "digits" not in recipe_of["models"][0] and "spaces" not in recipe_of["models"][0]
    set_ = recipe.model_copy(update={"stripped_prompt": "compact"})
    assert json.loads(render_plan_files(set_, solutions)["plan.json"])["recipe"]["stripped_prompt"] == "compact"


def test_reward_spec_normalises_weights_and_trl_gets_them_in_component_order(recipe, solutions):
    even = recipe.model_copy(update={"reward": Reward(outcome=2, process=1, consistency=1, judge=0)})
    files = render_plan_files(even, solutions)
    reward = json.loads(files["specs/reward.json"])
    assert reward["normalised_weights"] == {"outcome": 0.5, "process": 0.25, "consistency": 0.25, "judge": 0.0}
    assert reward["weights"]["outcome"] == 2
    grpo = json.loads(files["stages/grpo/trl_config.json"])
    assert grpo["reward_weights"] == [0.5, 0.25, 0.25, 0.0]


def test_token_budget_shows_what_stripping_saves(recipe, solutions):
    budget = json.loads(render_plan_files(recipe, solutions)["review/token_budget.json"])
    system = budget["system"]
    assert 0 < system["stripped"] < system["stuffed"]
    assert system["ratio"] == round(system["stripped"] / system["stuffed"], 4)
    workflow = budget["workflows"]["top_clicks"]
    assert workflow["first_call_stripped"] == system["stripped"] + workflow["user_turns"][0]


def test_launch_script_is_executable_and_names_the_stage_module(tmp_path, recipe, solutions):
    out = emit_plan(recipe, solutions, tmp_path / "plan")
    script = out / "stages" / "grpo" / "launch.sh"
    assert script.stat().st_mode & 0o111
    text = script.read_text()
    # CRAFT_ACCELERATE_CONFIG: a config with the layer classes of the model's config.json
    assert 'accelerate launch --config_file "${CRAFT_ACCELERATE_CONFIG:-$PLAN_DIR/stages/grpo/accelerate.yaml}"' in text
    assert "-m runtime.train.grpo" in text


def test_every_tool_kind_has_its_call_for_the_prompts():
    from craftc.emit.prompts import TOOL_CALLS
    from craftc.ir import TOOL_KINDS

    assert set(TOOL_CALLS) == set(TOOL_KINDS)

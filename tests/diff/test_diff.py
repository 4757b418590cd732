"""Plan diffs as data and as text: resources, attributes, files, impact and the plan line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from craftc.diff import PlanSide, classify_schema, diff_sides, render_json, render_markdown, render_text
from craftc.diff.renames import plan_renames
from craftc.emit.compile import compile_recipe

REPO = Path(__file__).resolve().parents[2]
HELLO = REPO / "examples" / "hello"


def side(label: str, files: dict[str, bytes]) -> PlanSide:
    return PlanSide(label, json.loads(files["plan.json"]), files)


@pytest.fixture(scope="module")
def hello_files() -> dict[str, bytes]:
    compiled = compile_recipe(HELLO / "hello.craft")
    assert compiled.ok
    return compiled.files


def compile_edited(tmp_path: Path, edit_recipe=None, edit_schema=None, edit_solution=None) -> dict[str, bytes]:
    """Compile a copy of the hello example after editing its files."""
    (tmp_path / "solutions").mkdir()
    for rel, edit in (("hello.craft", edit_recipe), ("schema.craft", edit_schema),
                      ("solutions/priciest_products.py", edit_solution)):
        text = (HELLO / rel).read_text()
        (tmp_path / rel).write_text(edit(text) if edit else text)
    compiled = compile_recipe(tmp_path / "hello.craft")
    assert compiled.ok, compiled.load.render()
    return compiled.files


def test_identical_plans_are_the_same_and_say_so(hello_files):
    diff = diff_sides(side("a", hello_files), side("b", hello_files))
    assert diff.same and diff.counts == {"add": 0, "change": 0, "remove": 0}
    text = render_text(diff)
    assert "No changes" in text and text.endswith("Plan: 0 to add, 0 to change, 0 to remove.\n")
    assert "symbols" not in text                     # no legend when nothing is shown


def test_changed_setting_is_old_to_new_with_hidden_count_and_file_diff(tmp_path, hello_files):
    after = compile_edited(tmp_path, edit_recipe=lambda t: t.replace("steps 2  group 2", "steps 9  group 2"))
    diff = diff_sides(side("a", hello_files), side("b", after))
    [stage] = diff.resources
    assert stage.address == "stage.grpo" and stage.action == "change"
    assert [(a.key, a.old, a.new) for a in stage.attributes] == [("steps", 2, 9)]
    text = render_text(diff)
    assert f"  ~ stage grpo {{ steps 2 -> 9 }}  # ({stage.unchanged} unchanged attributes hidden)\n" in text
    assert "Changes (~ change in place):" in text                          # legend: used symbols only
    # A stage config is derived from the recipe: named by default, its diff under --full.
    assert "stages/grpo/trl_config.json (+1 -1)" in text and '"max_steps"' not in text
    full = render_text(diff, full=True)
    assert "  ~ stage.grpo {\n      ~ steps: 2 -> 9\n" in full
    assert '-  "max_steps": 2,' in full and '+  "max_steps": 9,' in full
    assert text.endswith("Plan: 0 to add, 1 to change, 0 to remove.\n")


def test_added_and_removed_resources_list_their_attributes(tmp_path, hello_files):
    after = compile_edited(tmp_path, edit_recipe=lambda t: t.replace("workflow priciest_products",
                                                                     "workflow dearest_products"))
    diff = diff_sides(side("a", hello_files), side("b", after))
    actions = {(r.address, r.action) for r in diff.resources}
    assert ("workflow.dearest_products", "add") in actions
    assert ("workflow.priciest_products", "remove") in actions
    assert [(r.kind, r.old, r.new) for r in diff.renames] == \
        [("workflow", "workflow.priciest_products", "workflow.dearest_products")]
    text = render_text(diff)
    # The same questions under a new name: one rename line, not a removal and an addition.
    assert "  ~ workflow priciest_products => dearest_products {" in text
    assert "- workflow" not in text and "+ workflow" not in text
    full = render_text(diff, full=True)
    assert "  + workflow.dearest_products {" in full and "  - workflow.priciest_products {" in full
    assert "Plan: 1 to add, 0 to change, 1 to remove." in text


def test_a_schema_edit_lists_its_impact(tmp_path, hello_files):
    after = compile_edited(tmp_path, edit_schema=lambda t: t.replace('"price_cents" scale 0.01',
                                                                     '"price_micros" scale 1e-6'))
    diff = diff_sides(side("a", hello_files), side("b", after))
    [impact] = diff.impacts
    assert impact.address == "entity.Product"
    assert impact.workflows == ("priciest_products",)
    assert impact.bindings == ("view product (sql/binding.sql)",)
    assert impact.stages == ("grpo", "sft")
    assert "prompts/system_stuffed.md" in impact.prompts
    changed_files = {f.path for f in diff.files}
    assert "sql/binding.sql" in changed_files


def test_an_edited_solution_changes_its_workflow(tmp_path, hello_files):
    after = compile_edited(tmp_path, edit_solution=lambda t: t.replace("name\")", "name, id\")"))
    diff = diff_sides(side("a", hello_files), side("b", after))
    [workflow] = diff.resources
    assert workflow.address == "workflow.priciest_products"
    assert workflow.attributes[0].key == "turns.1.solution_source"
    [solution] = [f for f in diff.files if f.path.startswith("solutions/")]
    assert "+++ b/solutions/priciest_products/1.py" in solution.unified


def test_json_and_markdown_carry_the_same_facts(tmp_path, hello_files):
    after = compile_edited(tmp_path, edit_recipe=lambda t: t.replace("seed 1", "seed 2"))
    diff = diff_sides(side("a", hello_files), side("b", after))
    data = json.loads(render_json(diff))
    assert data["same"] is False and data["counts"]["change"] == 1
    assert data["resources"][0]["attributes"][0] == {"key": "seed", "action": "change", "old": 1, "new": 2}
    assert all(r["rerun"] for r in data["reruns"])          # the seed is an input of every step
    assert data["retrain"] is True and data["retrain_line"].startswith("Retrain: yes")
    markdown = render_markdown(diff)
    assert "```diff\n! recipe { seed 1 -> 2 }" in markdown
    assert "**Plan: 0 to add, 1 to change, 0 to remove.**" in markdown
    assert "- <code>! stages/sft/trl_config.json</code> (derived; `--full` shows the diff)" in markdown
    full = render_markdown(diff, full=True)
    assert "```diff\n! recipe {\n    ! seed: 1 -> 2" in full
    assert "<details><summary><code>! stages/sft/trl_config.json</code></summary>" in full


@pytest.mark.parametrize("setting, value", [("copy_bias", 3.0), ("batch", 16)])
def test_a_decoding_setting_of_eval_reruns_eval_and_report_only(tmp_path, hello_files, setting, value):
    # `copy_bias` and `batch` change how eval generates, not which instances are drawn or trained on.
    after = compile_edited(tmp_path, edit_recipe=lambda t: t.replace("instances 2 }", f"instances 2  {setting} {value:g} }}"))
    diff = diff_sides(side("a", hello_files), side("b", after))
    [block] = diff.resources
    assert [(a.key, a.old, a.new) for a in block.attributes] == [(setting, None, value)]
    data = json.loads(render_json(diff))
    assert [r["step"] for r in data["reruns"] if r["rerun"]] == ["eval", "report"]
    assert data["retrain"] is False


def _plan(entities, metrics=(), workflows=()):
    return {"recipe": {"workflows": list(workflows),
                       "schema": {"name": "s", "version": 1, "entities": list(entities), "metrics": list(metrics)}}}


def test_renamed_entities_and_metrics_are_one_breaking_rename_each():
    field = {"name": "n", "type": {"kind": "string"}, "column": "n", "doc": ""}
    entity = {"name": "Item", "table": "shop.items", "view": "item", "doc": "", "key": {"name": "id", "column": "id"},
              "fields": [field], "refs": []}
    metric = {"name": "total", "expr": "sum(Item.n)", "doc": "", "entities": ["Item"]}
    before = _plan([entity], [metric])
    after = _plan([{**entity, "name": "Product", "view": "product"}], [{**metric, "name": "grand_total"}])
    assert [(r.kind, r.old, r.new) for r in plan_renames(before, after)] == [
        ("entity", "entity.Item", "entity.Product"), ("metric", "metric.total", "metric.grand_total")]
    changes = [(c.address, c.category, c.change) for c in classify_schema(before, after, {}, {})]
    assert changes == [("entity.Item", "breaking", "entity renamed `Item` -> `Product`"),
                       ("metric.total", "breaking", "metric renamed `total` -> `grand_total`")]


def test_a_currency_is_doc_only_and_a_key_type_is_breaking(tmp_path, hello_files):
    def edit(text: str) -> str:
        text = text.replace('currency "USD"', 'currency "EUR"')
        return text.replace('key   id -> column "product_id"', 'key   id string -> column "product_id"')

    after = compile_edited(tmp_path, edit_schema=edit)
    changes = {(c.address, c.category, c.change) for c in classify_schema(
        json.loads(hello_files["plan.json"]), json.loads(after["plan.json"]), hello_files, after)}
    assert ("schema", "doc-only", 'currency "USD" -> "EUR"') in changes
    assert ("entity.Product.key", "breaking", "type int -> string") in changes

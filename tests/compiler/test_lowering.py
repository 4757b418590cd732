"""Lowering the small fixture recipe gives exactly the IR a reader would expect."""

from __future__ import annotations

from compiler_support import FIXTURES
from craftc.frontend import load_recipe, load_schema
from craftc.ir import Expectation, ModelSpec, Param


def load(profile=None):
    result = load_recipe(FIXTURES / "mini.craft", profile=profile)
    assert result.ok, result.render()
    return result


def test_schema_entities_get_views_keys_bindings_and_defaults():
    schema = load().recipe.schema_
    assert [e.name for e in schema.entities] == ["Advertiser", "Campaign", "DailyStat", "Geo"]
    stat = schema.entities[2]
    assert (stat.view, stat.table, stat.key.column) == ("daily_stat", "adw.fact_daily", "row_id")
    spend = next(f for f in stat.fields if f.name == "spend")
    assert (spend.column, spend.scale, spend.type.kind) == ("cost_micros", 1e-6, "money")
    clicks = next(f for f in stat.fields if f.name == "clicks")
    assert clicks.column == "clicks"            # column defaults to the field name
    geo = schema.entities[3]
    assert (geo.table, geo.key.column) == ("raw.geo", "id")
    assert schema.entities[1].refs[0].column == "advertiser_id"
    assert schema.entities[1].fields[3].deprecated == "use daily_budget"
    assert schema.source == "mini_schema.craft"


def test_metrics_render_over_logical_views_and_list_their_entities():
    ctr, cpc = load().recipe.schema_.metrics
    assert ctr.sql == "sum(daily_stat.clicks) / sum(daily_stat.impressions)"
    assert cpc.expr == "sum(DailyStat.spend) / (sum(DailyStat.clicks) + 1)"
    assert ctr.entities == ("DailyStat",)


def test_workflows_turns_params_and_expectations():
    top, convo = load().recipe.workflows
    assert top.kind == "workflow" and convo.kind == "conversation"
    assert len(top.turns[0].asks) == 2
    assert top.turns[0].solution == "solutions/top_ctr/1.py"
    assert [t.solution for t in convo.turns] == ["solutions/spend_drilldown/1.py",
                                                 "solutions/spend_drilldown/2.py"]
    assert convo.turns[0].asks[1] == "Spend by advertiser, last {days} days"
    n, adv, days = top.params
    # Spans differ between a lowered node and a hand-built one: compare the data.
    assert n.model_dump() == Param(name="n", kind="range", low=3, high=10, integer=True).model_dump()
    assert (adv.kind, adv.entity, adv.field) == ("column", "Advertiser", "name")
    assert days.values == (7, 14, 30)
    assert top.entities == ("Campaign", "DailyStat") and top.metrics == ("ctr",)
    assert [e.model_dump() for e in top.turns[0].expectations] == [
        Expectation(kind="same_rows_as_solution", ordered=True, tolerance=1e-6).model_dump(),
        Expectation(kind="columns", columns=("campaign", "ctr")).model_dump(),
    ]


def test_solution_sources_map_plan_paths_to_files_next_to_the_recipe():
    sources = load().solution_sources
    assert sources["solutions/top_ctr/1.py"] == (FIXTURES / "solutions/top_ctr.py").resolve()
    assert len(sources) == 3


def test_blocks_resolve_settings_with_units_and_env():
    r = load().recipe
    assert (r.seed, r.teacher.kind, r.teacher.candidates, r.teacher.noise) == (7, "synthetic", 4, 0.5)
    judge = r.judges[0]
    assert (judge.kind, judge.rubric, judge.backend.kind, judge.backend.base_url_env) == \
        ("llm", "joins follow declared links", "openai", "JUDGE_URL")
    assert r.gates.execution.timeout_s == 10.0
    assert r.gates.output.reject == ("empty", "incomplete")
    assert r.reward.aggregate == "sum" and r.reward.penalties == (("select_star", 0.1),)
    assert r.eval.holdout == 0.25 and r.eval.arms == ("craft", "sft_only")
    assert [t.kind for t in r.tools] == ["run_code", "list_entities", "describe_entity"]


def test_stages_use_declared_models_and_from_maps_to_after():
    r = load().recipe
    sft, grpo = r.stages
    assert (sft.kind, sft.base, sft.epochs, sft.per_device_batch) == ("sft", "small", 2.0, 4)
    assert (grpo.after, grpo.group, grpo.steps) == ("sft", 4, 20)
    assert [m.model_dump() for m in r.models] == [
        ModelSpec(name="small", source="tiny_moe", context=4096, hidden=128).model_dump()]
    assert r.profile == "default" and r.profiles == ("cluster",)


def test_a_profile_overrides_settings_key_by_key():
    r = load("cluster").recipe
    sft, grpo = r.stages
    assert r.seed == 11 and r.profile == "cluster"
    assert (sft.base, sft.parallel, sft.gpus, sft.nodes, sft.epochs) == \
        ("org/big-model", "zero3", 8, 2, 2.0)          # epochs kept from the base recipe
    assert (grpo.rollout, grpo.vllm_mode, grpo.group, grpo.after) == ("vllm", "server", 8, "sft")
    hub = next(m for m in r.models if m.name == "org/big-model")
    assert (hub.source, hub.path) == ("hub", "org/big-model")


def test_an_unknown_profile_lists_the_known_ones():
    result = load_recipe(FIXTURES / "mini.craft", profile="clustr")
    assert result.recipe is None
    [d] = [d for d in result.diagnostics if d.code == "E107"]
    assert "did you mean `cluster`?" in d.help and "known profiles: `cluster`" in d.help


def test_spans_are_relative_to_the_recipe_directory_and_not_serialised():
    r = load().recipe
    top = r.workflows[0]
    assert (top.span.file, top.span.line) == ("mini.craft", 6)
    assert r.schema_.entities[0].span.file == "mini_schema.craft"
    assert "span" not in r.model_dump_json()


def test_loading_is_deterministic():
    a, b = load().recipe, load().recipe
    assert a.model_dump_json() == b.model_dump_json()


def test_a_schema_loads_on_its_own():
    result = load_schema(FIXTURES / "mini_schema.craft")
    assert result.ok and result.recipe is None and len(result.schema.entities) == 4


def _mini_with_sft(tmp_path, sft_settings: str):
    tmp_path.mkdir()
    for name in ("mini_schema.craft", "solutions"):
        src = FIXTURES / name
        (tmp_path / name).symlink_to(src, target_is_directory=src.is_dir())
    text = (FIXTURES / "mini.craft").read_text().replace(
        "stage sft  { base small  epochs 2  lr 3e-4  batch 8  per_device_batch 4 }",
        f"stage sft {{ base small  epochs 2  lr 3e-4  {sft_settings} }}")
    (tmp_path / "r.craft").write_text(text)
    return load_recipe(tmp_path / "r.craft")


def test_cpu_ddp_processes_count_in_the_batch_arithmetic(tmp_path):
    ok = _mini_with_sft(tmp_path / "ok", "batch 8  per_device_batch 4  parallel ddp  gpus 0  processes 2")
    assert ok.ok, ok.render()
    assert (ok.recipe.stages[0].processes, ok.recipe.stages[1].processes) == (2, 1)
    bad = _mini_with_sft(tmp_path / "bad", "batch 12  per_device_batch 4  parallel ddp  gpus 0  processes 2")
    [d] = [d for d in bad.diagnostics if d.code == "E504"]
    assert "4 x 2 CPU process(es) x 1 node(s) = 8" in d.message

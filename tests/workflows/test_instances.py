"""Instances: deterministic params, rotating phrasings, and clean train/eval splits.

These tests use a hand-built two-entity recipe over an in-memory DuckDB so they pin the
instance rules independently of the ads recipe (test_ads_workflows.py covers that).
"""

import random

import duckdb
import pytest

from craftc.ir import (
    Entity, EntityField, EntityKey, EvalSpec, Expectation, FieldType, Param, Recipe, Schema,
    Turn, Workflow,
)
from runtime.workflows import (
    SPLITS, Instance, InstanceError, draw_instances, make_instances, render_ask, sample_params, split_instances,
)

SOLUTION = '"""Top ${n} campaigns of ${advertiser} over ${days} days."""\nresult = api.query("SELECT 1").head(${n})\n'


def _field(name, kind="string"):
    return EntityField(name=name, type=FieldType(kind=kind), column=name)


SCHEMA = Schema(
    name="mini", version=1, source="mini.craft",
    entities=(
        Entity(name="Advertiser", table="adv", view="advertiser", key=EntityKey(name="id", column="id"),
               fields=(_field("name"),)),
        Entity(name="AdGroup", table="ag", view="ad_group", key=EntityKey(name="id", column="id"),
               fields=(_field("status"),)),
    ),
)
PARAMS = (
    Param(name="n", kind="range", low=3, high=10),
    Param(name="share", kind="range", low=0.1, high=0.9, integer=False),
    Param(name="days", kind="choice", values=(7, 14, 30)),
    Param(name="advertiser", kind="column", entity="Advertiser", field="name"),
)
SINGLE = Workflow(
    name="top", kind="workflow", params=PARAMS,
    turns=(Turn(asks=("Top {n} for {advertiser}?", "Best {n} of {advertiser}", "{advertiser}: top {n}"),
                solution="top.py", expectations=(Expectation(kind="nonempty"),)),),
)
CONVERSATION = Workflow(
    name="drill", kind="conversation", params=PARAMS,
    turns=(
        Turn(asks=("Spend of {advertiser} over {days} days", "{advertiser} spend, {days} days"), solution="top.py"),
        Turn(asks=("Only the top {n}",), solution="top.py"),
        Turn(asks=("By week", "Split weekly", "Per week please"), solution="top.py"),
    ),
)


@pytest.fixture()
def con():
    connection = duckdb.connect()
    connection.execute("CREATE TABLE adv AS SELECT * FROM (VALUES ('Zed Air'), ('Acme'), (NULL), ('Bolt')) t(name)")
    connection.execute("CREATE VIEW advertiser AS SELECT name FROM adv")
    connection.execute("CREATE VIEW ad_group AS SELECT 'active' AS status")
    yield connection
    connection.close()


@pytest.fixture()
def recipe(tmp_path):
    (tmp_path / "top.py").write_text(SOLUTION)
    return Recipe(name="mini", schema=SCHEMA, workflows=(SINGLE, CONVERSATION),
                  eval=EvalSpec(holdout=0.25, holdout_phrasings=1, holdout_workflows=()))


def test_sampled_params_respect_their_sources(con):
    for seed in range(30):
        params = sample_params(SINGLE, random.Random(seed), con, SCHEMA)
        assert 3 <= params["n"] <= 10 and isinstance(params["n"], int)
        assert 0.1 <= params["share"] <= 0.9 and isinstance(params["share"], float)
        assert params["days"] in (7, 14, 30)
        assert params["advertiser"] in {"Zed Air", "Acme", "Bolt"}


def test_sampling_is_deterministic_for_a_seed(con):
    first = [sample_params(SINGLE, random.Random(seed), con, SCHEMA) for seed in range(10)]
    again = [sample_params(SINGLE, random.Random(seed), con, SCHEMA) for seed in range(10)]
    assert first == again
    assert len({str(p) for p in first}) > 5


def test_column_values_do_not_depend_on_warehouse_row_order(con):
    drawn = sample_params(SINGLE, random.Random(3), con, SCHEMA)["advertiser"]
    con.execute("CREATE OR REPLACE VIEW advertiser AS SELECT name FROM adv ORDER BY name DESC")
    assert sample_params(SINGLE, random.Random(3), con, SCHEMA)["advertiser"] == drawn


def test_entity_views_default_to_snake_case(con):
    group = Workflow(name="g", kind="workflow", turns=SINGLE.turns,
                     params=(Param(name="s", kind="column", entity="AdGroup", field="status"),))
    assert sample_params(group, random.Random(0), con) == {"s": "active"}


def test_a_column_without_values_is_a_clear_error(con):
    con.execute("CREATE OR REPLACE VIEW advertiser AS SELECT name FROM adv WHERE false")
    with pytest.raises(InstanceError, match=r"`Advertiser.name` has no non-null values"):
        sample_params(SINGLE, random.Random(0), con, SCHEMA)


def test_a_missing_column_is_a_clear_error(con):
    wrong = Workflow(name="w", kind="workflow", turns=SINGLE.turns,
                     params=(Param(name="a", kind="column", entity="Advertiser", field="nmae"),))
    with pytest.raises(InstanceError, match=r"cannot draw values for `advertiser.nmae`"):
        sample_params(wrong, random.Random(0), con, SCHEMA)


def test_asks_fill_slots_and_name_unbound_ones():
    assert render_ask("Top {n} of {who}", {"n": 3, "who": "Acme"}) == "Top 3 of Acme"
    with pytest.raises(InstanceError, match=r"slot `\{k\}` but no param"):
        render_ask("Top {k}", {"n": 3}, "top")


def test_instances_are_deterministic_and_rendered(con, recipe, tmp_path):
    one = make_instances(recipe, con, seed=7, per_workflow=9, solution_root=tmp_path)
    two = make_instances(recipe, con, seed=7, per_workflow=9, solution_root=tmp_path)
    assert [i.to_dict() for i in one] == [i.to_dict() for i in two]
    other = make_instances(recipe, con, seed=8, per_workflow=9, solution_root=tmp_path)
    assert [i.params for i in one] != [i.params for i in other]
    first = one[0]
    assert first.instance_id == "top-0000" and len(first.turns) == 1
    turn = first.turns[0]
    assert str(first.params["n"]) in turn.ask and first.params["advertiser"] in turn.ask
    assert turn.plan.startswith(f"Top {first.params['n']} campaigns of {first.params['advertiser']}")
    assert turn.code.endswith(f".head({first.params['n']!r})\n")
    assert Instance.from_dict(first.to_dict()) == first


def test_instances_of_a_workflow_do_not_depend_on_other_workflows(con, recipe, tmp_path):
    alone = recipe.model_copy(update={"workflows": (CONVERSATION,)})
    both = make_instances(recipe, con, 7, 6, tmp_path)
    only = make_instances(alone, con, 7, 6, tmp_path)
    assert [i for i in both if i.workflow == "drill"] == only


def test_phrasings_rotate_and_each_instance_is_held_out_as_a_whole(con, recipe, tmp_path):
    instances = make_instances(recipe, con, 7, 12, tmp_path)
    single = [i.turns[0].phrasing_index for i in instances if i.workflow == "top"]
    assert single == [0, 1, 2] * 4
    for instance in (i for i in instances if i.workflow == "drill"):
        held = [t.phrasing_index >= t.phrasings - min(1, t.phrasings - 1) for t in instance.turns]
        # a one-phrasing turn is never held out; the others agree with each other
        assert held[1] is False and held[0] == held[2]


def test_split_keys_and_workflow_holdout(con, recipe, tmp_path):
    instances = make_instances(recipe, con, 7, 12, tmp_path)
    spec = EvalSpec(holdout=0.25, holdout_phrasings=1, holdout_workflows=("drill",))
    splits = split_instances(instances, spec)
    assert tuple(splits) == SPLITS
    assert {i.workflow for i in splits["eval_workflows"]} == {"drill"}
    assert len(splits["eval_workflows"]) == 12
    assert sum(len(v) for v in splits.values()) == len(instances)


def test_split_holds_out_phrasings_and_unseen_params(con, recipe, tmp_path):
    instances = make_instances(recipe, con, 7, 12, tmp_path)
    splits = split_instances(instances, recipe.eval)
    for instance in splits["train"] + splits["eval_params"]:
        assert all(t.phrasing_index < t.phrasings - min(1, t.phrasings - 1) for t in instance.turns)
    assert {i.turns[0].phrasing_index for i in splits["eval_phrasings"] if i.workflow == "top"} == {2}
    train_params = {i.params_key() for i in splits["train"]}
    assert splits["eval_params"] and not train_params & {i.params_key() for i in splits["eval_params"]}
    # a quarter of the 8 trainable-phrasing instances of each workflow
    assert sum(i.workflow == "top" for i in splits["eval_params"]) == 2


def test_split_is_deterministic_and_order_preserving(con, recipe, tmp_path):
    instances = make_instances(recipe, con, 7, 12, tmp_path)
    a, b = split_instances(instances, recipe.eval), split_instances(list(instances), recipe.eval)
    assert a == b
    for part in a.values():
        positions = [instances.index(i) for i in part]
        assert positions == sorted(positions)


def test_no_held_out_phrasings_means_none_in_eval_phrasings(con, recipe, tmp_path):
    instances = make_instances(recipe, con, 7, 6, tmp_path)
    splits = split_instances(instances, EvalSpec(holdout=0.0, holdout_phrasings=0))
    assert splits["eval_phrasings"] == [] and splits["eval_params"] == []
    assert len(splits["train"]) == len(instances)


def test_a_missing_solution_file_is_a_clear_error(con, recipe, tmp_path):
    with pytest.raises(ValueError, match=r"reference solution `.*top.py` does not exist"):
        make_instances(recipe, con, 7, 1, tmp_path / "elsewhere")


# ---------------------------------------------------------------- training volume (teacher { instances N })


def _held_out(instances, split_of):
    return [(i.to_dict(), split_of[i.instance_id]) for i in instances if split_of[i.instance_id] != "train"]


def _train_per_workflow(instances, split_of):
    counts = {}
    for i in instances:
        counts[i.workflow] = counts.get(i.workflow, 0) + (split_of[i.instance_id] == "train")
    return counts


def test_the_held_out_instances_are_the_same_at_every_training_volume(con, recipe, tmp_path):
    unset = draw_instances(recipe, con, 7, 12, None, tmp_path)
    small = draw_instances(recipe, con, 7, 12, 3, tmp_path)
    large = draw_instances(recipe, con, 7, 12, 40, tmp_path)
    assert _held_out(*unset) == _held_out(*small) == _held_out(*large)
    assert {split for _, split in _held_out(*large)} == {"eval_params", "eval_phrasings"}


def test_the_training_count_per_workflow_is_what_the_setting_says(con, recipe, tmp_path):
    for volume in (3, 40):
        instances, split_of = draw_instances(recipe, con, 7, 12, volume, tmp_path)
        assert _train_per_workflow(instances, split_of) == {"top": volume, "drill": volume}
        assert len({i.instance_id for i in instances}) == len(instances) == len(split_of)


def test_without_the_setting_the_instances_and_split_are_todays(con, recipe, tmp_path):
    instances, split_of = draw_instances(recipe, con, 7, 12, None, tmp_path)
    assert instances == make_instances(recipe, con, 7, 12, tmp_path)
    assert split_of == {i.instance_id: name for name, part in split_instances(instances, recipe.eval).items()
                        for i in part}


def test_added_training_instances_ask_trainable_phrasings_and_never_held_out_params(con, recipe, tmp_path):
    instances, split_of = draw_instances(recipe, con, 7, 12, 40, tmp_path)
    train = [i for i in instances if split_of[i.instance_id] == "train"]
    held_params = {i.params_key() for i in instances if split_of[i.instance_id] == "eval_params"}
    assert held_params and not {i.params_key() for i in train} & held_params
    for instance in train:
        assert all(t.phrasing_index < t.phrasings - min(1, t.phrasings - 1) for t in instance.turns)
    # the 8 trainable-phrasing instances of a workflow give 6 train ones; the rest are new draws
    assert sum(i.workflow == "top" and int(i.instance_id[-4:]) >= 12 for i in train) == 40 - 6


def test_a_smaller_volume_trains_on_part_of_a_larger_one(con, recipe, tmp_path):
    def train_ids(volume):
        instances, split_of = draw_instances(recipe, con, 7, 12, volume, tmp_path)
        return {i.instance_id: i for i in instances if split_of[i.instance_id] == "train"}

    for smaller, larger in ((3, 20), (20, 40)):
        small, large = train_ids(smaller), train_ids(larger)
        assert set(small) < set(large)
        assert all(small[k] == large[k] for k in small)


def test_held_out_workflows_get_no_training_instances_at_any_volume(con, recipe, tmp_path):
    held = recipe.model_copy(update={"eval": EvalSpec(holdout=0.25, holdout_phrasings=1,
                                                      holdout_workflows=("drill",))})
    instances, split_of = draw_instances(held, con, 7, 12, 40, tmp_path)
    assert _train_per_workflow(instances, split_of) == {"top": 40, "drill": 0}
    assert sum(split_of[i.instance_id] == "eval_workflows" for i in instances) == 12

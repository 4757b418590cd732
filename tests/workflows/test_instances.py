"""Instances: deterministic params, rotating phrasings, and train/dev/test splits disjoint turn by turn.

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
    SPLITS, Instance, InstanceError, draw_fresh_instances, draw_instances, first_turn_reads, held_out_kind, make_instances, render_ask,
    sample_params, split_instances,
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


def _groups(instances, reads):
    from runtime.workflows.instances import _group_key

    return {(i.workflow, _group_key(i.params, reads[i.workflow])) for i in instances}


def test_split_keys_and_workflow_holdout(con, recipe, tmp_path):
    instances = make_instances(recipe, con, 7, 12, tmp_path)
    spec = EvalSpec(holdout=0.25, holdout_phrasings=1, holdout_workflows=("drill",))
    splits = split_instances(instances, spec)
    assert tuple(splits) == SPLITS == ("train", "dev", "test")
    held = splits["dev"] + splits["test"]
    assert {i.workflow for i in held if i.workflow == "drill"} == {"drill"}
    assert not [i for i in splits["train"] if i.workflow == "drill"]
    # a never-trained workflow's 12 instances go to test and dev in turn
    assert sorted(sum(i.workflow == "drill" for i in splits[s]) for s in ("dev", "test")) == [6, 6]


def test_held_out_turns_share_no_values_with_training_turns(con, recipe, tmp_path):
    instances = make_instances(recipe, con, 7, 12, tmp_path)
    reads = first_turn_reads(recipe, tmp_path)
    assert reads == {"top": ("advertiser", "days", "n"), "drill": ("advertiser", "days", "n")}
    splits = split_instances(instances, recipe.eval, 7, reads)
    for instance in splits["train"]:
        assert all(t.phrasing_index < t.phrasings - min(1, t.phrasings - 1) for t in instance.turns)
    train = _groups(splits["train"], reads)
    dev, test = _groups(splits["dev"], reads), _groups(splits["test"], reads)
    assert dev and test and not train & dev and not train & test and not dev & test
    # a held-out phrasing is kept only with values no training turn has
    phrasings = [i for i in splits["dev"] + splits["test"] if held_out_kind(i, recipe.eval) == "new_phrasing"]
    assert phrasings and not _groups(phrasings, reads) & train
    left_out = len(instances) - sum(len(part) for part in splits.values())
    assert left_out > 0        # held-out phrasings asked with trained values


def test_reserved_value_groups_are_a_share_and_move_with_the_seed(con, recipe, tmp_path):
    instances = make_instances(recipe, con, 7, 12, tmp_path)
    reads = first_turn_reads(recipe, tmp_path)
    one = split_instances(instances, recipe.eval, 7, reads)
    other = split_instances(instances, recipe.eval, 8, reads)
    assert one != other
    top = _groups([i for i in instances if i.workflow == "top"], reads)     # `share` is read by no turn
    reserved = _groups([i for i in one["dev"] + one["test"] if i.workflow == "top"], reads)
    # holdout 25% of the workflow's distinct groups, at least one, never all
    assert len(reserved) == max(1, round(0.25 * len(top)))


def test_split_is_deterministic_and_order_preserving(con, recipe, tmp_path):
    instances = make_instances(recipe, con, 7, 12, tmp_path)
    a, b = split_instances(instances, recipe.eval), split_instances(list(instances), recipe.eval)
    assert a == b
    for part in a.values():
        positions = [instances.index(i) for i in part]
        assert positions == sorted(positions)


def test_no_holdout_means_everything_trains(con, recipe, tmp_path):
    instances = make_instances(recipe, con, 7, 6, tmp_path)
    splits = split_instances(instances, EvalSpec(holdout=0.0, holdout_phrasings=0))
    assert splits["dev"] == [] and splits["test"] == []
    assert len(splits["train"]) == len(instances)


def test_instance_turns_record_what_they_read_and_what_was_asked(con, recipe, tmp_path):
    drill = next(i for i in make_instances(recipe, con, 7, 3, tmp_path) if i.workflow == "drill")
    assert [t.reads for t in drill.turns] == [("advertiser", "days", "n")] * 3
    # the first question asks for advertiser and days, the second adds n, the third nothing new
    assert [t.asked for t in drill.turns] == [("advertiser", "days"), ("advertiser", "days", "n"),
                                              ("advertiser", "days", "n")]


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
    assert {split for _, split in _held_out(*large)} == {"dev", "test"}


def test_the_training_count_per_workflow_is_what_the_setting_says(con, recipe, tmp_path):
    for volume in (3, 40):
        instances, split_of = draw_instances(recipe, con, 7, 12, volume, tmp_path)
        assert _train_per_workflow(instances, split_of) == {"top": volume, "drill": volume}
        assert len({i.instance_id for i in instances}) == len(instances) == len(split_of)


def test_without_the_setting_the_instances_and_split_are_todays(con, recipe, tmp_path):
    instances, split_of = draw_instances(recipe, con, 7, 12, None, tmp_path)
    every = make_instances(recipe, con, 7, 12, tmp_path)
    assert instances == [i for i in every if i.instance_id in split_of]
    assert split_of == {i.instance_id: name for name, part in
                        split_instances(every, recipe.eval, 7, first_turn_reads(recipe, tmp_path)).items()
                        for i in part}


def test_added_training_instances_ask_trainable_phrasings_and_never_held_out_params(con, recipe, tmp_path):
    instances, split_of = draw_instances(recipe, con, 7, 12, 40, tmp_path)
    reads = first_turn_reads(recipe, tmp_path)
    train = [i for i in instances if split_of[i.instance_id] == "train"]
    held = _groups([i for i in instances if split_of[i.instance_id] != "train"], reads)
    assert held and not _groups(train, reads) & held
    for instance in train:
        assert all(t.phrasing_index < t.phrasings - min(1, t.phrasings - 1) for t in instance.turns)
    # the first 12 draws give some train instances; the rest of the 40 are new draws
    drawn_first = sum(i.workflow == "top" and int(i.instance_id[-4:]) < 12 for i in train)
    assert 0 < drawn_first < 12
    assert sum(i.workflow == "top" and int(i.instance_id[-4:]) >= 12 for i in train) == 40 - drawn_first


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
    assert sum(split_of[i.instance_id] in ("dev", "test") for i in instances if i.workflow == "drill") == 12


def _records(instances, split_of):
    return [{**i.to_dict(), "split": split_of[i.instance_id]} for i in instances]


def test_fresh_instances_take_no_value_group_of_any_split(con, recipe, tmp_path):
    instances, split_of = draw_instances(recipe, con, 7, 12, 3, tmp_path)
    taken = _records(instances, split_of)
    fresh = draw_fresh_instances(recipe, con, 7, 4, taken, tmp_path)
    reads = first_turn_reads(recipe, tmp_path)
    assert [i.instance_id for i in fresh if i.workflow == "top"] == [f"top-rl{n:04d}" for n in range(4)]
    assert not _groups(fresh, reads) & _groups(instances, reads)
    assert len(_groups(fresh, reads)) == len(fresh) == 8          # no two fresh rows ask the same values
    for instance in fresh:                                         # trained phrasings only
        assert all(t.phrasing_index < t.phrasings - min(1, t.phrasings - 1) for t in instance.turns)
    assert fresh == draw_fresh_instances(recipe, con, 7, 4, taken, tmp_path)   # a pure function of the seed


def test_fresh_instances_stop_when_the_value_space_runs_out_and_skip_held_out_workflows(con, recipe, tmp_path):
    # `days` x `advertiser` x `n`: a workflow whose only param has three values has three groups.
    days_only = Workflow(name="top", kind="workflow", params=(PARAMS[2],),
                         turns=(Turn(asks=("Spend over {days} days", "{days}-day spend", "Last {days} days"),
                                     solution="top.py"),))
    small = recipe.model_copy(update={"workflows": (days_only, recipe.workflows[1]),
                                      "eval": EvalSpec(holdout=0.25, holdout_phrasings=1, holdout_workflows=("drill",))})
    (tmp_path / "top.py").write_text('"""Spend over ${days} days."""\nresult = api.query("SELECT ${days}")\n')
    instances, split_of = draw_instances(small, con, 7, 3, 1, tmp_path)
    fresh = draw_fresh_instances(small, con, 7, 5, _records(instances, split_of), tmp_path)
    used = {i.params["days"] for i in instances if i.workflow == "top"}
    assert {i.params["days"] for i in fresh} == {7, 14, 30} - used
    assert not [i for i in fresh if i.workflow == "drill"]


def test_rows_overlap_finds_a_planted_repeat_by_kind(con, recipe, tmp_path):
    from runtime.distill.leakage import rows_overlap

    instances, split_of = draw_instances(recipe, con, 7, 12, 3, tmp_path)
    taken = _records(instances, split_of)
    fresh = [i.to_dict() for i in draw_fresh_instances(recipe, con, 7, 2, taken, tmp_path)]
    train = [r for r in taken if r["split"] == "train"]
    assert rows_overlap(fresh, train)["overlapping_turns"] == 0
    planted = {**fresh[0], "params": train[0]["params"], "workflow": train[0]["workflow"], "turns": train[0]["turns"]}
    found = rows_overlap([planted, *fresh[1:]], train)
    assert found["overlapping_turns"] == len(train[0]["turns"])
    assert found["kinds"]["value_combination"] == len(train[0]["turns"]) and found["kinds"]["question_text"] >= 1
    assert found["first"][0]["turn"] == 1

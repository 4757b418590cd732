"""The ads recipe's 30 workflows: their shape, their references, and what they reject.

Every reference solution runs on three generated warehouses with five parameter sets
each, passes its own expectations, and mostly finds data; for every solution file a
deliberately wrong version (tests/workflows/perturbations.py) is rejected.
"""

import re
import string
from collections import defaultdict
from pathlib import Path

import pytest

from runtime.workflows import check_result, execute_code, render_solution, split_instances, split_solution
from runtime.world.api import WarehouseApi
from ads_setup import DATA_SEEDS, PARAM_SETS, RECIPE, SOLUTIONS
from perturbations import PERTURBATIONS, perturb

MIN_NONEMPTY_SHARE = 0.6   # a workflow whose question rarely finds data is a bad workflow


def _workflow_names():
    text = RECIPE.read_text()
    return re.findall(r"^  (?:workflow|conversation) (\w+) \{", text, flags=re.M)


WORKFLOWS = _workflow_names()


def _solution_stem(ads, workflow: str, turn_index: int) -> str:
    return Path(ads.solution_sources[f"solutions/{workflow}/{turn_index + 1}.py"]).stem


def test_the_recipe_has_30_workflows_and_at_least_8_conversations(ads):
    workflows = ads.recipe.workflows
    assert len(workflows) == 30 == len(WORKFLOWS)
    conversations = [w for w in workflows if w.kind == "conversation"]
    assert len(conversations) >= 8
    assert all(2 <= len(w.turns) <= 4 for w in conversations)


def test_every_turn_has_2_to_4_phrasings_and_expectations(ads):
    for workflow in ads.recipe.workflows:
        for turn in workflow.turns:
            assert 2 <= len(turn.asks) <= 4, workflow.name
            assert any(e.kind == "same_rows_as_solution" for e in turn.expectations), workflow.name


def test_params_come_from_ranges_choices_and_the_warehouse(ads):
    kinds = {p.kind for w in ads.recipe.workflows for p in w.params}
    assert kinds == {"range", "choice", "column"}


def test_every_param_is_asked_for_and_used_by_the_solutions(ads):
    for workflow in ads.recipe.workflows:
        asked = {name for turn in workflow.turns for ask in turn.asks
                 for _, name, _, _ in string.Formatter().parse(ask) if name}
        code = "".join(Path(ads.solution_sources[t.solution]).read_text() for t in workflow.turns)
        for param in workflow.params:
            assert param.name in asked, f"{workflow.name}: no question mentions {{{param.name}}}"
            assert "${" + param.name + "}" in code, f"{workflow.name}: no solution uses ${{{param.name}}}"


def test_plans_speak_business_not_schema(ads):
    schema = ads.recipe.schema_
    technical = {e.view for e in schema.entities if "_" in e.view}
    technical |= {f.name for e in schema.entities for f in e.fields if "_" in f.name}
    for path in sorted(SOLUTIONS.glob("*.py")):
        plan, _ = split_solution(path.read_text(), path.name)
        words = set(re.findall(r"\b\w+\b", re.sub(r"\$\{\w+\}", "", plan)))
        assert not words & technical, f"{path.name}: plan names {sorted(words & technical)}"
        assert not re.search(r"\b(SELECT|FROM|JOIN|WHERE|GROUP BY)\b", plan), path.name


def test_every_solution_file_is_used_and_perturbed(ads):
    used = {Path(p).name for p in ads.solution_sources.values()}
    on_disk = {p.name for p in SOLUTIONS.glob("*.py")}
    assert used == on_disk
    assert {f"{stem}.py" for stem in PERTURBATIONS} == on_disk


@pytest.mark.parametrize("workflow", WORKFLOWS)
def test_reference_passes_its_own_expectations_and_finds_data(workflow, instances, references):
    nonempty = defaultdict(int)
    runs = 0
    for seed in DATA_SEEDS:
        for instance in (i for i in instances[seed] if i.workflow == workflow):
            runs += 1
            for index, turn in enumerate(instance.turns):
                result = references[seed, instance.instance_id, index]
                previous = references[seed, instance.instance_id, index - 1] if index else None
                check = check_result(result.copy(), result, turn.expectations, instance.params, previous)
                assert check.passed, f"{instance.instance_id} turn {index + 1} {instance.params}: {check.reasons}"
                nonempty[index] += len(result) > 0
    assert runs == len(DATA_SEEDS) * PARAM_SETS
    for index, count in nonempty.items():
        assert count >= MIN_NONEMPTY_SHARE * runs, f"turn {index + 1} found data in only {count}/{runs} runs"


@pytest.mark.parametrize("workflow", WORKFLOWS)
def test_perturbed_solutions_are_rejected(workflow, ads, instances, references, warehouses):
    spec = next(w for w in ads.recipe.workflows if w.name == workflow)
    for index, turn in enumerate(spec.turns):
        stem = _solution_stem(ads, workflow, index)
        wrong_template = perturb(Path(ads.solution_sources[turn.solution]).read_text(), PERTURBATIONS[stem])
        judged = rejected = 0
        for seed in DATA_SEEDS:
            api = WarehouseApi(warehouses[seed])
            for instance in (i for i in instances[seed] if i.workflow == workflow):
                reference = references[seed, instance.instance_id, index]
                if reference.empty:
                    continue  # an empty reference cannot tell right from wrong
                _, code = render_solution(wrong_template, instance.params, stem)
                wrong = execute_code(code, api, instance.params)
                judged += 1
                rejected += not check_result(wrong, reference, turn.expectations).passed
        assert judged and rejected == judged, f"{stem}: only {rejected} of {judged} wrong results rejected"


def test_ads_instances_are_deterministic(ads, warehouses, instances):
    from runtime.workflows import make_instances

    again = make_instances(ads.recipe, warehouses[1], 1, PARAM_SETS, solution_sources=ads.solution_sources)
    assert [i.to_dict() for i in again] == [i.to_dict() for i in instances[1]]


def test_ads_split_holds_out_the_declared_workflows(ads, instances):
    from runtime.workflows import held_out_kind

    splits = split_instances(instances[1], ads.recipe.eval)
    held = set(ads.recipe.eval.holdout_workflows)
    assert held == {"audience_overlap", "channel_trend"}
    evaluated = splits["dev"] + splits["test"]
    assert {i.workflow for i in evaluated if held_out_kind(i, ads.recipe.eval) == "new_workflow"} == held
    assert not held & {i.workflow for i in splits["train"]}
    assert splits["train"] and {held_out_kind(i, ads.recipe.eval) for i in evaluated} >= {"new_values", "new_workflow"}


def test_later_turns_keep_every_param_of_earlier_turns(ads):
    """A refinement narrows or regroups; it never silently drops an earlier constraint."""
    for workflow in (w for w in ads.recipe.workflows if w.kind == "conversation"):
        previous: set[str] = set()
        for index, turn in enumerate(workflow.turns):
            code = split_solution(Path(ads.solution_sources[turn.solution]).read_text())[1]
            used = set(re.findall(r"\$\{(\w+)\}", code))
            assert previous <= used, f"{workflow.name} turn {index + 1} drops {sorted(previous - used)}"
            previous = used

"""A judge's `weight` and the judge gate's `threshold` are read only by `vote weighted`.

Under another vote a recipe that sets them is E525
(tests/compiler/malformed/gates_threshold_without_weighted_vote.craft), and plan.json
leaves them out, so no reviewer reads a share nothing compares against."""

from compiler_support import FIXTURES
from craftc.frontend import load_recipe
from craftc.ir import Gates, JudgeGate


def test_a_unanimous_gate_leaves_out_its_threshold_and_reads_it_back_as_the_default():
    written = JudgeGate().model_dump(mode="json")
    assert written["vote"] == "unanimous" and "threshold" not in written
    assert JudgeGate.model_validate(written) == JudgeGate()


def test_a_weighted_gate_holds_its_threshold():
    assert JudgeGate(vote="weighted", threshold=0.6).model_dump(mode="json")["threshold"] == 0.6


def test_judge_weights_appear_in_the_plan_only_under_a_weighted_vote():
    recipe = load_recipe(FIXTURES / "mini.craft").recipe          # an llm judge, `vote majority`
    assert recipe.gates.judge.vote == "majority"
    assert "weight" not in recipe.model_dump(mode="json", by_alias=True)["judges"][0]
    heavy = recipe.judges[0].model_copy(update={"weight": 2.0})
    weighted = recipe.model_copy(update={"judges": (heavy,), "gates": Gates(judge=JudgeGate(vote="weighted"))})
    assert weighted.model_dump(mode="json", by_alias=True)["judges"][0]["weight"] == 2.0

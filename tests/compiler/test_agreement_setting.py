"""The output gate's `agree` share is read only by the agreement vote: where no reference
is visible (`references hidden`, or a turn without a `solution`) and the gate rejects
`mismatch`. Otherwise a recipe that sets it is E526
(tests/compiler/malformed/gate_agreement_with_every_reference_visible.craft), and plan.json
leaves it out, so no reviewer reads a share that no vote compares against."""

import shutil

from compiler_support import FIXTURES
from craftc.frontend import load_recipe
from craftc.ir import Gates, OutputGate


def _recipe():
    return load_recipe(FIXTURES / "mini.craft").recipe     # every turn has a solution


def test_with_every_reference_visible_the_plan_leaves_out_the_agreement_share():
    recipe = _recipe()
    assert not recipe.reads_agreement
    assert "agree" not in recipe.model_dump(mode="json", by_alias=True)["gates"]["output"]


def test_with_references_hidden_the_plan_holds_the_share():
    hidden = _recipe().model_copy(update={"references": "hidden",
                                          "gates": Gates(output=OutputGate(reject=("empty", "mismatch"), agree=0.5))})
    assert hidden.reads_agreement
    assert hidden.model_dump(mode="json", by_alias=True)["gates"]["output"]["agree"] == 0.5


def test_without_mismatch_no_turn_is_voted_on_and_the_share_is_unread():
    hidden = _recipe().model_copy(update={"references": "hidden", "gates": Gates(output=OutputGate(reject=("empty",)))})
    assert not hidden.reads_agreement
    assert "agree" not in hidden.model_dump(mode="json", by_alias=True)["gates"]["output"]


def test_a_hidden_run_that_does_not_reject_mismatch_is_told_to(tmp_path):
    malformed = FIXTURES.parent / "malformed" / "gate_agreement_with_every_reference_visible.craft"
    shutil.copytree(FIXTURES, tmp_path / "fixtures")
    (tmp_path / "malformed").mkdir()
    text = malformed.read_text().replace("  seed 7", "  seed 7\n  references hidden")
    text = text.replace("incomplete, mismatch  agree", "incomplete  agree")
    (tmp_path / "malformed" / "bad.craft").write_text(text)
    errors = [d for d in load_recipe(tmp_path / "malformed" / "bad.craft").diagnostics if d.severity == "error"]
    assert [d.code for d in errors] == ["E526"]
    assert "add `mismatch` to the output gate's `reject`" in errors[0].help

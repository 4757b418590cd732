"""The exported model card tells a user how to build the context the model was trained on."""

import subprocess
import sys

from tests.compiler.compiler_support import ads_text_without_levers

from runtime.export import model_card
from runtime.plan import load_plan


def _card(tmp_path, profile_lines: str) -> str:
    text = ads_text_without_levers()
    at = text.rindex("}")
    recipe = tmp_path / "ads.craft"
    recipe.write_text(text[:at] + f"  profile card {{\n{profile_lines}  }}\n" + text[at:])
    plan_dir = tmp_path / "plan"
    done = subprocess.run([sys.executable, "-m", "craftc.cli", "compile", recipe, "-o", plan_dir, "--profile", "card"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    plan = load_plan(plan_dir)
    stage = next(s for s in plan.recipe.stages if s.kind == "sft")
    return model_card(plan, plan_dir, tmp_path / "no_run", stage)


def test_a_model_trained_on_compacted_earlier_turns_says_so_in_its_card(tmp_path):
    card = _card(tmp_path, "    earlier_turns compact\n    stage grpo { history reference }\n")
    assert ("each earlier turn shortened (`earlier_turns compact`): its question, the last `<CODE>` block it "
            "wrote and its `<ANSWER>`") in card
    assert "The run has no report step output" in card


def test_a_model_trained_on_earlier_thinks_says_which_block_it_saw(tmp_path):
    card = _card(tmp_path, "    earlier_turns thinks\n    stage grpo { history reference }\n")
    assert "(`earlier_turns thinks`): its question, the last `<THINK>` block it wrote" in card


def test_a_model_trained_on_whole_conversations_has_no_such_line(tmp_path):
    assert "earlier_turns" not in _card(tmp_path, "    seed 3\n")


def test_a_model_evaluated_with_a_copy_bias_says_how_to_decode_like_its_eval(tmp_path):
    card = _card(tmp_path, "    eval { copy_bias 2 }\n")
    assert "Its evaluation decoded with `eval { copy_bias 2 }`" in card and "CopyBiasProcessor" in card
    (tmp_path / "plain").mkdir()
    assert "copy_bias" not in _card(tmp_path / "plain", "    eval { copy_bias 0 }\n")

"""`profile NAME extends BASE`: a profile built on another, and `lora none` to drop a block."""

from __future__ import annotations

import pytest

from compiler_support import FIXTURES, ROOT
from craftc.fmt import format_source
from craftc.frontend import load_recipe

MINI = (FIXTURES / "mini.craft").read_text()


def recipe_with(tmp_path, profiles: str):
    """The mini fixture with ``profiles`` declared before its own `cluster` profile."""
    for name in ("mini_schema.craft", "solutions"):
        src = FIXTURES / name
        (tmp_path / name).symlink_to(src, target_is_directory=src.is_dir())
    path = tmp_path / "r.craft"
    path.write_text(MINI.replace("  profile cluster {", profiles + "\n  profile cluster {"))
    return path


CHAIN = """\
  profile wide { seed 21  stage sft { batch 16  lr 1e-4 } }
  profile wider extends wide { stage sft { batch 32 } }
  profile widest extends wider { stage sft { epochs 3 }  eval { instances 1 } }"""


def test_a_profile_applies_its_base_first_then_its_own_settings(tmp_path):
    path = recipe_with(tmp_path, CHAIN)
    widest = load_recipe(path, profile="widest")
    assert widest.ok, widest.render()
    sft = widest.recipe.stages[0]
    # seed and lr from `wide`, batch from `wider` over `wide`, epochs and eval from `widest`,
    # per_device_batch from the recipe itself.
    assert (widest.recipe.seed, sft.lr, sft.batch, sft.epochs, sft.per_device_batch) == (21, 1e-4, 32, 3.0, 4)
    assert widest.recipe.eval.instances == 1 and widest.recipe.profile == "widest"
    wider = load_recipe(path, profile="wider").recipe.stages[0]
    assert (wider.batch, wider.epochs) == (32, 2.0)


def test_a_profile_written_out_in_full_and_one_built_on_a_base_give_the_same_recipe(tmp_path):
    path = recipe_with(tmp_path, CHAIN + """
  profile widest_in_full { seed 21  stage sft { batch 32  lr 1e-4  epochs 3 }  eval { instances 1 } }""")
    built = load_recipe(path, profile="widest").recipe.model_dump(mode="json", exclude={"profile"})
    written = load_recipe(path, profile="widest_in_full").recipe.model_dump(mode="json", exclude={"profile"})
    assert built == written


def test_lora_none_drops_the_adapter_a_base_profile_declared(tmp_path):
    path = recipe_with(tmp_path, """\
  profile adapter { stage sft { lora { r 8  alpha 16 } } }
  profile every_weight extends adapter { stage sft { lr 1e-5  lora none } }""")
    assert load_recipe(path, profile="adapter").recipe.stages[0].lora.r == 8
    full = load_recipe(path, profile="every_weight")
    assert full.ok, full.render()
    assert full.recipe.stages[0].lora is None and full.recipe.stages[0].lr == 1e-5


def test_none_is_refused_for_a_block_that_has_no_none_default(tmp_path):
    path = recipe_with(tmp_path, "  profile p { reward { penalties none } }")
    codes = [d.code for d in load_recipe(path).diagnostics]
    assert "E212" in codes


@pytest.mark.parametrize("profiles, code, message", [
    ("  profile a { seed 1 }\n  profile b extends aa { seed 2 }", "E107", "unknown profile `aa`"),
    ("  profile a extends b { seed 1 }\n  profile b extends a { seed 2 }", "E119", "`a` -> `b` -> `a`"),
    ("  profile a extends a { seed 1 }", "E119", "`a` -> `a`"),
])
def test_a_base_that_is_not_declared_or_a_cycle_is_an_error(tmp_path, profiles, code, message):
    path = recipe_with(tmp_path, profiles)
    found = [d for d in load_recipe(path).diagnostics if d.code == code]
    assert len(found) == 1 and message in found[0].message, [d.message for d in found]
    # Selecting a profile of the cycle still ends (its chain stops where it would repeat).
    assert not load_recipe(path, profile="a").ok


def test_a_clash_between_a_base_and_the_profile_built_on_it_points_at_the_base_with_a_note(tmp_path):
    path = recipe_with(tmp_path, """\
  profile base_a { stage sft { batch 12 } }
  profile child_b extends base_a { stage sft { per_device_batch 5 } }""")
    [d] = [d for d in load_recipe(path).diagnostics if d.code == "E504"]
    assert d.span.line == MINI[:MINI.index("  profile cluster {")].count("\n") + 1      # base_a's line
    assert d.notes == ("with profile `child_b`, which extends `base_a`",)


def test_a_finding_of_the_base_alone_is_reported_once_without_the_note(tmp_path):
    path = recipe_with(tmp_path, """\
  profile child_b extends base_a { seed 3 }
  profile base_a { stage sft { batch 12  per_device_batch 5 } }""")
    [d] = [d for d in load_recipe(path).diagnostics if d.code == "E504"]
    assert d.notes == ()


def test_the_formatter_keeps_extends():
    text = "recipe r {\n  profile a { seed 1 }\n  profile b extends a {\n    seed 2\n  }\n}\n"
    formatted = format_source(text, "r.craft")
    assert "profile b extends a {" in formatted and format_source(formatted, "r.craft") == formatted


def test_the_ads_recipes_dev_profiles_say_only_what_they_change():
    """The pretrained dev variants extend `pretrained`: model, LoRA and GRPO come from it, but for the
    two rounds of dynamic sampling, the 2 measured rows and the 384 tokens a call they were measured
    with (`pretrained` has neither and decodes 576), and one eval process (`pretrained` decodes its
    arms in two)."""
    path = ROOT / "recipes/ads_analytics.craft"
    base = load_recipe(path, profile="pretrained").recipe
    steps = load_recipe(path, profile="pretrained_dev_steps_256").recipe
    full = load_recipe(path, profile="pretrained_dev_full_ft").recipe
    docs = load_recipe(path, profile="pretrained_dev_schema_docs").recipe
    both = load_recipe(path, profile="pretrained_dev_full_ft_docs").recipe
    assert steps.models == base.models
    assert (base.stages[1].dynamic_sampling, steps.stages[1].dynamic_sampling) == (0, 2)
    assert (base.stages[1].measure, steps.stages[1].measure, steps.stages[1].measure_every) == (0, 2, 4)
    assert (base.stages[1].max_new_tokens, steps.stages[1].max_new_tokens) == (576, 384)
    assert steps.stages[1].model_copy(update={"dynamic_sampling": 0, "measure": 0, "measure_every": 0,
                                              "max_new_tokens": 576}) == base.stages[1]
    assert (base.eval.processes, steps.eval.processes) == (2, 1)
    assert (steps.stages[0].steps, steps.eval.split, steps.eval.arms) == (256, "dev", ("craft", "sft_only"))
    assert steps.stages[0].lora == base.stages[0].lora is not None
    assert (full.stages[0].lora, full.stages[0].lr, full.stages[0].steps) == (None, 1e-4, 256)
    assert (docs.stages[0].schema_docs, docs.stages[0].lora) == (4.0, base.stages[0].lora)
    assert (both.stages[0].schema_docs, both.stages[0].lora, both.stages[0].lr) == (4.0, None, 1e-4)

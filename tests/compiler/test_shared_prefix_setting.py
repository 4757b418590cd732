"""`stage grpo { shared_prefix on }`: each group's prompt runs once in GRPO's log-prob forwards.

At its default (`off`) plan.json carries no `shared_prefix` key, so plans written before the
setting keep their bytes. E531, W532 and E516 (under `engine verl`) are checked in
tests/compiler/malformed/stages_shared_prefix_*.craft; that it reaches the trainer in
tests/grpo/test_grpo_shared_prefix.py.
"""

from __future__ import annotations

import json

from compiler_support import FIXTURES, MALFORMED
from craftc.emit.compile import compile_recipe
from craftc.frontend import load_recipe

GRPO = "  stage grpo { from sft  base small  group 4  steps 20  batch 8  per_device_batch 4  rollout transformers }"


def mini_with(tmp_path, grpo_line: str):
    text = (FIXTURES / "mini.craft").read_text()
    assert GRPO in text
    text = text.replace(GRPO, grpo_line).replace('"mini_schema.craft"', f'"{FIXTURES}/mini_schema.craft"')
    path = tmp_path / "mini.craft"
    path.write_text(text.replace('"solutions/', f'"{FIXTURES}/solutions/'))
    return path


def grpo_stage(compiled) -> dict:
    return next(s for s in json.loads(compiled.files["plan.json"])["recipe"]["stages"] if s["kind"] == "grpo")


def test_shared_prefix_on_is_in_plan_json_and_off_is_not(tmp_path):
    on = compile_recipe(mini_with(tmp_path, GRPO.replace(" }", "  shared_prefix on }")))
    assert on.ok, on.load.render()
    assert grpo_stage(on)["shared_prefix"] == "on"
    for line in (GRPO, GRPO.replace(" }", "  shared_prefix off }")):
        off = compile_recipe(mini_with(tmp_path, line))
        assert off.ok, off.load.render()
        assert "shared_prefix" not in grpo_stage(off)


def test_a_verl_stage_may_write_shared_prefix_off(tmp_path):
    # `off` is how a verl profile turns off what its trl base stage turned on; `on` is E516's
    # (malformed/stages_shared_prefix_under_verl.craft).
    text = (MALFORMED / "stages_shared_prefix_under_verl.craft").read_text()
    assert "shared_prefix on }" in text
    path = tmp_path / "verl.craft"
    path.write_text(text.replace("shared_prefix on }", "shared_prefix off }").replace('"../fixtures/', f'"{FIXTURES}/'))
    off = load_recipe(path)
    assert off.recipe is not None and not off.diagnostics, off.render()


def test_a_bad_value_names_the_choices(tmp_path):
    result = load_recipe(mini_with(tmp_path, GRPO.replace(" }", "  shared_prefix yes }")))
    assert result.recipe is None and "shared_prefix" in result.render() and "on" in result.render(), result.render()

"""`stage NAME { checkpoint_every 2m }` in the plan; the trainers' side is tests/train/test_timed_checkpoints.py."""

from __future__ import annotations

import json

from craftc.emit.compile import compile_recipe
from craftc.ir import SFTStage
from test_sampler_setting import SFT, mini_with


def test_the_setting_compiles_into_the_plan_only_when_it_is_not_the_default(tmp_path):
    (tmp_path / "set").mkdir()
    (tmp_path / "default").mkdir()
    set_ = compile_recipe(mini_with(tmp_path / "set", SFT.replace(" }", "  checkpoint_every 2m }")))
    default = compile_recipe(mini_with(tmp_path / "default", SFT))
    assert set_.ok and default.ok, set_.load.render() + default.load.render()
    assert json.loads(set_.files["plan.json"])["recipe"]["stages"][0]["checkpoint_every_s"] == 120.0
    assert "checkpoint_every_s" not in json.loads(default.files["plan.json"])["recipe"]["stages"][0]
    assert SFTStage.model_fields["checkpoint_every_s"].default == 600.0

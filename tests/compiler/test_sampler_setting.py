"""`stage sft { sampler by_prefix }`: batches drawn by prefix, each running its shared prefix once.

The setting compiles to `stages/<stage>/batches.json`, which the trainer reads; at its
default (`random`) the plan has no such file and plan.json no `sampler` key, so plans
written before the setting keep their bytes. E529 and W530 are checked in
tests/compiler/malformed/stages_by_prefix_*.craft; the gpt-oss case and the grpo stage here.
"""

from __future__ import annotations

import json

from compiler_support import FIXTURES
from craftc.emit.compile import compile_recipe
from craftc.frontend import load_recipe

SFT = "  stage sft  { base small  epochs 2  lr 3e-4  batch 8  per_device_batch 4 }"


def mini_with(tmp_path, sft_line: str, models: str = ""):
    text = (FIXTURES / "mini.craft").read_text()
    assert SFT in text
    text = text.replace(SFT, sft_line + models).replace('"mini_schema.craft"', f'"{FIXTURES}/mini_schema.craft"')
    text = text.replace('"solutions/', f'"{FIXTURES}/solutions/')
    path = tmp_path / "mini.craft"
    path.write_text(text)
    return path


def test_by_prefix_compiles_to_batches_json_and_plan_json(tmp_path):
    compiled = compile_recipe(mini_with(tmp_path, SFT.replace(" }", "  sampler by_prefix }")))
    assert compiled.ok, compiled.load.render()
    assert json.loads(compiled.files["stages/sft/batches.json"]) == {"sampler": "by_prefix"}
    stage = json.loads(compiled.files["plan.json"])["recipe"]["stages"][0]
    assert stage["sampler"] == "by_prefix"
    assert "stages/sft/batches.json" in json.loads(compiled.files["plan.json"])["artifacts"]


def test_the_default_sampler_writes_no_file_and_no_key(tmp_path):
    compiled = compile_recipe(mini_with(tmp_path, SFT))
    assert compiled.ok, compiled.load.render()
    assert not any(name.endswith("batches.json") for name in compiled.files)
    assert "sampler" not in json.loads(compiled.files["plan.json"])["recipe"]["stages"][0]


def test_a_gpt_oss_base_is_refused_at_the_setting(tmp_path):
    line = '  model gpt_oss { source hub  path "openai/gpt-oss-20b"  context 8192 }\n'
    path = mini_with(tmp_path, SFT.replace("base small", "base gpt_oss").replace(" }", "  sampler by_prefix }\n"),
                     line)
    result = load_recipe(path)
    found = [d for d in result.diagnostics if d.code == "E529"]
    assert found and "sliding windows and sinks" in found[0].message, result.render()
    assert found[0].span.line == (FIXTURES / "mini.craft").read_text().splitlines().index(SFT) + 1


def test_a_grpo_stage_has_no_sampler(tmp_path):
    grpo = "  stage grpo { from sft  base small  group 4  steps 20  batch 8  per_device_batch 4  rollout transformers }"
    path = mini_with(tmp_path, SFT)
    path.write_text(path.read_text().replace(grpo, grpo.replace(" }", "  sampler by_prefix }")))
    result = load_recipe(path)
    assert result.recipe is None and "[E213]" in result.render() and "`sampler`" in result.render(), result.render()

"""`stage sft { schema_docs N }` in the trainer: N passes over the schema's documentation first.

The examples are the plan's (tests/compiler/test_schema_docs_setting.py); here, that the trainer
runs them before the rest of SFT, in their own checkpoint dir, and says so in its summary.
"""

from __future__ import annotations

import json

from runtime.train.masking import ASSISTANT_ONLY
from runtime.train.schema_docs import SCHEMA_DOCS_DIR
from runtime.train.sft import train_sft
from test_sft import SHORT

DOCS = {"passes": 2.0, "examples": [
    {"messages": [{"role": "user", "content": f"What does the `{view}` view hold?"},
                  {"role": "assistant", "content": f"CREATE TABLE {view} (\n  id BIGINT PRIMARY KEY  -- unique id\n);"}]}
    for view in ("campaign", "ad_group", "keyword")]}


def test_the_schema_docs_pass_trains_first_in_its_own_dir(tiny_model_dir, dataset_dir, tmp_path):
    summary = train_sft(tiny_model_dir, dataset_dir, tmp_path, {**SHORT, "max_steps": 2, "save_steps": 100},
                        ASSISTANT_ONLY, schema_docs=DOCS)
    docs = summary["schema_docs"]
    # 3 examples in batches of 4: one step a pass, two passes.
    assert docs["examples"] == 3 and docs["passes"] == 2.0 and docs["steps"] == 2
    assert docs["num_tokens"] > 0 and docs["first_loss"] is not None
    assert summary["steps"] == 2                            # the main phase counts its own steps
    assert (tmp_path / SCHEMA_DOCS_DIR).is_dir() and (tmp_path / "final" / "config.json").is_file()
    assert json.loads((tmp_path / "sft_summary.json").read_text())["schema_docs"]["steps"] == 2


def test_without_the_setting_no_pass_runs(tiny_model_dir, dataset_dir, tmp_path):
    summary = train_sft(tiny_model_dir, dataset_dir, tmp_path, {**SHORT, "max_steps": 1, "save_steps": 100},
                        ASSISTANT_ONLY)
    assert summary["schema_docs"] is None and not (tmp_path / SCHEMA_DOCS_DIR).exists()


def test_the_launched_trainer_reads_the_plans_file_and_refuses_a_corrupt_one(tiny_model_dir, dataset_dir, tmp_path,
                                                                           capsys):
    from runtime.train.sft import main

    plan = tmp_path / "plan"
    (plan / "stages" / "sft").mkdir(parents=True)
    (plan / "specs").mkdir()
    (plan / "stages" / "sft" / "trl_config.json").write_text(json.dumps({**SHORT, "max_steps": 1, "save_steps": 100}))
    (plan / "specs" / "masking.json").write_text(json.dumps({"stages": {"sft": {"roles": ASSISTANT_ONLY}}}))
    (plan / "stages" / "sft" / "schema_docs.json").write_text(json.dumps({**DOCS, "passes": 1.0}))
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"model_dir": str(tiny_model_dir), "dataset_dir": str(dataset_dir),
                                  "out_dir": str(tmp_path / "out"), "trl_overrides": {}}))
    args = ["--plan-dir", str(plan), "--stage", "sft", "--config", str(config)]
    assert main(args) == 0
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["schema_docs"]["steps"] == 1
    (plan / "stages" / "sft" / "schema_docs.json").write_text('{"passes": 1}')
    assert main(args) == 1
    assert "is not a schema-docs file craftc wrote" in capsys.readouterr().err

"""Stage I SFT: settings from the plan, masking proven before training, a real short run."""

from __future__ import annotations

import json
import shutil

import pytest

from runtime.train.masking import MaskingError, attribute_tokens
from runtime.train.sft import SFTSetupError, main, sft_config_from_plan, train_sft, validate_stage

# A short run that still moves the loss: 12 steps of 4 conversations at a high lr.
SHORT = {"epochs": 1, "max_steps": 12, "lr": 3e-3, "per_device_batch": 4, "logging_steps": 2,
         "save_steps": 6, "max_length": 1024, "seed": 0}


@pytest.fixture(scope="module")
def short_run(tiny_model_dir, dataset_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("sft")
    return out, train_sft(tiny_model_dir, dataset_dir, out, SHORT)


def test_plan_settings_map_onto_a_cpu_sft_config(tmp_path):
    args = sft_config_from_plan({"epochs": 2, "lr": 1e-3, "per_device_batch": 3, "grad_accum": 2,
                                 "max_length": 256, "seed": 5, "logging_steps": 7, "save_steps": 9,
                                 "parallel": "cpu", "mask": "tool_outputs"}, tmp_path)
    assert (args.num_train_epochs, args.learning_rate, args.per_device_train_batch_size) == (2, 1e-3, 3)
    assert (args.gradient_accumulation_steps, args.max_length, args.seed) == (2, 256, 5)
    assert (args.logging_steps, args.save_steps) == (7, 9)
    assert args.assistant_only_loss is True
    assert (args.use_cpu, args.bf16, args.gradient_checkpointing) == (True, False, False)


def test_bad_stage_settings_are_all_reported():
    with pytest.raises(SFTSetupError) as err:
        validate_stage({"epochs": 0, "lr": 5, "batch": 8})
    msg = str(err.value)
    assert "unknown stage key `batch`" in msg and "`epochs` must be" in msg and "`lr` must be" in msg


def test_trl_labels_are_exactly_the_masked_report(tiny_model_dir, dataset_dir, tokenizer, tmp_path):
    """The mask report describes what TRL really trains on, token for token."""
    from datasets import load_from_disk
    from transformers import AutoModelForCausalLM
    from trl import SFTTrainer

    ds = load_from_disk(str(dataset_dir))
    trainer = SFTTrainer(model=AutoModelForCausalLM.from_pretrained(tiny_model_dir), processing_class=tokenizer,
                         args=sft_config_from_plan(SHORT, tmp_path), train_dataset=ds.select_columns(["messages"]))
    assert len(trainer.train_dataset) == len(ds)
    for i in (0, 1, 3):
        row = trainer.train_dataset[i]
        tokens = attribute_tokens(tokenizer, ds[i]["messages"])
        assert row["input_ids"] == [t["id"] for t in tokens]
        assert [lab != -100 for lab in row["labels"]] == [t["trained"] for t in tokens]


def test_short_run_lowers_the_loss_and_writes_every_artifact(short_run):
    out, summary = short_run
    assert summary["steps"] == 12 and summary["world_size"] == 1
    assert summary["last_loss"] < summary["first_loss"] - 0.5, summary
    history = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [h["step"] for h in history if "loss" in h] == [2, 4, 6, 8, 10, 12]
    assert (out / "loss.png").read_bytes()[:4] == b"\x89PNG"
    assert json.loads((out / "sft_summary.json").read_text()) == summary
    report = json.loads((out / "mask_report.json").read_text())
    assert report["per_role"]["tool"]["trainable"] == 0 and (out / "mask_report.md").is_file()


def test_final_model_reloads_and_generates(short_run):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    final = short_run[0] / "final"
    tok = AutoTokenizer.from_pretrained(final)
    model = AutoModelForCausalLM.from_pretrained(final)
    prompt = tok.apply_chat_template([{"role": "user", "content": "Which 3 campaigns?"}],
                                     add_generation_prompt=True, return_tensors="pt", return_dict=True)
    out = model.generate(**prompt, max_new_tokens=5, do_sample=False)
    assert out.shape[1] > prompt["input_ids"].shape[1]
    assert not (short_run[0] / ".final.tmp").exists()


def test_a_second_run_resumes_from_the_last_checkpoint(short_run, tiny_model_dir, dataset_dir):
    out, _ = short_run
    summary = train_sft(tiny_model_dir, dataset_dir, out, {**SHORT, "max_steps": 14})
    assert summary["resumed_from"] == "checkpoint-12"
    assert summary["steps"] == 14


def test_wrong_template_fails_before_any_training(tiny_model_dir, dataset_dir, tmp_path):
    from test_masking import TOOL_INSIDE_GENERATION

    bad_model = shutil.copytree(tiny_model_dir, tmp_path / "bad_model")
    (bad_model / "chat_template.jinja").write_text(TOOL_INSIDE_GENERATION)
    out = tmp_path / "out"
    with pytest.raises(MaskingError, match=r"\(tool\)"):
        train_sft(bad_model, dataset_dir, out, SHORT)
    assert (out / "mask_report.md").is_file()  # the evidence stays for the user
    assert not list(out.glob("checkpoint-*")) and not (out / "final").exists()


def test_missing_inputs_are_named_with_the_fix(tmp_path, dataset_dir):
    with pytest.raises(SFTSetupError) as err:
        train_sft(tmp_path / "no_model", tmp_path / "no_data", tmp_path / "out", SHORT)
    msg = str(err.value)
    assert "no_model" in msg and "config.json" in msg and "no_data" in msg and "`dataset` step" in msg
    assert not (tmp_path / "out").exists()


def test_cli_reports_bad_config_without_a_traceback(tmp_path, capsys):
    assert main(["--config", str(tmp_path / "missing.json")]) == 1
    assert "missing.json` does not exist" in capsys.readouterr().err
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"model_dir": "m", "stage": {}}))
    assert main(["--config", str(bad)]) == 1
    assert "missing: dataset_dir, out_dir" in capsys.readouterr().err


def test_a_template_without_generation_markers_is_refused_up_front(tiny_model_dir, dataset_dir, tmp_path):
    from runtime.train.tiny_moe import CHAT_TEMPLATE

    bare = CHAT_TEMPLATE.replace("{%- generation %}", "").replace("{%- endgeneration %}", "")
    model = shutil.copytree(tiny_model_dir, tmp_path / "bare_model")
    (model / "chat_template.jinja").write_text(bare)
    with pytest.raises(SFTSetupError, match="no {% generation %} markers"):
        train_sft(model, dataset_dir, tmp_path / "out", SHORT)

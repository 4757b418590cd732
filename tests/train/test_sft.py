"""Stage I SFT: settings from the plan, masking proven before training, a real short run."""

from __future__ import annotations

import json
import shutil

import pytest

from runtime.train.masking import ASSISTANT_ONLY, MaskingError, apply_roles, attribute_tokens
from runtime.train.sft import SFTSetupError, main, sft_config, tokenized_dataset, train_sft
from train_support import craft_head_calls

# A short run that still moves the loss: 12 steps of 4 conversations at a high lr, with
# the CPU settings `craftc compile` writes into a stage's trl_config.json.
SHORT = {"num_train_epochs": 1.0, "max_steps": 12, "learning_rate": 3e-3, "per_device_train_batch_size": 4,
         "gradient_accumulation_steps": 1, "logging_steps": 2, "save_strategy": "steps", "save_steps": 6,
         "save_total_limit": 2, "max_length": 1024, "seed": 0, "data_seed": 0, "use_cpu": True, "bf16": False,
         "fp16": False, "activation_checkpointing": False, "report_to": "none", "dataloader_num_workers": 0,
         "disable_tqdm": True, "warmup_steps": 0.0}


@pytest.fixture(scope="module")
def short_run(tiny_model_dir, dataset_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("sft")
    with craft_head_calls() as head_calls:
        summary = train_sft(tiny_model_dir, dataset_dir, out, SHORT, ASSISTANT_ONLY)
    return out, summary, head_calls


def test_the_plans_trl_config_becomes_the_sft_config_unchanged(tmp_path):
    args = sft_config(SHORT, tmp_path, {"max_steps": 30})
    assert (args.num_train_epochs, args.learning_rate, args.per_device_train_batch_size) == (1, 3e-3, 4)
    assert (args.max_steps, args.max_length, args.save_total_limit) == (30, 1024, 2)   # the step's override
    assert (args.use_cpu, args.bf16, args.gradient_checkpointing) == (True, False, False)
    assert args.assistant_only_loss is False      # craft builds the labels from the masking spec


def test_a_key_this_trl_does_not_know_is_a_setup_error(tmp_path):
    with pytest.raises(SFTSetupError, match="does not fit this TRL version.*not_a_trl_key"):
        sft_config({**SHORT, "not_a_trl_key": 1}, tmp_path)


def test_labels_follow_the_masking_spec_token_for_token(dataset_dir, tokenizer):
    """What trains is what the mask report shows: labels come from the role policy."""
    from datasets import load_from_disk

    ds = load_from_disk(str(dataset_dir))
    user_trained = {**ASSISTANT_ONLY, "user": "trained"}
    for roles in (ASSISTANT_ONLY, user_trained):
        rows = tokenized_dataset(tokenizer, ds.select(range(4)), roles)
        for i in range(4):
            tokens = apply_roles(attribute_tokens(tokenizer, ds[i]["messages"]), roles)
            assert rows[i]["input_ids"] == [t["id"] for t in tokens]
            assert [lab != -100 for lab in rows[i]["labels"]] == [t["trained"] for t in tokens]
            trained_roles = {t["role"] for t in tokens if t["trained"]}
            assert trained_roles == ({"assistant", "user"} if roles is user_trained else {"assistant"})


def test_trl_trains_on_exactly_the_labels_craft_built(tiny_model_dir, dataset_dir, tokenizer, tmp_path):
    from datasets import load_from_disk
    from transformers import AutoModelForCausalLM
    from trl import SFTTrainer

    ds = tokenized_dataset(tokenizer, load_from_disk(str(dataset_dir)), ASSISTANT_ONLY)
    trainer = SFTTrainer(model=AutoModelForCausalLM.from_pretrained(tiny_model_dir), processing_class=tokenizer,
                         args=sft_config(SHORT, tmp_path), train_dataset=ds)
    assert len(trainer.train_dataset) == len(ds)
    for i in (0, 1, 3):
        assert trainer.train_dataset[i]["labels"] == ds[i]["labels"]


def test_short_run_lowers_the_loss_and_writes_every_artifact(short_run):
    out, summary, _ = short_run
    assert summary["steps"] == 12 and summary["world_size"] == 1
    assert summary["last_loss"] < summary["first_loss"] - 0.5, summary
    history = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [h["step"] for h in history if "loss" in h] == [2, 4, 6, 8, 10, 12]
    assert (out / "loss.png").read_bytes()[:4] == b"\x89PNG"
    assert json.loads((out / "sft_summary.json").read_text()) == summary
    report = json.loads((out / "mask_report.json").read_text())
    assert report["per_role"]["tool"]["trainable"] == 0 and (out / "mask_report.md").is_file()


def test_every_training_step_scores_through_crafts_cpu_head(short_run):
    # runtime.train.loss_head: on CPU the trainer's loss comes from the head that projects
    # only trained positions, once per step (12 steps of one batch each), never TRL's.
    _, summary, head_calls = short_run
    assert head_calls == ["craft"] * summary["steps"]


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
    out, _, _ = short_run
    summary = train_sft(tiny_model_dir, dataset_dir, out, {**SHORT, "max_steps": 14}, ASSISTANT_ONLY)
    assert summary["resumed_from"] == "checkpoint-12"
    assert summary["steps"] == 14


def test_wrong_template_fails_before_any_training(tiny_model_dir, dataset_dir, tmp_path):
    from test_masking import TOOL_INSIDE_GENERATION

    bad_model = shutil.copytree(tiny_model_dir, tmp_path / "bad_model")
    (bad_model / "chat_template.jinja").write_text(TOOL_INSIDE_GENERATION)
    out = tmp_path / "out"
    with pytest.raises(MaskingError, match=r"\(tool\)"):
        train_sft(bad_model, dataset_dir, out, SHORT, ASSISTANT_ONLY)
    assert (out / "mask_report.md").is_file()  # the evidence stays for the user
    assert not list(out.glob("checkpoint-*")) and not (out / "final").exists()


def test_a_masking_spec_that_trains_tool_output_fails_before_any_training(tiny_model_dir, dataset_dir, tmp_path):
    out = tmp_path / "out"
    with pytest.raises(MaskingError, match=r"\(tool\)"):
        train_sft(tiny_model_dir, dataset_dir, out, SHORT, {**ASSISTANT_ONLY, "tool": "trained"})
    report = json.loads((out / "mask_report.json").read_text())
    assert report["per_role"]["tool"]["trainable"] > 0 and report["roles"]["tool"] == "trained"
    assert (out / "mask_report.md").is_file()  # the evidence stays for the user
    assert not list(out.glob("checkpoint-*")) and not (out / "final").exists()


def test_missing_inputs_are_named_with_the_fix(tmp_path, dataset_dir):
    with pytest.raises(SFTSetupError) as err:
        train_sft(tmp_path / "no_model", tmp_path / "no_data", tmp_path / "out", SHORT, ASSISTANT_ONLY)
    msg = str(err.value)
    assert "no_model" in msg and "config.json" in msg and "no_data" in msg and "`dataset` step" in msg
    assert not (tmp_path / "out").exists()


def test_cli_reports_bad_config_without_a_traceback(tmp_path, capsys):
    plan = tmp_path / "plan"
    (plan / "stages" / "sft").mkdir(parents=True)
    (plan / "specs").mkdir()
    (plan / "stages" / "sft" / "trl_config.json").write_text(json.dumps(SHORT))
    (plan / "specs" / "masking.json").write_text(json.dumps({"stages": {"sft": {"roles": ASSISTANT_ONLY}}}))
    args = ["--plan-dir", str(plan), "--stage", "sft", "--config"]
    assert main(args + [str(tmp_path / "missing.json")]) == 1
    assert "missing.json` does not exist" in capsys.readouterr().err
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"model_dir": "m", "stage": {}}))
    assert main(args + [str(bad)]) == 1
    assert "missing: dataset_dir, out_dir, trl_overrides; unknown: stage" in capsys.readouterr().err
    assert main(["--plan-dir", str(tmp_path / "nowhere"), "--stage", "sft", "--config", str(bad)]) == 1
    assert "has no readable stage `sft`" in capsys.readouterr().err


def test_a_template_without_generation_markers_is_refused_up_front(tiny_model_dir, dataset_dir, tmp_path):
    from runtime.train.tiny_moe import CHAT_TEMPLATE

    bare = CHAT_TEMPLATE.replace("{%- generation %}", "").replace("{%- endgeneration %}", "")
    model = shutil.copytree(tiny_model_dir, tmp_path / "bare_model")
    (model / "chat_template.jinja").write_text(bare)
    with pytest.raises(SFTSetupError, match="no {% generation %} markers"):
        train_sft(model, dataset_dir, tmp_path / "out", SHORT, ASSISTANT_ONLY)


def test_a_run_that_stops_before_one_pass_tokenizes_only_the_rows_it_reaches(tmp_path):
    """The stuffed arm's token budget ends its pass early: the rest of its rows are never tokenized."""
    from datasets import Dataset

    from runtime.train.sft import examples_reached

    rows = Dataset.from_dict({"n": list(range(100))})
    args = sft_config(SHORT, tmp_path, {"max_steps": 3, "gradient_accumulation_steps": 2})     # 3 x 4 x 2 rows
    reached = examples_reached(rows, args)
    assert len(reached) == 24 and len(set(reached["n"])) == 24
    assert reached["n"] == examples_reached(rows, args)["n"]                      # a seeded draw
    assert reached["n"] != list(range(24))                                        # not the first rows
    assert examples_reached(rows, sft_config(SHORT, tmp_path, {"max_steps": 30})) is rows     # 120 >= 100
    assert examples_reached(rows, sft_config(SHORT, tmp_path, {"max_steps": -1})) is rows     # whole epochs


def test_a_short_run_records_its_threads(short_run):
    _, summary, _ = short_run
    assert summary["cpu_threads"] >= 1
    assert summary["cpu_threads_changes"] == []         # launched alone: no other arm frees a core


# What `craftc compile` writes for `lora { r 4  alpha 8  dropout 0  targets q_proj, v_proj }`.
LORA = {"r": 4, "lora_alpha": 8.0, "lora_dropout": 0.0, "target_modules": ["q_proj", "v_proj"],
        "target_parameters": [], "bias": "none", "task_type": "CAUSAL_LM"}


@pytest.mark.parametrize("peft", [None, LORA], ids=["full", "lora"])
def test_checkpointing_recomputes_the_same_losses(tiny_model_dir, dataset_dir, tmp_path, peft, monkeypatch):
    """`checkpointing on` trades time for memory only: the losses and gradients are the ones
    the stage computes keeping its activations (a LoRA adapter's too, whose frozen inputs
    need gradients for the recomputed layers to reach it)."""
    import transformers.modeling_utils as modeling_utils

    recomputed = []     # transformers' checkpoint calls: one per decoder layer and forward pass
    real_checkpoint = modeling_utils.checkpoint
    monkeypatch.setattr(modeling_utils, "checkpoint",
                        lambda *args, **kwargs: recomputed.append(1) or real_checkpoint(*args, **kwargs))
    runs, calls = {}, {}
    for on in (False, True):
        trl = {**SHORT, "max_steps": 3, "logging_steps": 1, "save_strategy": "no", "activation_checkpointing": on}
        out = tmp_path / f"checkpointing-{on}"
        recomputed.clear()
        train_sft(tiny_model_dir, dataset_dir, out, trl, ASSISTANT_ONLY, peft_kwargs=peft)
        calls[on] = len(recomputed)
        logged = [h for h in map(json.loads, (out / "metrics.jsonl").read_text().splitlines()) if "loss" in h]
        runs[on] = [value for h in logged for value in (h["loss"], h["grad_norm"])]
    assert calls[False] == 0 and calls[True] > 0, calls      # the setting reaches the model
    assert len(runs[False]) == 6 and runs[False][1] > 0
    assert runs[True] == pytest.approx(runs[False], rel=1e-4)


def test_a_run_resumed_at_its_last_step_trains_no_more(short_run, tiny_model_dir, dataset_dir, tmp_path):
    # transformers resumes a checkpoint of the last step by training one step more; a run
    # killed after its training (while merging or writing its summary) must not do that.
    from safetensors.torch import load_file

    out = tmp_path / "sft"
    shutil.copytree(short_run[0], out)
    for extra in [p for p in out.glob("checkpoint-*") if p.name != "checkpoint-12"]:
        shutil.rmtree(extra)       # the 14-step resume above may have left its own
    summary = train_sft(tiny_model_dir, dataset_dir, out, SHORT, ASSISTANT_ONLY)
    assert summary["resumed_from"] == "checkpoint-12" and summary["steps"] == 12
    assert summary["tokens_per_s"] is None              # it trained no token
    assert sorted(p.name for p in out.glob("checkpoint-*")) == ["checkpoint-12"]
    history = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [h["step"] for h in history if "loss" in h] == [2, 4, 6, 8, 10, 12]
    final, saved = load_file(out / "final" / "model.safetensors"), load_file(out / "checkpoint-12" / "model.safetensors")
    assert final.keys() == saved.keys() and all(final[k].equal(saved[k]) for k in final)

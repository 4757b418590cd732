"""The plan is the program: each kind of plan artifact drives what runs.

Each test makes one recipe edit that changes one artifact, checks that `craftc diff`
shows it, and runs the step that the artifact drives (on the ads recipe's `smoke`
profile, from copies of the session's shared smoke run, e2e_support.py) to see the
behaviour change the predicted way. The last tests hand a prepared run to `launch.sh`
by hand, from another directory, and train GRPO in two CPU processes from the compiled
config.
"""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from e2e_support import ROOT, craftc

from runtime.rewards import RewardSpec, process_reward
from tests.rewards.conftest import call, user_turn

RECIPE = (ROOT / "recipes/ads_analytics.craft").read_text()
SMOKE_SFT = "stage sft  { prefix_epochs 0.1  prefix_history thinks  steps 4  batch 2  per_device_batch 2  max_length 1536 }"
SMOKE_GRPO = "stage grpo { steps 2  group 2  max_new_tokens 48  batch 2  per_device_batch 2  measure 1  history policy  fresh_instances 1  dynamic_sampling 1 }"
PREPARED_STEPS = ("world", "distill", "gate", "dataset")


def compile_variant(work: Path, name: str, old: str = "", new: str = "") -> Path:
    """Compile the ads recipe with one text edit into WORK/plans/NAME (smoke profile)."""
    assert old in RECIPE, old
    tree = work / "trees" / name
    (tree / "recipes").mkdir(parents=True)
    for part in ("schema_specs", "examples"):
        (tree / part).symlink_to(ROOT / part, target_is_directory=True)
    (tree / "recipes/ads_analytics.craft").write_text(RECIPE.replace(old, new, 1) if old else RECIPE)
    plan = work / "plans" / name
    compiled = craftc("compile", tree / "recipes/ads_analytics.craft", "-o", plan, "--profile", "smoke", cwd=work)
    assert compiled.returncode == 0, compiled.stderr
    return plan


def run_dir_from(base: Path, dest: Path, steps=PREPARED_STEPS) -> Path:
    """A new run dir holding copies of the base run's finished steps."""
    dest.mkdir(parents=True)
    for step in steps:
        shutil.copytree(base / step, dest / step, symlinks=True)
    return dest


@pytest.fixture(scope="module")
def base(tmp_path_factory, smoke_run):
    """The unedited smoke plan, and the session's smoke run of that same plan (read only:
    each test copies the steps it starts from, `run_dir_from`)."""
    work = tmp_path_factory.mktemp("plan_program")
    plan = compile_variant(work, "base")
    assert (plan / "plan.json").read_bytes() == (smoke_run.plan / "plan.json").read_bytes()
    return work, plan, smoke_run.run_dir


def diff_text(work: Path, a: Path, b: Path) -> str:
    shown = craftc("diff", a, b, cwd=work)
    assert shown.returncode == 2, shown.stderr        # 2: the plans differ
    return shown.stdout


def test_a_judge_vote_rule_drives_the_gate(base):
    work, plan, run = base
    edited = compile_variant(work, "vote", "vote unanimous", "vote majority")
    assert "specs/gates.json" in diff_text(work, plan, edited)
    new_run = run_dir_from(run, work / "runs" / "vote", ("world", "distill"))
    assert craftc("run", edited, "--run-dir", new_run, "--only", "gate", cwd=work).returncode == 0
    accepted = {r: json.loads((d / "gate/manifest.json").read_text())["metrics"]["accepted"]
                for r, d in (("unanimous", run), ("majority", new_run))}
    # A majority of three judges lets through candidates that one judge rejects.
    assert accepted["majority"] > accepted["unanimous"], accepted
    read = json.loads((new_run / "gate/manifest.json").read_text())["plan_files"]
    assert "specs/gates.json" in read


def test_a_prompt_template_drives_the_dataset_text(base):
    work, plan, run = base
    edited = compile_variant(work, "tool_doc", "  teacher synthetic {",
                             '  tool run_code { doc "Runs CODE in the warehouse sandbox (edited)" }\n  teacher synthetic {')
    assert "prompts/system_stripped.md" in diff_text(work, plan, edited)
    new_run = run_dir_from(run, work / "runs" / "tool_doc", ("world", "distill", "gate"))
    assert craftc("run", edited, "--run-dir", new_run, "--only", "dataset", cwd=work).returncode == 0
    from datasets import load_from_disk

    for run_dir, present in ((run, False), (new_run, True)):
        first = load_from_disk(str(run_dir / "dataset/dataset/stripped"))[0]["messages"][0]["content"]
        assert ("sandbox (edited)" in first) is present


@pytest.mark.parametrize("rule, kept", [("compact", "<CODE>"), ("thinks", "<THINK>")])
def test_shortened_earlier_turns_drive_the_training_examples(base, rule, kept):
    work, plan, run = base
    # The smoke profile keeps whole earlier turns; its GRPO stage moves to reference history
    # too: E519 refuses policy history beside shortened turns.
    old = "    earlier_turns full\n" + RECIPE.split("    earlier_turns full\n", 1)[1].split(SMOKE_GRPO, 1)[0] + SMOKE_GRPO
    new = old.replace("    earlier_turns full\n", f"    earlier_turns {rule}\n", 1).replace(
        SMOKE_GRPO, SMOKE_GRPO.replace("history policy", "history reference"))
    edited = compile_variant(work, f"earlier_turns_{rule}", old, new)
    assert "specs/input_builder.json" in diff_text(work, plan, edited)
    new_run = run_dir_from(run, work / "runs" / f"earlier_turns_{rule}", ("world", "distill", "gate"))
    ran = craftc("run", edited, "--run-dir", new_run, "--only", "dataset", cwd=work)
    assert ran.returncode == 0, ran.stdout[-2000:] + ran.stderr[-2000:]
    assert f"one example per turn: earlier_turns {rule}" in ran.stdout + ran.stderr
    from datasets import load_from_disk

    whole, per_turn = (load_from_disk(str(r / "dataset/dataset/stripped")) for r in (run, new_run))
    metrics = json.loads((new_run / "dataset/manifest.json").read_text())["metrics"]
    assert metrics["earlier_turns"] == rule and metrics["conversations"] == len(whole)
    # One example per conversation, against one per turn.
    assert len(per_turn) == sum(whole["turns"]) > len(whole)
    follow_ups = [m for m in per_turn["messages"] if sum(x["role"] == "user" for x in m) > 1]
    assert follow_ups
    dropped = {"<THINK>", "<PLAN>", "<CODE>"} - {kept}
    for messages in follow_ups:
        last_ask = max(i for i, m in enumerate(messages) if m["role"] == "user")
        earlier = messages[1:last_ask]
        # Earlier turns: questions, the kept block and answers, nothing trained, no tool output.
        assert not any(m["role"] == "tool" for m in earlier)
        assert all(m["masked"] for m in earlier if m["role"] == "assistant")
        assert any(m["content"].startswith(kept) for m in earlier)
        assert not any(tag in m["content"] for m in earlier for tag in dropped)


def test_the_warm_ups_history_drives_the_examples_the_sft_step_plans(base):
    work, plan, run = base
    edited = compile_variant(work, "history", SMOKE_SFT, SMOKE_SFT.replace("thinks", "conversation"))
    assert "stages/sft/curriculum.json" in diff_text(work, plan, edited)
    planned = {}
    for name, plan_dir in (("thinks", plan), ("conversation", edited)):
        new_run = run_dir_from(run, work / "runs" / f"history_{name}")
        ran = craftc("run", plan_dir, "--run-dir", new_run, "--only", "sft", "--no-launch", cwd=work)
        assert ran.returncode == 0, ran.stderr[-2000:]
        manifest = json.loads((new_run / "sft/manifest.json").read_text())
        assert "stages/sft/curriculum.json" in manifest["plan_files"]
        planned[name] = manifest["metrics"]
    # One example per conversation, its questions and THINK blocks only, against one per
    # assistant turn with the whole conversation before it.
    assert planned["thinks"]["prefix_examples"] < planned["conversation"]["prefix_examples"]
    assert planned["thinks"]["planned_stripped_prefix_tokens"] * 2 < planned["conversation"]["planned_stripped_prefix_tokens"]


def test_dropping_tool_outputs_from_mask_stops_sft_with_the_mask_report(base):
    work, plan, run = base
    edited = compile_variant(work, "mask", SMOKE_SFT, SMOKE_SFT.replace("max_length 1536", "max_length 1536  mask system, user"))
    assert "specs/masking.json" in diff_text(work, plan, edited)
    new_run = run_dir_from(run, work / "runs" / "mask")
    ran = craftc("run", edited, "--run-dir", new_run, "--only", "sft", cwd=work)
    assert ran.returncode == 1
    output = ran.stdout + ran.stderr
    assert "(tool)" in output and "keep `tool_outputs` in the stage's `mask`" in output
    report = json.loads((new_run / ".tmp-sft/craft/mask_report.json").read_text())
    assert report["roles"]["tool"] == "trained" and report["per_role"]["tool"]["trainable"] > 0


def test_a_penalty_weight_drives_the_reward(base):
    work, plan, _ = base
    edited = compile_variant(work, "penalty", "aggregate normalized }",
                             "aggregate normalized  penalties { select_star 0.5 } }")
    assert "specs/reward.json" in diff_text(work, plan, edited)
    # The grpo step's trainer scores rollouts with the plan's reward spec (GRPOJob.from_plan).
    turn = user_turn(call(code="result = api.query('SELECT * FROM campaign')"))
    scores = {p.name: process_reward(turn, RewardSpec.from_json(p / "specs/reward.json").penalties)
              for p in (plan, edited)}
    assert scores == {"base": pytest.approx(0.95), "penalty": pytest.approx(0.5)}


def test_per_device_batch_drives_the_launched_trainer(base):
    work, plan, run = base
    edited = compile_variant(work, "batch", SMOKE_SFT, SMOKE_SFT.replace("per_device_batch 2", "per_device_batch 1"))
    assert "stages/sft/trl_config.json" in diff_text(work, plan, edited)
    new_run = run_dir_from(run, work / "runs" / "batch")
    ran = craftc("run", edited, "--run-dir", new_run, "--only", "sft", "--no-launch", cwd=work)
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert f"launch by hand: bash {edited}/stages/sft/launch.sh {new_run}/sft/craft_config.json" in ran.stderr
    # launch.sh hands the trainer the plan dir; the trainer's SFTConfig is trl_config.json as compiled.
    from runtime.train.sft import read_stage_plan, sft_config

    args = {p.name: sft_config(read_stage_plan(p, "sft")[0], work / "out") for p in (plan, edited)}
    assert (args["base"].per_device_train_batch_size, args["base"].gradient_accumulation_steps) == (2, 1)
    assert (args["batch"].per_device_train_batch_size, args["batch"].gradient_accumulation_steps) == (1, 2)


def test_concurrent_arms_train_side_by_side_and_sequential_arms_one_after_the_other(base, smoke_run):
    work, plan, run = base
    # The smoke profile keeps the default block's `arms concurrent`: both launches ran at once,
    # each line of their output under its arm's name.
    assert "craft and stuffed train at the same time" in smoke_run.output
    assert "[craft] + bash" in smoke_run.output and "[stuffed] + bash" in smoke_run.output
    edited = compile_variant(work, "arms", "max_length 2304  arms concurrent }", "max_length 2304  arms sequential }")
    assert 'arms "concurrent" (removed)' in diff_text(work, plan, edited)
    new_run = run_dir_from(run, work / "runs" / "arms")
    ran = craftc("run", edited, "--run-dir", new_run, "--only", "sft", cwd=work)
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-3000:]
    assert "[craft]" not in ran.stdout and "train at the same time" not in ran.stderr
    assert ran.stdout.index("sft/craft_config.json") < ran.stdout.index("sft/stuffed_config.json")
    trained = {arm: json.loads((new_run / "sft" / arm / "sft_summary.json").read_text()) for arm in ("craft", "stuffed")}
    assert trained["craft"]["steps"] == 4 and trained["stuffed"]["steps"] >= 1


def test_each_stage_launches_by_hand_from_another_directory_and_the_run_goes_on(base, tmp_path):
    work, plan, run = base
    new_run = run_dir_from(run, work / "runs" / "handoff")
    prepared = craftc("run", plan, "--run-dir", new_run, "--from", "sft", "--until", "grpo", "--no-launch", cwd=work)
    assert prepared.returncode == 0, prepared.stderr[-3000:]
    for step in ("sft", "grpo"):
        assert json.loads((new_run / step / "manifest.json").read_text())["status"] == "prepared"
    # Elsewhere (another directory, as on another machine): the plan's launch.sh with the recorded configs.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    for script, config in (("sft", "sft/craft_config.json"), ("sft", "sft/stuffed_config.json"),
                           ("grpo", "grpo/grpo_config.json")):
        launched = subprocess.run(["bash", str(plan / "stages" / script / "launch.sh"), str(new_run / config)],
                                  cwd=elsewhere, capture_output=True, text=True, timeout=1500,
                                  env={**__import__("os").environ,
                                       "PATH": f"{Path(sys.executable).parent}:{__import__('os').environ['PATH']}"})
        assert launched.returncode == 0, launched.stderr[-3000:]
    went_on = craftc("run", plan, "--run-dir", new_run, "--from", "eval", cwd=work)
    assert went_on.returncode == 0, went_on.stdout[-3000:] + went_on.stderr[-3000:]
    assert "sft: adopted what its launch trained" in went_on.stderr
    for step in ("sft", "grpo", "eval", "report"):
        manifest = json.loads((new_run / step / "manifest.json").read_text())
        assert manifest["status"] == "complete"
    assert json.loads((new_run / "sft/manifest.json").read_text())["metrics"]["craft"]["steps"] == 4


def test_grpo_trains_in_two_cpu_processes_from_the_compiled_accelerate_config(base):
    work, plan, run = base
    two = SMOKE_GRPO.replace("batch 2  per_device_batch 2", "batch 4  per_device_batch 2  parallel ddp  gpus 0  processes 2")
    edited = compile_variant(work, "ddp", SMOKE_GRPO, two)
    assert "num_processes: 2" in (edited / "stages/grpo/accelerate.yaml").read_text()
    new_run = run_dir_from(run, work / "runs" / "ddp", (*PREPARED_STEPS, "sft"))
    ran = craftc("run", edited, "--run-dir", new_run, "--until", "grpo", cwd=work)
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-3000:]
    # Only the grpo stage changed: the runner reuses the copied sft step's models.
    status = {s["step"]: s["status"] for s in json.loads((new_run / "run.json").read_text())["steps"]}
    assert status["sft"] == "reused" and status["grpo"] == "ran"
    assert f"+ bash {edited}/stages/grpo/launch.sh" in ran.stdout   # the plan's launch.sh, printed first
    summary = json.loads((new_run / "grpo/grpo_summary.json").read_text())
    assert summary["world_size"] == 2 and summary["steps"] == 2
    weights = json.loads((edited / "specs/reward.json").read_text())["normalised_weights"]
    logged = [json.loads(line) for line in (new_run / "grpo/metrics.jsonl").read_text().splitlines()]
    steps = [entry for entry in logged if "reward" in entry]
    assert len(steps) == 2
    for entry in steps:
        weighted = sum(w * entry[f"rewards/{c}/mean"] for c, w in weights.items())
        assert entry["reward"] == pytest.approx(weighted, abs=1e-5)


def test_rollout_vllm_without_a_gpu_stops_before_launching_with_one_clear_line(base, tmp_path):
    """On this CPU machine `rollout vllm` is refused at preflight, naming the missing GPU and
    extra and the hand-off (`--no-launch`), before any model or data is touched."""
    import io

    from rich.console import Console

    from runtime.plan import load_plan
    from runtime.step_context import StepContext, StepError
    from runtime.train.grpo import run_grpo

    work, _, _ = base
    edited = compile_variant(work, "vllm", SMOKE_GRPO, SMOKE_GRPO.replace("dynamic_sampling 1 }", "dynamic_sampling 1  rollout vllm, colocate }"))
    (tmp_path / "out").mkdir()
    ctx = StepContext(plan=load_plan(edited), plan_dir=edited, run_dir=tmp_path, out_dir=tmp_path / "out",
                      console=Console(file=io.StringIO()), seed=0)
    with pytest.raises(StepError) as err:
        run_grpo(ctx)
    message = str(err.value)
    assert "rollout `vllm` needs a CUDA GPU" in message and "--no-launch" in message
    assert list((tmp_path / "out").iterdir()) == []


LORA = "lora { r 8  alpha 16  dropout 0  targets q_proj, k_proj, v_proj, o_proj, gate_up_proj, down_proj }"


@pytest.fixture(scope="module")
def lora_run(base):
    """The smoke plan with a LoRA sft stage, its sft step run on the prepared data."""
    work, plan, run = base
    edited = compile_variant(work, "lora", SMOKE_SFT, SMOKE_SFT.replace("max_length 1536", f"max_length 1536  {LORA}"))
    assert "stages/sft/peft_config.json" in diff_text(work, plan, edited)
    new_run = run_dir_from(run, work / "runs" / "lora")
    ran = craftc("run", edited, "--run-dir", new_run, "--only", "sft", cwd=work)
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-3000:]
    return work, edited, new_run


def test_a_lora_block_drives_sft_to_train_and_checkpoint_adapters_only(lora_run):
    _, plan, run = lora_run
    peft = json.loads((plan / "stages/sft/peft_config.json").read_text())
    assert peft["target_parameters"] == ["mlp.experts.gate_up_proj", "mlp.experts.down_proj"]
    manifest = json.loads((run / "sft/manifest.json").read_text())
    assert "stages/sft/peft_config.json" in manifest["plan_files"]
    craft = manifest["metrics"]["craft"]
    assert craft["adapter"] == "lora" and 0 < craft["trainable_parameters"] < craft["total_parameters"] / 5
    checkpoints = sorted((run / "sft/craft").glob("checkpoint-*"))
    assert checkpoints
    for checkpoint in [*checkpoints, run / "sft/craft/adapter"]:
        names = {p.name for p in checkpoint.iterdir()}
        assert "adapter_model.safetensors" in names and "model.safetensors" not in names, names
    from safetensors import safe_open

    with safe_open(run / "sft/craft/adapter/adapter_model.safetensors", "pt") as weights:
        assert all("lora_" in key for key in weights.keys())


def test_the_sft_trainer_and_step_log_to_tensorboard(lora_run):
    from runtime.tracking import read_scalars

    _, _, run = lora_run
    trainer = read_scalars(run / "sft/craft/tracking")
    assert len(trainer["train/loss"]) == 4                       # steps 4, logging_steps 1
    step = read_scalars(run / "sft/tracking")
    manifest = json.loads((run / "sft/manifest.json").read_text())
    assert step["craft/last_loss"][0][1] == pytest.approx(manifest["metrics"]["craft"]["last_loss"])


def test_export_writes_a_model_dir_that_loads_and_generates_with_a_card_from_the_run(lora_run):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from runtime.report import build_report
    from runtime.report.table import markdown_table
    from tests.report.test_report import EVAL

    work, plan, run = lora_run
    (run / "report").mkdir()
    report = build_report(EVAL)                      # the report step's data for a fixed eval result
    (run / "report/report.json").write_text(json.dumps(report))
    exported = craftc("export", run, "--stage", "sft", "--plan", plan, "-o", work / "exported", cwd=work)
    assert exported.returncode == 0, exported.stderr
    out = work / "exported"
    model = AutoModelForCausalLM.from_pretrained(out)
    tokenizer = AutoTokenizer.from_pretrained(out)
    assert not any("lora" in name for name, _ in model.named_parameters())    # merged
    card = (out / "README.md").read_text()
    prompt = (plan / "prompts/system_stripped.md").read_text().strip()
    messages = [{"role": "system", "content": prompt}, {"role": "user", "content": "Total spend per advertiser"}]
    inputs = tokenizer.apply_chat_template(messages, add_generation_prompt=True, return_tensors="pt", return_dict=True)
    with torch.no_grad():
        generated = model.generate(**inputs, max_new_tokens=8, do_sample=False)
    assert generated.shape[1] == inputs["input_ids"].shape[1] + 8 or tokenizer.eos_token_id in generated[0]
    for split, table in report["tables"].items():
        assert f"### {split}\n\n{markdown_table(table)}" in card
    assert prompt in card and "0.5 * R_outcome" in card and "candidates ->" in card
    assert "LoRA r 8 alpha 16" in card


def test_export_push_lists_files_on_a_dry_run_and_fails_cleanly_without_the_hub(lora_run, tmp_path):
    work, plan, run = lora_run
    dry = craftc("export", run, "--stage", "sft", "--plan", plan, "-o", tmp_path / "m", "--push", "me/ads", "--dry-run",
                 cwd=work)
    assert dry.returncode == 0, dry.stderr
    assert "would push" in dry.stdout and "model.safetensors" in dry.stdout and "README.md" in dry.stdout
    env = {**__import__("os").environ, "HF_TOKEN": "hf_fake", "HF_ENDPOINT": "http://127.0.0.1:9",
           "HF_HUB_DISABLE_TELEMETRY": "1"}
    pushed = subprocess.run([sys.executable, "-m", "craftc.cli", "export", str(run), "--stage", "sft", "--plan",
                             str(plan), "-o", str(tmp_path / "m"), "--push", "me/ads"],
                            cwd=work, capture_output=True, text=True, timeout=300, env=env)
    assert pushed.returncode == 1
    assert "error: pushing" in pushed.stderr and "me/ads" in pushed.stderr and "Traceback" not in pushed.stderr


def test_the_gate_execution_limits_drive_grpos_reference_runs(base, tmp_path):
    work, plan, _ = base
    edited = compile_variant(work, "ref_limits", "timeout 0.5s  memory 1024  jobs_per_process 16",
                             "timeout 2s  memory 1024  jobs_per_process 4")
    assert "specs/gates.json" in diff_text(work, plan, edited)
    # The grpo trainer runs its rows' reference solutions as the gate ran them (GRPOJob.from_plan).
    from runtime.train.grpo.job import GRPOJob

    config = tmp_path / "grpo_config.json"
    config.write_text(json.dumps({"model_dir": "m", "instances": "i.json", "warehouse": "w.duckdb", "out_dir": "."}))
    limits = {p.name: GRPOJob.from_plan(p, "grpo", config).reference_limits for p in (plan, edited)}
    assert (limits["base"]["wall_timeout_s"], limits["base"]["jobs_per_process"]) == (0.5, 16)
    assert (limits["ref_limits"]["wall_timeout_s"], limits["ref_limits"]["jobs_per_process"]) == (2.0, 4)

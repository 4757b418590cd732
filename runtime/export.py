"""`craftc export`: a trained stage of a run as a standard Hugging Face model directory.

The directory holds the stage's model (LoRA already merged by the stage's merge step,
or with `adapter_only` the adapter itself), its tokenizer and chat template, and a
model card (`README.md`) written from the plan and the run: the base model, the stage
settings, the data funnel, the reward weights, the eval table of `report/report.json`
and the stripped system prompt the model expects. `push` uploads it with
`huggingface_hub` (token from `HF_TOKEN` or `huggingface-cli login`).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from craftc.atomic import staged_dir
from craftc.ir import Plan, Stage
from runtime.agent.history import what_is_kept
from runtime.layout import FUNNEL_MD, REPORT_JSON, trained_model

__all__ = ["ExportError", "export_stage", "model_card", "push_to_hub", "stage_model_dir"]

# Trainer leftovers that are not part of a model directory.
_SKIP = ("training_args.bin", "README.md")


class ExportError(ValueError):
    """The run cannot be exported as asked; the message names the thing and the fix."""


def _stage(plan: Plan, name: str | None) -> Stage:
    stages = plan.recipe.stages
    if not stages:
        raise ExportError("the plan has no training stage to export")
    found = stages[-1] if name is None else next((s for s in stages if s.name == name), None)
    if found is None:
        raise ExportError(f"the plan has no stage `{name}`; its stages: {', '.join(s.name for s in stages)}")
    return found


def stage_model_dir(run_dir: Path, stage: Stage, adapter_only: bool = False) -> Path:
    """Where the run keeps the stage's model: `sft/craft/` for sft, `grpo/` for grpo."""
    wanted = trained_model(stage.kind, adapter=adapter_only).under(run_dir)
    if adapter_only and stage.lora is None:
        raise ExportError(f"stage `{stage.name}` trained every weight (no `lora` block): export without --adapter-only")
    if not (wanted / ("adapter_config.json" if adapter_only else "config.json")).is_file():
        raise ExportError(f"`{wanted}` holds no trained model; run `craftc run PLAN --until {stage.kind}` first")
    return wanted


def _read_json(path: Path) -> dict | None:
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def model_card(plan: Plan, plan_dir: Path, run_dir: Path, stage: Stage, adapter_only: bool = False) -> str:
    """The model card (README.md) of a stage's export, from the plan and the run dir."""
    from runtime.report.table import markdown_table

    recipe = plan.recipe
    spec = next((m for m in recipe.models if m.name == stage.base), None)
    base = spec.path if spec is not None and spec.path else stage.base
    reward = _read_json(plan_dir / "specs" / "reward.json") or {}
    report = _read_json(REPORT_JSON.under(run_dir))
    funnel = FUNNEL_MD.under(run_dir)
    builder = _read_json(plan_dir / "specs" / "input_builder.json")
    prompt = (plan_dir / builder["modes"]["stripped"]["system_prompt"]).read_text(encoding="utf-8")
    front = ["---", "library_name: transformers" if not adapter_only else "library_name: peft",
             "pipeline_tag: text-generation", "tags:", "  - craft", "  - trl", f"  - {stage.kind}"]
    if stage.lora is not None:
        front.append("  - lora")
    if spec is not None and spec.source == "hub":
        front.append(f"base_model: {base}")
    front.append("---")
    parts = ["\n".join(front), f"\n# {recipe.name}: {stage.name}\n",
             f"A schema-grounded analytics agent trained by craft from recipe `{recipe.name}` "
             f"(profile `{recipe.profile}`, plan `{plan.content_hash[:12]}`).\n",
             "\n## Training\n",
             f"- base model: `{base}`" + (" (craft's embedded tiny Qwen3-MoE)" if spec and spec.source == "tiny_moe" else ""),
             *[_stage_line(s) for s in recipe.stages],
             f"- this model: stage `{stage.name}`" + (" (LoRA adapter only)" if adapter_only else
                                                      " (LoRA merged into the weights)" if stage.lora else "")]
    parts.append("\n## Data funnel\n")
    if funnel.is_file():
        parts.append(funnel.read_text(encoding="utf-8").split("\n## ")[0].replace("# Tri-Gate funnel\n", "").strip() + "\n")
    else:
        parts.append("The run has no gate step output.\n")
    parts.append("\n## Reward\n")
    weights = reward.get("weights", {})
    parts.append(f"R_total ({reward.get('aggregate', 'sum')}): "
                 + " + ".join(f"{w:g} * R_{c}" for c, w in weights.items()) + "\n")
    parts.append("\n## Evaluation\n")
    if report is None:
        parts.append("The run has no report step output (`report/report.json`).\n")
    else:
        for split, table in report["tables"].items():
            parts.append(f"\n### {split}\n\n" + markdown_table(table))
    parts += ["\n## System prompt\n",
              "The model was trained with this schema-stripped system prompt; give it the same one:\n",
              "````markdown\n" + prompt.rstrip("\n") + "\n````\n",
              *([f"In a conversation it was trained to see each earlier turn shortened (`earlier_turns "
                 f"{recipe.earlier_turns}`): {what_is_kept(recipe.earlier_turns)}, without the other blocks, "
                 "failed attempts or tool output.\n"] if recipe.earlier_turns != "full" else []),
              *([f"Its evaluation decoded with `eval {{ copy_bias {recipe.eval.copy_bias:g} }}`: at every generated "
                 "token, the logit of each token that writes a word of the questions asked so far was raised by that much "
                 "(`runtime.agent.copy_bias.CopyBiasProcessor`, a `transformers` logits processor). Without it "
                 "the figures above do not hold.\n"] if recipe.eval.copy_bias else []),
              "\n## Use\n",
              "```python\nfrom transformers import AutoModelForCausalLM, AutoTokenizer\n\n"
              "model = AutoModelForCausalLM.from_pretrained(\"PATH_OR_REPO\")\n"
              "tokenizer = AutoTokenizer.from_pretrained(\"PATH_OR_REPO\")\n"
              "messages = [{\"role\": \"system\", \"content\": SYSTEM_PROMPT}, {\"role\": \"user\", \"content\": QUESTION}]\n"
              "inputs = tokenizer.apply_chat_template(messages, add_generation_prompt=True, return_tensors=\"pt\", "
              "return_dict=True)\n"
              "print(tokenizer.decode(model.generate(**inputs, max_new_tokens=256)[0]))\n```\n"]
    return "\n".join(p.rstrip("\n") for p in parts) + "\n"


def _stage_line(s: Stage) -> str:
    length = f"{s.steps} steps" if s.steps is not None else f"{s.epochs:g} epochs"
    lora = f", LoRA r {s.lora.r} alpha {s.lora.alpha:g} on {', '.join(s.lora.targets)}" if s.lora else ""
    return f"- stage `{s.name}` ({s.kind}): {length}, lr {s.lr:g}, {s.input} input{lora}"


def export_stage(plan: Plan, plan_dir: Path, run_dir: Path, out_dir: Path, stage_name: str | None = None,
                 adapter_only: bool = False) -> Path:
    """Write the stage's model, tokenizer and model card to ``out_dir`` (replaced atomically)."""
    stage = _stage(plan, stage_name)
    source = stage_model_dir(run_dir, stage, adapter_only)
    if out_dir.exists() and any(out_dir.iterdir()) and not (out_dir / "README.md").is_file():
        raise ExportError(f"`{out_dir}` is not empty and is not an export; choose another `-o`")
    with staged_dir(out_dir) as tmp:
        shutil.copytree(source, tmp, ignore=shutil.ignore_patterns(*_SKIP), dirs_exist_ok=True)
        (tmp / "README.md").write_text(model_card(plan, plan_dir, run_dir, stage, adapter_only), encoding="utf-8")
    return out_dir


def push_to_hub(out_dir: Path, repo: str, dry_run: bool = False, private: bool = True) -> list[str]:
    """Upload an export to the Hub repo ``repo``; with ``dry_run`` only list what would go.

    Raises:
        ExportError: naming the repo and what went wrong (no token, network, permissions).
    """
    files = sorted(p.relative_to(out_dir).as_posix() for p in out_dir.rglob("*") if p.is_file())
    if dry_run:
        return files
    from huggingface_hub import HfApi

    try:
        api = HfApi()
        api.create_repo(repo, private=private, exist_ok=True)
        api.upload_folder(folder_path=str(out_dir), repo_id=repo, commit_message="Upload from craftc export")
    except Exception as exc:  # the hub client raises HTTP, network and auth errors of many types

        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ExportError(f"pushing `{out_dir}` to `{repo}` failed: {first}; check the token (`HF_TOKEN` or "
                          "`huggingface-cli login`), the network and the repo name, or use --dry-run") from None
    return files

"""Stage I: schema-stripped SFT with TRL's `SFTTrainer`, the loss mask from the plan.

Shape (setup / train / cleanup, as in torchtune recipes):

1. read the stage's `trl_config.json` and its roles in `specs/masking.json` from the
   plan dir, and the step config (model, dataset and output dirs);
2. tokenize every conversation with its labels: a token is trained iff its role is
   trained in the masking spec (assistant output: the chat template's
   `{% generation %}` span); prove it on a seeded sample (`mask_report.json`/`.md`) and
   fail fast if any tool-output token would be trained;
3. train with `SFTConfig(**trl_config)` exactly as compiled (resuming from the last
   `checkpoint-*` in `out_dir` if there is one);
4. save `out_dir/final` (model + tokenizer), `metrics.jsonl`, `loss.png` and
   `sft_summary.json`, each atomically: a launch by hand (docs/training.md) writes
   straight into the run dir, outside the runner's staged step dir.

With `stages/<stage>/peft_config.json` in the plan (a `lora { ... }` stage) the model
is wrapped in that LoRA adapter: only the adapter trains and checkpoints, it is saved to
`out_dir/adapter`, and the merge step (`runtime.train.adapters.merge_adapter`) writes
the merged model to `out_dir/final`. The trainer logs to the recipe's tracker
(`report_to`) under `out_dir/tracking` (runtime.tracking).

Runs under `accelerate launch` through the plan's `stages/<stage>/launch.sh`, or alone:
`python -m runtime.train.sft --plan-dir PLAN --stage sft --config STEP_CONFIG.json`.
The step config holds `{"model_dir", "dataset_dir", "out_dir", "trl_overrides"}`;
relative paths resolve against the config file's own directory (see docs/training.md).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import sys
import time
from pathlib import Path

from craftc.atomic import open_atomic, replace_dir, write_atomic
from runtime.layout import ADAPTER, FINAL, SFT_SUMMARY
from runtime.tracking import use_tracker_dir
from runtime.train.adapters import AdapterError, lora_config, merge_adapter, parameter_counts, read_peft_config
from runtime.train.core_share import CORE_SHARE_ENV, core_share_callback
from runtime.train.curriculum import CurriculumError, no_warm_up_reason, prefix_conversations, read_curriculum
from runtime.train.loss_head import score_trained_positions_in
from runtime.train.masking import check_masking, labels_for, mask_report, write_mask_report
from runtime.train.question_dropout import rewritten_passes
from runtime.train.resume import tokens_at, train_from
from runtime.train.schema_docs import SCHEMA_DOCS_DIR, SchemaDocsError, read_schema_docs
from runtime.train.timed_checkpoints import timed_checkpoints

__all__ = ["SFTSetupError", "StepConfig", "main", "read_stage_plan", "sft_config", "train_sft"]

# The warm-up's checkpoints (runtime.train.curriculum), inside the arm's out dir.
PREFIX_DIR = "prefix"

# Examples rendered into the mask report (a sample: rendering every example twice would
# double the set-up time of a large dataset).
MASK_REPORT_SAMPLES = 32


class SFTSetupError(ValueError):
    """The SFT step cannot start: bad settings, a missing model or dataset."""


def read_stage_plan(plan_dir: str | os.PathLike, stage: str) -> tuple[dict, dict]:
    """The stage's TRL kwargs and its per-role masking (`{"tool": "masked", ...}`) from the plan dir."""
    plan_dir = Path(plan_dir)
    try:
        trl_kwargs = json.loads((plan_dir / "stages" / stage / "trl_config.json").read_text(encoding="utf-8"))
        roles = json.loads((plan_dir / "specs" / "masking.json").read_text(encoding="utf-8"))["stages"][stage]["roles"]
    except (OSError, json.JSONDecodeError, KeyError) as exc:
        raise SFTSetupError(f"plan dir `{plan_dir}` has no readable stage `{stage}` "
                            f"(stages/{stage}/trl_config.json and specs/masking.json): {exc}; "
                            "pass the plan dir `craftc compile` wrote") from None
    return trl_kwargs, roles


def sft_config(trl_kwargs: dict, out_dir: str | os.PathLike, overrides: dict | None = None):
    """`SFTConfig(**trl_kwargs)`, plus the output dir and the step's recorded overrides.

    The overrides are the two values the sft step measures rather than compiles: the
    stuffed arm's steps (`baseline_budget tokens`) and each arm's `max_length` room; the
    step config records them.
    """
    from trl import SFTConfig

    from runtime.train.version_fit import fitted_config

    try:
        return fitted_config(SFTConfig, {**trl_kwargs, **(overrides or {})}, output_dir=str(out_dir))
    except TypeError as exc:
        raise SFTSetupError(f"the plan's trl_config.json does not fit this TRL version: {exc}; "
                            "recompile the recipe with the craft installed here") from None


class StepConfig(dict):
    """The step config JSON with its paths resolved against the file's directory."""

    KEYS = ("model_dir", "dataset_dir", "out_dir", "trl_overrides")
    # The warm-up's measured `max_steps` (the stuffed arm); the stage's `checkpoint_every`.
    OPTIONAL = ("prefix_overrides", "checkpoint_every_s")

    @classmethod
    def read(cls, path: Path) -> "StepConfig":
        if not path.is_file():
            raise SFTSetupError(f"config `{path}` does not exist: pass the step config `craftc run` wrote "
                                "into the run dir (RUN_DIR/sft/<arm>_config.json)")
        try:
            config = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise SFTSetupError(f"config `{path}` is not valid JSON: {exc}") from None
        missing = [k for k in cls.KEYS if k not in config]
        extra = [k for k in config if k not in cls.KEYS + cls.OPTIONAL]
        if missing or extra:
            raise SFTSetupError(f"config `{path}` must hold exactly {{{', '.join(cls.KEYS)}}}"
                                f" (and optionally {', '.join(cls.OPTIONAL)})"
                                + (f"; missing: {', '.join(missing)}" if missing else "")
                                + (f"; unknown: {', '.join(extra)}" if extra else ""))
        root = path.resolve().parent
        return cls({k: (root / config[k] if k.endswith("_dir") else config[k])
                    for k in cls.KEYS + cls.OPTIONAL if k in config})


def _load_inputs(model_dir: Path, dataset_dir: Path):
    """Load tokenizer and dataset with messages naming the missing thing and the fix."""
    from datasets import load_from_disk
    from transformers import AutoTokenizer

    errors = []
    if not (model_dir / "config.json").is_file():
        errors.append(f"model dir `{model_dir}` has no config.json: run the sft step's base model build "
                      "(tiny_moe) or point `model_dir` at a Hugging Face model directory")
    if not dataset_dir.is_dir():
        errors.append(f"dataset dir `{dataset_dir}` does not exist: run the `dataset` step first")
    if errors:
        raise SFTSetupError("cannot start SFT:\n  " + "\n  ".join(errors))
    try:
        dataset = load_from_disk(str(dataset_dir))
    except Exception as exc:  # datasets raises several types for a corrupt or foreign dir
        raise SFTSetupError(f"dataset dir `{dataset_dir}` is not a saved `datasets.Dataset`: {exc}") from exc
    if "messages" not in dataset.column_names:
        raise SFTSetupError(f"dataset `{dataset_dir}` has no `messages` column (columns: {dataset.column_names})")
    if len(dataset) == 0:
        raise SFTSetupError(f"dataset `{dataset_dir}` is empty: the gate step accepted no trajectory")
    tokenizer = AutoTokenizer.from_pretrained(str(model_dir), local_files_only=True)
    _use_training_template(tokenizer, model_dir)
    # Other columns (workflow, instance_id, n_tokens) are kept for the mask report's ids
    # but never reach the trainer.
    return tokenizer, dataset


def _use_training_template(tokenizer, model_dir: Path) -> None:
    """Give a stock base model the training template TRL would swap in, before the mask report.

    tiny_moe's template already has generation markers. A real base model's stock
    template usually does not; TRL patches known ones inside `SFTTrainer`, so the
    report must render with the same patched template to describe what is trained.
    """
    from trl.chat_template_utils import get_training_chat_template

    if tokenizer.chat_template is None:
        raise SFTSetupError(f"tokenizer in `{model_dir}` has no chat template: conversational SFT needs one")
    try:
        patched = get_training_chat_template(tokenizer)
    except ValueError as exc:
        raise SFTSetupError(
            f"the chat template of `{model_dir}` has no {{% generation %}} markers and TRL has no training "
            f"variant for it, so tool outputs could not be masked. Add the markers around assistant output "
            f"(see docs/training.md). TRL said: {str(exc).splitlines()[0]}") from exc
    if patched is not None:
        tokenizer.chat_template = patched


def _is_main_process() -> bool:
    return os.environ.get("RANK", "0") == "0"


def _write_metrics(log_history: list[dict], out: Path) -> None:
    write_atomic(out / "metrics.jsonl", "".join(json.dumps(entry, sort_keys=True) + "\n" for entry in log_history))


def _plot_loss(log_history: list[dict], out: Path) -> Path | None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    points = [(e["step"], e["loss"]) for e in log_history if "loss" in e]
    if not points:
        return None
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.plot(*zip(*points), marker=".")
    ax.set(xlabel="step", ylabel="train loss", title="Stage I SFT")
    ax.grid(alpha=0.3)
    with open_atomic(out / "loss.png", "wb") as fh:
        fig.savefig(fh, format="png", dpi=100)
    plt.close(fig)
    return out / "loss.png"


def _save_final(trainer, tokenizer, out: Path, name: str = FINAL) -> Path:
    """Save model (or adapter) + tokenizer to `out/<name>` through a temporary dir and a rename.

    Every rank writes into the same staging dir (so its name is fixed), rank 0 renames it.
    """
    tmp = out / f".{name}.tmp"
    if trainer.is_world_process_zero() and tmp.exists():
        shutil.rmtree(tmp)
    # Every rank calls save_model (FSDP/ZeRO-3 gather the full weights); rank 0 writes.
    trainer.save_model(str(tmp))
    if trainer.is_world_process_zero():
        tokenizer.save_pretrained(str(tmp))
        replace_dir(tmp, out / name)
    return out / name


def tokenized_dataset(tokenizer, dataset, roles: dict):
    """`input_ids` and `labels` for every conversation, the labels from the role policy.

    TRL uses a `labels` column as it is, so what trains is exactly what the masking spec
    says (and what the mask report shows), whatever the chat template marks.
    """
    return dataset.map(lambda row: labels_for(tokenizer, row["messages"], roles),
                       remove_columns=dataset.column_names, desc="masking")


def rows_reached(rows: int, max_steps: int, examples_per_step: int, seed: int) -> list[int] | None:
    """The indices of the rows a run of ``max_steps`` trains, in the order it draws them, or
    None when it reaches every row (whole epochs, or steps enough for one pass).

    A seeded uniform draw, `datasets`' own shuffle of that many rows: the sft step counts the
    truncation of the rows that will train (runtime.train.step) with the draw the trainer makes.

    >>> rows_reached(10, 2, 3, seed=0) == rows_reached(10, 2, 3, seed=0) and len(rows_reached(10, 2, 3, seed=0))
    6
    >>> rows_reached(10, 4, 3, seed=0) is None, rows_reached(10, -1, 3, seed=0) is None
    (True, True)
    """
    reached = max_steps * examples_per_step
    if max_steps <= 0 or reached >= rows:
        return None
    from datasets import Dataset

    return Dataset.from_dict({"row": list(range(rows))}).shuffle(seed=seed)["row"][:reached]


def examples_reached(dataset, args):
    """The rows a run of `max_steps` trains, when it stops before one pass over `dataset` ends.

    The stuffed arm's token-matched budget trains about a seventh of its conversations; tokenizing
    all of them cost more than a minute of its ~5,000-token examples. Those rows are a seeded
    uniform draw (`data_seed`, else `seed`), as the trainer's own shuffle is; the trainer then
    shuffles them.
    """
    per_step = args.per_device_train_batch_size * args.gradient_accumulation_steps * args.world_size
    seed = args.data_seed if args.data_seed is not None else args.seed
    reached = rows_reached(len(dataset), args.max_steps, per_step, seed)
    return dataset if reached is None else dataset.select(reached)


class PhaseHooks:
    """What every phase's trainer gets besides its data: the CPU-share changes it records
    (runtime.train.core_share) and the plan's `checkpoint_every` (runtime.train.timed_checkpoints)."""

    def __init__(self, checkpoint_every_s: float = 0.0):
        self.thread_changes: list[dict] = []
        self.checkpoint_every_s = checkpoint_every_s

    def callbacks(self, phase: str) -> list:
        share = os.environ.get(CORE_SHARE_ENV)
        found = [core_share_callback(share, phase, self.thread_changes)] if share else []
        return found + ([timed_checkpoints(self.checkpoint_every_s)] if self.checkpoint_every_s > 0 else [])


def _sft_trainer(model, args, tokenizer, peft, train_dataset, phase: str, hooks: PhaseHooks,
                 sampler: str = "random"):
    """TRL's `SFTTrainer`, its LM head projecting only trained positions on CPU (runtime.train.loss_head).

    Launched beside another arm, it follows the launcher's CPU share (runtime.train.core_share),
    recording each change in `hooks`; it saves by training time too (`hooks.checkpoint_every_s`).
    With `sampler by_prefix` its batches are drawn by prefix and each runs its shared prefix
    once (runtime.train.prefix_sampler).
    """
    from trl import SFTTrainer

    callbacks = hooks.callbacks(phase) or None
    trainer = SFTTrainer(model=model, args=args, processing_class=tokenizer, peft_config=peft,
                         train_dataset=train_dataset, callbacks=callbacks)
    score_trained_positions_in(trainer)
    if sampler == "by_prefix":
        from runtime.train.prefix_sampler import group_batches_by_prefix

        group_batches_by_prefix(trainer)
    return trainer


def _pre_phase(model, tokenizer, examples, roles: dict, trl_kwargs: dict, phase: dict, peft, phase_dir: Path,
               label: str, hooks: PhaseHooks, sampler: str = "random"):
    """Train `model` on `examples` before the main phase, in place, with `phase`'s TRL overrides.

    The schema-docs pass and the warm-up share it: checkpoints and curves in `phase_dir`, so an
    interrupted phase resumes there; the model it leaves (a PEFT model when the stage has `lora`)
    is what the next phase trains on. Returns the model and the phase's summary.
    """
    from transformers.trainer_utils import get_last_checkpoint

    phase_args = sft_config(trl_kwargs, phase_dir, phase)
    use_tracker_dir(trl_kwargs.get("report_to", "none"), phase_dir)   # its own curves
    trainer = _sft_trainer(model, phase_args, tokenizer, peft,
                           tokenized_dataset(tokenizer, examples_reached(examples, phase_args), roles),
                           label, hooks, sampler)
    resume = get_last_checkpoint(str(phase_dir)) if phase_dir.is_dir() else None
    result = train_from(trainer, resume)
    losses = [e["loss"] for e in trainer.state.log_history if "loss" in e]
    tokens = max((e.get("num_tokens", 0) for e in trainer.state.log_history), default=0)
    return trainer.model, {"examples": len(examples), "steps": trainer.state.global_step,
                           "first_loss": losses[0] if losses else None, "last_loss": losses[-1] if losses else None,
                           "num_tokens": int(tokens), "train_runtime_s": round(result.metrics.get("train_runtime", 0.0), 3)}


def _named_phase(overrides: dict, suffix: str, **settings) -> dict:
    """The main phase's overrides with a phase's own settings, its tracker run name suffixed."""
    phase = {**overrides, **settings}
    if phase.get("run_name"):
        phase["run_name"] += suffix
    return phase


def _schema_docs_pass(model, tokenizer, docs: dict, roles: dict, trl_kwargs: dict, overrides: dict, peft, out: Path,
                      hooks: PhaseHooks):
    """The `schema_docs` passes (runtime.train.schema_docs) on `model`, in `out/schema_docs`; its summary."""
    from datasets import Dataset

    phase = _named_phase(overrides, "-schema-docs", num_train_epochs=docs["passes"], max_steps=-1)
    model, summary = _pre_phase(model, tokenizer, Dataset.from_list(docs["examples"]), roles, trl_kwargs, phase, peft,
                                out / SCHEMA_DOCS_DIR, "schema docs", hooks)
    return model, {**summary, "passes": docs["passes"]}


def _warm_up(model, tokenizer, dataset, roles: dict, trl_kwargs: dict, overrides: dict, peft, curriculum: dict,
             prefix_overrides: dict, out: Path, hooks: PhaseHooks, sampler: str):
    """The `prefix_epochs` warm-up (runtime.train.curriculum) on `model`, in `out/prefix`; its summary."""
    passes = curriculum["prefix_epochs"]
    if curriculum.get("question_dropout"):
        # Every pass its own rewrite of the questions: the passes are copies, trained once.
        dataset, passes = rewritten_passes(dataset, curriculum["question_dropout"], passes, "warm")
    examples = prefix_conversations(dataset, curriculum)
    if len(examples) == 0:
        raise SFTSetupError(f"the plan asks for a warm-up of {curriculum['prefix_epochs']:g} passes, but no "
                            f"conversation gives a warm-up example ({no_warm_up_reason(curriculum)}); write the "
                            "reasoning block in the trajectories, or remove `prefix_epochs` from the sft stage")
    phase = _named_phase(overrides, "-prefix", num_train_epochs=passes,
                         max_steps=int(prefix_overrides.get("max_steps", -1)))
    return _pre_phase(model, tokenizer, examples, roles, trl_kwargs, phase, peft, out / PREFIX_DIR, "warm-up",
                      hooks, sampler)


def train_sft(model_dir, dataset_dir, out_dir, trl_kwargs: dict, roles: dict, overrides: dict | None = None,
              peft_kwargs: dict | None = None, curriculum: dict | None = None,
              prefix_overrides: dict | None = None, sampler: str = "random", schema_docs: dict | None = None,
              checkpoint_every_s: float = 0.0) -> dict:
    """Run Stage I SFT and return a summary (also written to `out_dir/sft_summary.json`).

    Args:
        model_dir: A Hugging Face model directory (e.g. from `build_tiny_moe`).
        dataset_dir: A `Dataset.save_to_disk` dir with a `messages` column.
        out_dir: Checkpoints, `final/`, `mask_report.*`, `metrics.jsonl`, `loss.png`.
        trl_kwargs: The plan's `stages/<stage>/trl_config.json`, passed to `SFTConfig` unchanged.
        roles: The stage's roles in `specs/masking.json` (`{"tool": "masked", ...}`).
        overrides: TRL keys the step measured (the stuffed arm's `max_steps`, `max_length`).
        peft_kwargs: The plan's `stages/<stage>/peft_config.json` (`LoraConfig` kwargs), or None
            to train every weight.
        curriculum: The plan's `stages/<stage>/curriculum.json` (a warm-up on each assistant
            turn's reasoning block first), or None.
        prefix_overrides: The warm-up's `max_steps` where the step measured it (the stuffed arm).
        sampler: The plan's `stages/<stage>/batches.json` sampler: `by_prefix` draws batches by
            prefix and runs each batch's shared prefix once; `random` (no file) is TRL's shuffle.
        schema_docs: The plan's `stages/<stage>/schema_docs.json` (passes over the schema's
            documentation before the warm-up and the conversations), or None.
        checkpoint_every_s: The stage's `checkpoint_every`: every phase also saves a checkpoint
            once this much training time has passed since its last (0: by steps only).

    Returns:
        `{"first_loss", "last_loss", "steps", "world_size", "cpu_threads", "cpu_threads_changes",
        "train_runtime_s", "num_tokens",
        "tokens_per_s", "resumed_from", "final_dir", "adapter", "adapter_dir", "schema_docs", "prefix_warm_up", "sampler",
        "trainable_parameters", "total_parameters"}`.

    Raises:
        SFTSetupError: On bad settings or inputs (before anything is trained).
        MaskingError: If any tool-output token would be trained.
    """
    import torch
    from runtime.train.precision import load_for_training
    from transformers.trainer_utils import get_last_checkpoint

    model_dir, dataset_dir, out = Path(model_dir), Path(dataset_dir), Path(out_dir)
    args = sft_config(trl_kwargs, out, overrides)
    peft = lora_config(peft_kwargs) if peft_kwargs else None
    tokenizer, dataset = _load_inputs(model_dir, dataset_dir)

    # Fail fast: prove the masking before loading the model or touching out_dir's checkpoints.
    report = mask_report(tokenizer, dataset, n_samples=MASK_REPORT_SAMPLES, seed=args.seed, roles=roles)
    out.mkdir(parents=True, exist_ok=True)
    if _is_main_process():
        write_mask_report(report, out)
    check_masking(report)

    # float32 master weights (bf16 is autocast), an MXFP4 checkpoint unpacked (runtime.train.precision).
    model = load_for_training(model_dir, args, local_files_only=True)
    resume = get_last_checkpoint(str(out))
    warm_up = docs = None
    threads, hooks = torch.get_num_threads(), PhaseHooks(checkpoint_every_s)
    if schema_docs and schema_docs["passes"] > 0 and resume is None:
        # A checkpoint of the main phase already holds what the schema pass trained.
        model, docs = _schema_docs_pass(model, tokenizer, schema_docs, roles, trl_kwargs, overrides or {}, peft, out,
                                        hooks)
        peft = None    # the pass already wrapped the model in its adapter
    if curriculum and curriculum["prefix_epochs"] > 0 and resume is None:
        # A checkpoint of the main phase already holds the warmed-up weights.
        model, warm_up = _warm_up(model, tokenizer, dataset, roles, trl_kwargs, overrides or {}, peft, curriculum,
                                  prefix_overrides or {}, out, hooks, sampler)
        peft = None    # the warm-up already wrapped the model in its adapter
    use_tracker_dir(trl_kwargs.get("report_to", "none"), out)
    if curriculum and curriculum.get("question_dropout"):
        dataset, epochs = rewritten_passes(dataset, curriculum["question_dropout"], args.num_train_epochs, "main")
        args = sft_config(trl_kwargs, out, {**(overrides or {}), "num_train_epochs": epochs})
    trainer = _sft_trainer(model, args, tokenizer, peft,
                           tokenized_dataset(tokenizer, examples_reached(dataset, args), roles), "main", hooks,
                           sampler)
    counts = parameter_counts(trainer.model)
    started = time.perf_counter()
    result = train_from(trainer, resume)
    wall = time.perf_counter() - started
    if peft_kwargs is None:
        _save_final(trainer, tokenizer, out)
    else:
        _save_final(trainer, tokenizer, out, ADAPTER)
        if trainer.is_world_process_zero():
            merge_adapter(model_dir, out / ADAPTER, out / FINAL, tokenizer)

    history = trainer.state.log_history
    losses = [e["loss"] for e in history if "loss" in e]
    tokens = max((e.get("num_tokens", 0) for e in history), default=0)
    trained_here = tokens - tokens_at(resume)     # a resumed run's log counts the checkpoint's tokens too
    summary = {
        "first_loss": losses[0] if losses else None,
        "last_loss": losses[-1] if losses else None,
        "steps": trainer.state.global_step,
        "world_size": trainer.args.world_size,
        # the CPU threads each process started with (accelerate's, from OMP_NUM_THREADS), and
        # where it took more once a concurrent arm finished (runtime.train.core_share)
        "cpu_threads": threads,
        "cpu_threads_changes": hooks.thread_changes,
        "train_runtime_s": round(result.metrics.get("train_runtime", wall), 3),
        "num_tokens": int(tokens),
        "tokens_per_s": round(trained_here / wall, 1) if trained_here > 0 and wall > 0 else None,
        "resumed_from": Path(resume).name if resume else None,
        "final_dir": FINAL,
        "adapter": "lora" if peft_kwargs else None,
        "adapter_dir": ADAPTER if peft_kwargs else None,
        "schema_docs": docs,
        "prefix_warm_up": warm_up,
        "sampler": sampler,
        **counts,
    }
    if trainer.is_world_process_zero():
        _write_metrics(history, out)
        _plot_loss(history, out)
        write_atomic(out / SFT_SUMMARY, json.dumps(summary, indent=2, sort_keys=True))
    if losses and not all(math.isfinite(x) for x in losses):
        raise RuntimeError(f"SFT loss became non-finite ({losses[-1]}); lower `lr` (now {args.learning_rate})")
    return summary


def _default_checkpoint_every() -> float:
    """The IR's `checkpoint_every`, for a step config written before the sft step recorded it."""
    from craftc.ir import SFTStage

    return SFTStage.model_fields["checkpoint_every_s"].default


def main(argv: list[str] | None = None) -> int:
    """CLI: `python -m runtime.train.sft --plan-dir PLAN --stage NAME --config STEP_CONFIG.json`."""
    parser = argparse.ArgumentParser(prog="python -m runtime.train.sft", description=__doc__.splitlines()[0])
    parser.add_argument("--plan-dir", required=True, type=Path, help="the compiled plan dir")
    parser.add_argument("--stage", required=True, help="the sft stage's name in the plan")
    parser.add_argument("--config", required=True, type=Path,
                        help="step config JSON: model_dir, dataset_dir, out_dir, trl_overrides")
    ns = parser.parse_args(argv)
    from runtime.train.masking import MaskingError
    from runtime.train.prefix_groups import SharedPrefixError
    from runtime.train.prefix_sampler import read_sampler

    try:
        trl_kwargs, roles = read_stage_plan(ns.plan_dir, ns.stage)
        peft_kwargs = read_peft_config(ns.plan_dir, ns.stage)
        curriculum = read_curriculum(ns.plan_dir, ns.stage)
        sampler = read_sampler(ns.plan_dir, ns.stage)
        schema_docs = read_schema_docs(ns.plan_dir, ns.stage)
        config = StepConfig.read(ns.config)
        summary = train_sft(config["model_dir"], config["dataset_dir"], config["out_dir"], trl_kwargs, roles,
                            config["trl_overrides"], peft_kwargs, curriculum, config.get("prefix_overrides"),
                            sampler, schema_docs, config.get("checkpoint_every_s", _default_checkpoint_every()))
    except (SFTSetupError, MaskingError, AdapterError, CurriculumError, SharedPrefixError, SchemaDocsError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if _is_main_process():
        print(json.dumps(summary, sort_keys=True))
    _end_distributed()
    return 0


def _end_distributed() -> None:
    """Leave the process group cleanly: every rank waits for the others, then tears it down.

    Without this a DDP rank may abort at interpreter exit (SIGABRT from a gloo thread
    still running), failing a launch whose training and save had already finished.
    """
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        dist.barrier()
        dist.destroy_process_group()


if __name__ == "__main__":
    sys.exit(main())

"""Per-stage training files: TRL config kwargs, accelerate config and launch script.

The TRL kwargs are exactly what ``SFTConfig(**kwargs)`` / ``GRPOConfig(**kwargs)``
accept in TRL 1.16, minus ``output_dir`` (a run-dir path the runtime adds). The
accelerate YAML (field names of accelerate 1.15's ``ClusterConfig``) is rendered from
``templates/stages/accelerate.yaml.j2``; this is the only place craft builds one, and the
runtime launches what the plan holds. Tests load it with accelerate's own loader.
"""

from __future__ import annotations

import json

from craftc.adapters import peft_config
from craftc.emit.render import render_template
from craftc.emit.specs import reward_spec
from craftc.ir import Recipe, Stage
from craftc.version import __version__

__all__ = ["accelerate_mode", "checkpointing", "world_size", "trl_config", "trl_config_json", "accelerate_yaml", "launch_script",
           "model_classes", "peft_config_json", "curriculum_json", "batches_json", "schema_docs_json"]

# Layer classes FSDP2 wraps and DeepSpeed keeps whole, by model family (matched in the
# base model's name or path); Qwen3-MoE is tiny_moe's architecture and the default.
_MODEL_CLASSES = (
    ("gpt-oss", "GptOssDecoderLayer", "GptOssMLP"),
    ("mixtral", "MixtralDecoderLayer", "MixtralSparseMoeBlock"),
    ("qwen3", "Qwen3MoeDecoderLayer", "Qwen3MoeSparseMoeBlock"),
    # Dense Llama-architecture models (SmolLM2): the MLP is the block kept whole.
    ("smollm", "LlamaDecoderLayer", "LlamaMLP"),
    ("llama", "LlamaDecoderLayer", "LlamaMLP"),
)
_DEFAULT_CLASSES = ("Qwen3MoeDecoderLayer", "Qwen3MoeSparseMoeBlock")
# `multi_cpu` is a MULTI_GPU config with `use_cpu: true`: in accelerate 1.15 a MULTI_CPU
# config without an mpirun hostfile goes to the simple launcher, which starts ONE process.
# The MULTI_GPU launcher is torchrun, which starts `num_processes`; with `use_cpu=True` in
# the training arguments each process then selects MULTI_CPU with the gloo backend.
_DISTRIBUTED_TYPE = {"cpu": "NO", "single_gpu": "NO", "multi_cpu": "MULTI_GPU", "ddp": "MULTI_GPU",
                     "fsdp2": "FSDP", "zero3": "DEEPSPEED"}


def accelerate_mode(stage: Stage) -> str:
    """One of ``cpu``, ``single_gpu``, ``multi_cpu``, ``ddp``, ``fsdp2``, ``zero3``.

    ``gpus 0`` means CPU: ``parallel none`` is one CPU process and ``parallel ddp``
    ``processes`` CPU processes per node (DDP over gloo).
    """
    if stage.parallel == "none":
        return "cpu" if stage.gpus == 0 else "single_gpu"
    if stage.parallel == "ddp" and stage.gpus == 0:
        return "multi_cpu"
    return stage.parallel


def world_size(stage: Stage) -> int:
    """Training processes over all nodes."""
    mode = accelerate_mode(stage)
    if mode in ("cpu", "single_gpu"):
        return 1
    if mode == "multi_cpu":
        return stage.processes * stage.nodes
    return max(stage.gpus, 1) * stage.nodes


def model_classes(recipe: Recipe, stage: Stage) -> tuple[str, str]:
    """(decoder layer class, MoE block class) of the stage's base model."""
    spec = next((m for m in recipe.models if m.name == stage.base), None)
    if spec is not None and spec.source == "tiny_moe":      # Qwen3-MoE, whatever its name
        return _DEFAULT_CLASSES
    needle = f"{stage.base} {spec.path if spec and spec.path else ''}".lower()
    for key, layer, block in _MODEL_CLASSES:
        if key in needle:
            return layer, block
    return _DEFAULT_CLASSES


def checkpointing(stage: Stage) -> bool:
    """Whether the stage recomputes activations in the backward pass. `auto` is on with GPUs,
    where memory is what limits a batch, and off on CPU, where it costs about a third more
    time and the machine's memory usually holds a small model's activations."""
    if stage.checkpointing == "auto":
        return stage.gpus > 0
    return stage.checkpointing == "on"


def trl_config(recipe: Recipe, stage: Stage) -> dict:
    """The TRL ``SFTConfig``/``GRPOConfig`` keyword arguments for ``stage`` (no ``output_dir``)."""
    on_cpu = stage.gpus == 0
    per_step = stage.per_device_batch * world_size(stage)
    kwargs = {
        "num_train_epochs": float(stage.epochs),
        "max_steps": stage.steps if stage.steps is not None else -1,
        "learning_rate": stage.lr,
        # transformers 5: a float in [0, 1) is the share of steps that warm up.
        "warmup_steps": float(stage.warmup),
        "per_device_train_batch_size": stage.per_device_batch,
        "gradient_accumulation_steps": max(1, stage.batch // per_step),
        "seed": recipe.seed,
        "data_seed": recipe.seed,
        # On CPU too: bf16 autocast over float32 weights (fp16 on CPU is E524).
        "bf16": stage.mixed_precision == "bf16",
        "fp16": stage.mixed_precision == "fp16",
        "use_cpu": on_cpu,
        # `activation_checkpointing` is transformers 5's name for gradient checkpointing.
        "activation_checkpointing": checkpointing(stage),
        "logging_steps": 1,
        "save_strategy": "steps",
        "save_steps": 500,
        "save_total_limit": 2,
        # The run name (`<recipe>-<stage>-<plan hash>`) is added by the step: a name in this
        # file would change it, and retrain the stage, on every edit of the recipe.
        "report_to": recipe.track,
        # Data is tokenized before the trainer sees it; worker processes only cost start-up.
        "dataloader_num_workers": 0,
        # The step prints its own progress; TRL's bars would interleave with it.
        "disable_tqdm": True,
    }
    if stage.kind == "sft":
        # No `assistant_only_loss`: the sft step builds the labels itself from
        # specs/masking.json (TRL uses a `labels` column as it is).
        kwargs.update(max_length=stage.max_length)
    else:
        kwargs.update(
            num_generations=stage.group,
            max_completion_length=stage.max_new_tokens,
            beta=stage.beta,
            epsilon=stage.clip,
            temperature=stage.temperature,
            use_vllm=stage.rollout == "vllm",
            reward_weights=reward_spec(recipe)["trainer_weights"],
            max_tool_calling_iterations=stage.max_turns,
        )
        if stage.rollout == "vllm":     # TRL reads the mode only when it rolls out with vLLM
            kwargs["vllm_mode"] = stage.vllm_mode
    # The stage's `trl { ... }` block last: keys craft does not set from a recipe setting
    # (checked against the installed TRL at compile time: E214, E215).
    kwargs.update(dict(stage.trl))
    return dict(sorted(kwargs.items()))


def accelerate_yaml(recipe: Recipe, stage: Stage) -> str:
    """The stage's accelerate config as YAML text."""
    mode = accelerate_mode(stage)
    layer, block = model_classes(recipe, stage)
    on_cpu = mode in ("cpu", "multi_cpu")
    return render_template(
        "stages/accelerate.yaml.j2",
        stage=stage, mode=mode, version=__version__,
        # YAML 1.1 reads a bare NO as false.
        distributed_type_yaml=repr(_DISTRIBUTED_TYPE[mode]) if mode in ("cpu", "single_gpu") else _DISTRIBUTED_TYPE[mode],
        decoder_layer_class=layer, moe_block_class=block,
        nodes=stage.nodes, num_processes=world_size(stage),
        # A CPU process computes in float32 or under bf16 autocast (fp16 there is E524).
        mixed_precision=stage.mixed_precision,
        use_cpu=on_cpu,
    )


def launch_script(recipe: Recipe, stage: Stage) -> str:
    """The ``accelerate launch`` command line for the stage, as a bash script."""
    return render_template("stages/launch.sh.j2", recipe=recipe, stage=stage, nodes=stage.nodes,
                           version=__version__)


def curriculum_json(recipe: Recipe, stage: Stage) -> str:
    """``curriculum.json`` text of an sft stage with ``prefix_epochs`` or ``question_dropout``:
    the warm-up the trainer runs before the whole conversations, the tag each assistant turn
    is cut after, the history each warm-up example holds, how many renamed copies of each
    first turn follow and where they are cut, and the share of question words left out."""
    spec = {"prefix_epochs": float(stage.prefix_epochs), "cut_after": f"</{recipe.format.think}>",
            "history": stage.prefix_history}
    if stage.question_dropout:   # absent at 0, so plans written before the setting keep their bytes
        spec["question_dropout"] = float(stage.question_dropout)
    if stage.prefix_renames:   # absent at 0, so plans written before the setting keep their bytes
        spec["renames"] = stage.prefix_renames
    if stage.prefix_renames_through == "code":   # absent at `think`, for the same reason
        spec["renames_cut_after"] = f"</{recipe.format.code}>"
    return json.dumps(spec, sort_keys=True, indent=2) + "\n"


def batches_json(recipe: Recipe, stage: Stage) -> str:
    """``batches.json`` text of an sft stage with ``sampler by_prefix``: how the trainer draws its
    batches (runtime.train.prefix_sampler) and that each batch runs its shared prefix once
    (runtime.train.prefix_groups)."""
    return json.dumps({"sampler": stage.sampler}, sort_keys=True, indent=2) + "\n"


# The question each schema-doc example asks; the answer is the entity's commented DDL.
SCHEMA_DOC_QUESTION = "What does the `{view}` view hold?"
METRICS_QUESTION = "Which metrics does the `{schema}` warehouse define?"


def schema_docs_json(recipe: Recipe, stage: Stage) -> str:
    """``schema_docs.json`` text of an sft stage with ``schema_docs``: the passes and the examples
    the trainer runs first (runtime.train.schema_docs), one per entity, each answered with the
    lines the stuffed prompt shows of it, and one for the metrics."""
    from craftc.emit.binding_sql import entity_ddl, metric_lines

    schema = recipe.schema_

    def example(question: str, lines: list[str]) -> dict:
        return {"messages": [{"role": "user", "content": question},
                             {"role": "assistant", "content": "\n".join(lines)}]}

    examples = [example(SCHEMA_DOC_QUESTION.format(view=e.view), entity_ddl(schema, e)) for e in schema.entities]
    if schema.metrics:
        examples.append(example(METRICS_QUESTION.format(schema=schema.name), metric_lines(schema)))
    return json.dumps({"passes": float(stage.schema_docs), "examples": examples}, sort_keys=True, indent=2,
                      ensure_ascii=False) + "\n"


def peft_config_json(recipe: Recipe, stage: Stage) -> str:
    """``peft_config.json`` text: ``LoraConfig`` keyword arguments of a stage with ``lora { ... }``."""
    assert stage.lora is not None
    return json.dumps(peft_config(recipe, stage, stage.lora), sort_keys=True, indent=2) + "\n"


def trl_config_json(recipe: Recipe, stage: Stage) -> str:
    """``trl_config.json`` text."""
    return json.dumps(trl_config(recipe, stage), sort_keys=True, indent=2, ensure_ascii=False) + "\n"

"""Training-engine checks: what a stage's engine reads, and verl's batch and parallelism arithmetic.

A grpo stage trains with TRL (``engine trl``, the default) or verl (``engine verl``).
Each engine lowers the stage to its own launcher, so a setting the other engine reads
would silently do nothing (E516). verl's own ``validate_config`` refuses a job whose
GPUs, rollouts and micro-batches do not divide, but only once a cluster has started:
these checks say it at the recipe line, at compile time (E513, E514, E515).
"""

from __future__ import annotations

from craftc.diagnostics import DiagnosticSink
from craftc.ir import GRPO_VERL_ONLY, TRL_ONLY, VERL_ONLY, GRPOStage, Stage
from craftc.lower import setting_span
from craftc.syntax import Block

__all__ = ["check_engine", "verl_data_parallel", "verl_model_parallel"]

_VERL_PARALLEL = ("fsdp2", "megatron")


def verl_model_parallel(s: GRPOStage) -> int:
    """GPUs one model replica spans in training: TP x PP x CP under Megatron, 1 under FSDP."""
    if s.parallel != "megatron":
        return 1
    return s.tensor_parallel * s.pipeline_parallel * s.context_parallel


def verl_data_parallel(s: GRPOStage) -> int:
    """Data-parallel ranks of a verl stage (at least 1)."""
    return max(1, s.gpus * s.nodes // verl_model_parallel(s))


def _where(block: Block | None, key: str):
    return setting_span(block, key) or (block.name_span if block else None)


def check_engine(s: Stage, block: Block | None, sink: DiagnosticSink) -> None:
    """Every engine problem of one stage, reported to ``sink``."""
    if not isinstance(s, GRPOStage) or s.engine == "trl":
        _check_trl(s, block, sink)
        return
    _check_verl_values(s, block, sink)
    if s.gpus >= 1 and s.parallel in _VERL_PARALLEL:
        _check_verl_arithmetic(s, block, sink)


def _other_engine(sink, s: Stage, block, key: str, text: str, fix: str) -> None:
    sink.error("E516", f"stage `{s.name}`: {text}", _where(block, key), fix)


def _check_trl(s: Stage, block: Block | None, sink) -> None:
    trains = "sft stages train with TRL" if s.kind == "sft" else "`engine trl`"
    if s.parallel == "megatron":
        _other_engine(sink, s, block, "parallel", f"`parallel megatron` needs `engine verl`, not {trains}",
                      "use `parallel fsdp2` or `zero3`, or add `engine verl` to a grpo stage")
    if isinstance(s, GRPOStage):
        if s.rollout == "sglang":
            _other_engine(sink, s, block, "rollout", "`rollout sglang` needs `engine verl`",
                          "use `rollout vllm` or `transformers`, or add `engine verl`")
        written = {st.key for st in block.settings} if block else set()
        for key in (*VERL_ONLY, *GRPO_VERL_ONLY):
            if _is_set(s, key, written):
                _other_engine(sink, s, block, key, f"`{key}` is read only by `engine verl`",
                              _ENGINE_ONLY_FIX.get(key, f"add `engine verl`, or remove `{key}`"))


def _is_set(s: GRPOStage, key: str, written: set[str]) -> bool:
    """Away from its default (set where a profile's block cannot show it), or written in the stage's block.

    Written at a default that means "off" (`dynamic_sampling 0`, `shared_prefix off`) is not
    set: that is how a verl profile turns off what its base stage turned on for `engine trl`.
    """
    default = GRPOStage.model_fields[key].default
    return getattr(s, key) != default or (key in written and default not in (0, False, "off"))


# What to write instead of a setting the stage's engine does not read, where the general
# "remove it" needs a reason (verl-only settings under trl, TRL-only ones under verl).
_ENGINE_ONLY_FIX = {
    "max_length": "remove `max_length`: TRL's GRPO cuts no prompt (the sft stage's `max_length` cuts its "
                  "examples), or add `engine verl`, where it is the prompt length",
    "trl": "remove the `trl` block from this stage",
    "lora": "remove the `lora` block: craft lowers a LoRA adapter for `engine trl` only (verl's own "
            "`actor_rollout_ref.model.lora_rank` is not lowered), or use `engine trl`",
    "measure": "remove `measure`: verl's main_ppo logs its own rollout rewards, and craft measures none",
    "measure_every": "remove `measure_every`: verl's main_ppo logs its own rollout rewards, and craft measures none",
    "processes": "remove `processes`: verl runs one process per GPU (`gpus`)",
}


def _check_verl_values(s: GRPOStage, block: Block | None, sink) -> None:
    if s.rollout == "transformers":
        _other_engine(sink, s, block, "rollout", "`engine verl` rolls out with vLLM or SGLang, not transformers",
                      "write `rollout vllm` or `rollout sglang`")
    elif s.rollout == "vllm" and s.vllm_mode == "server":
        _other_engine(sink, s, block, "rollout", "`engine verl` runs vLLM colocated with training, not as a server",
                      "write `rollout vllm, colocate` (or `rollout vllm`)")
    if s.parallel not in _VERL_PARALLEL:
        _other_engine(sink, s, block, "parallel", f"`engine verl` trains with FSDP or Megatron, not "
                      f"`parallel {s.parallel}`", "write `parallel fsdp2` or `parallel megatron`")
    if s.gpus == 0:
        _other_engine(sink, s, block, "gpus", "`engine verl` trains on GPUs only, and `gpus` is 0",
                      "set `gpus` to the GPUs per node (e.g. `gpus 8`), or use `engine trl` on CPU")
    written = {st.key for st in block.settings} if block else set()
    if "history" in written and s.history == "policy":
        _other_engine(sink, s, block, "history", "`history policy` is read only by `engine trl`: verl's rows are "
                      "one user turn each, on the reference earlier turns",
                      "write `history reference` (what verl does), or remove `history`")
    for key in TRL_ONLY:
        if _is_set(s, key, written):
            _other_engine(sink, s, block, key, f"`{key}` is read only by `engine trl`",
                          _ENGINE_ONLY_FIX.get(key, f"remove `{key}`"))
    if s.parallel == "fsdp2":
        for key in ("tensor_parallel", "pipeline_parallel", "context_parallel", "expert_parallel"):
            if getattr(s, key) > 1:
                _other_engine(sink, s, block, key, f"`{key} {getattr(s, key)}` needs `parallel megatron`",
                              f"write `parallel megatron`, or remove `{key}` (FSDP shards the whole model)")


def _check_verl_arithmetic(s: GRPOStage, block: Block | None, sink) -> None:
    gpus = s.gpus * s.nodes
    model = verl_model_parallel(s)
    if gpus % model:
        sink.error("E513", f"stage `{s.name}`: {gpus} GPU(s) are not a multiple of tensor_parallel "
                   f"{s.tensor_parallel} x pipeline_parallel {s.pipeline_parallel} x context_parallel "
                   f"{s.context_parallel} = {model}", _where(block, "tensor_parallel"),
                   "choose parallel sizes whose product divides `gpus` x `nodes`")
        return
    if s.parallel == "megatron" and (gpus // s.pipeline_parallel) % s.expert_parallel:
        sink.error("E513", f"stage `{s.name}`: expert_parallel {s.expert_parallel} does not divide the "
                   f"{gpus // s.pipeline_parallel} GPU(s) of a pipeline stage", _where(block, "expert_parallel"),
                   "choose an `expert_parallel` that divides `gpus` x `nodes` / `pipeline_parallel`")
    if s.gpus % s.rollout_tensor_parallel:
        sink.error("E513", f"stage `{s.name}`: rollout_tensor_parallel {s.rollout_tensor_parallel} does not "
                   f"divide the {s.gpus} GPU(s) of a node", _where(block, "rollout_tensor_parallel"),
                   "choose a `rollout_tensor_parallel` that divides `gpus`")
    data = verl_data_parallel(s)
    minimal = data * s.per_device_batch if s.parallel == "megatron" else gpus
    if s.batch % minimal:
        what = (f"{data} data-parallel rank(s) x per_device_batch {s.per_device_batch}"
                if s.parallel == "megatron" else f"{gpus} GPU(s)")
        sink.error("E514", f"stage `{s.name}`: {s.batch} rollouts per step (batch {s.batch} = "
                   f"{s.batch // s.group} prompts x group {s.group}) are not a multiple of {what} = {minimal}",
                   _where(block, "batch"), f"use a batch of {minimal * max(1, round(s.batch / minimal))}")
        return
    per_rank = s.batch // data
    if s.per_device_batch > per_rank or per_rank % s.per_device_batch:
        sink.error("E515", f"stage `{s.name}`: per_device_batch {s.per_device_batch} does not divide the "
                   f"{per_rank} rollouts each of {data} data-parallel rank(s) gets per step",
                   _where(block, "per_device_batch"),
                   f"use a per_device_batch that divides {per_rank}")

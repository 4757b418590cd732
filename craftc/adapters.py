"""LoRA adapters: the module names a known base model has, and the PEFT config of a stage.

The compiler never loads a model, so the names LoRA may target are known here only for
the embedded ``tiny_moe`` (a Qwen3-MoE: the attention projections are ``nn.Linear``
modules, the router is not and cannot be targeted; transformers 5 fuses each layer's experts into two 3-D
parameters, ``mlp.experts.gate_up_proj`` and ``mlp.experts.down_proj``, which PEFT
reaches through ``target_parameters``, not ``target_modules``). A test builds tiny_moe
and compares these tables with its real module tree. A hub or path model's targets go
to ``target_modules`` as written; PEFT names any that match nothing when training starts.
"""

from __future__ import annotations

from craftc.ir import LoraAdapter, Recipe, Stage

__all__ = ["TINY_MOE_LINEAR", "TINY_MOE_EXPERT_PARAMS", "known_targets", "peft_config"]

TINY_MOE_LINEAR: tuple[str, ...] = ("q_proj", "k_proj", "v_proj", "o_proj")
TINY_MOE_EXPERT_PARAMS: tuple[str, ...] = ("gate_up_proj", "down_proj")
_EXPERTS_PATH = "mlp.experts"


def known_targets(recipe: Recipe, stage: Stage) -> tuple[str, ...] | None:
    """The names LoRA may target on the stage's base model, or None when unknown at compile time."""
    spec = next((m for m in recipe.models if m.name == stage.base), None)
    if spec is not None and spec.source == "tiny_moe":
        return TINY_MOE_LINEAR + TINY_MOE_EXPERT_PARAMS
    return None


def peft_config(recipe: Recipe, stage: Stage, lora: LoraAdapter) -> dict:
    """``LoraConfig(**kwargs)`` keyword arguments for the stage (PEFT 0.21).

    Example:
        >>> from craftc.ir import GRPOStage
        >>> stage = GRPOStage(name="grpo", base="org/m")
        >>> peft_config(Recipe(name="r", schema={"name": "s", "version": 1, "source": "s"}),
        ...             stage, LoraAdapter(r=8, targets=("q_proj",)))["target_modules"]
        ['q_proj']
    """
    fused = known_targets(recipe, stage) is not None
    params = [f"{_EXPERTS_PATH}.{t}" for t in lora.targets if fused and t in TINY_MOE_EXPERT_PARAMS]
    modules = [t for t in lora.targets if not (fused and t in TINY_MOE_EXPERT_PARAMS)]
    return {
        "r": lora.r,
        "lora_alpha": lora.alpha,
        "lora_dropout": lora.dropout,
        "target_modules": modules,
        "target_parameters": params,
        "bias": "none",
        "task_type": "CAUSAL_LM",
    }

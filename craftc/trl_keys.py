"""The TRL config keys a stage may pass through, read from the installed TRL's source.

A ``trl { key value ... }`` block inside a stage hands keys straight to TRL's
``SFTConfig`` (sft stages) or ``GRPOConfig`` (grpo stages). Compiling must stay fast,
so TRL is never imported here: the installed package is located with
``importlib.util.find_spec`` and the config dataclasses' field names are read from
their source with :mod:`ast` (``trl/trainer/sft_config.py``,
``trl/trainer/grpo_config.py``, their base ``trl/trainer/base_config.py`` and
transformers' ``training_args.py``), once per process.

:data:`CRAFT_TO_TRL` is the one table of which TRL keys craft sets itself from recipe
settings; those are refused in a ``trl`` block in favour of the craft setting.
"""

from __future__ import annotations

import ast
import importlib.util
from functools import cache
from pathlib import Path

__all__ = ["CRAFT_TO_TRL", "TRL_KEY_SETTING", "TRL_CONFIG_CLASSES", "TrlUnavailable",
           "trl_config_keys"]

# Craft setting -> the TRL config keys craft's emitted trl_config.json fills from it.
CRAFT_TO_TRL: dict[str, tuple[str, ...]] = {
    "epochs": ("num_train_epochs",),
    "steps": ("max_steps",),
    "lr": ("learning_rate",),
    "warmup": ("warmup_steps", "warmup_ratio"),
    "per_device_batch": ("per_device_train_batch_size",),
    "batch": ("gradient_accumulation_steps",),
    "max_length": ("max_length",),
    "mask": ("assistant_only_loss",),
    "mixed_precision": ("bf16", "fp16"),
    "checkpointing": ("activation_checkpointing", "gradient_checkpointing"),
    "gpus": ("use_cpu",),
    "seed": ("seed", "data_seed"),
    "group": ("num_generations",),
    "max_new_tokens": ("max_completion_length",),
    "temperature": ("temperature",),
    "beta": ("beta",),
    "clip": ("epsilon",),
    "rollout": ("use_vllm", "vllm_mode"),
    "max_turns": ("max_tool_calling_iterations",),
    "reward": ("reward_weights",),
    "track": ("report_to",),
    "craftc run": ("output_dir",),       # the run dir, chosen when the plan runs
}
# TRL key -> the craft setting that sets it.
TRL_KEY_SETTING: dict[str, str] = {key: setting for setting, keys in CRAFT_TO_TRL.items()
                                   for key in keys}

# Stage kind -> the TRL config class its trainer takes.
TRL_CONFIG_CLASSES: dict[str, str] = {"sft": "SFTConfig", "grpo": "GRPOConfig"}

_SOURCES = (("trl", "trainer/base_config.py"), ("trl", "trainer/sft_config.py"),
            ("trl", "trainer/grpo_config.py"), ("transformers", "training_args.py"))


class TrlUnavailable(Exception):
    """TRL (or the source of its config classes) cannot be found; the reason is the message."""


def trl_config_keys(kind: str) -> frozenset[str]:
    """The keyword arguments the installed TRL's config class for a stage kind accepts.

    Raises:
        TrlUnavailable: TRL is not installed or its config source cannot be read.

    Example:
        >>> "save_total_limit" in trl_config_keys("sft")
        True
    """
    return _fields(TRL_CONFIG_CLASSES[kind], _class_index())


@cache
def _class_index() -> dict[str, ast.ClassDef]:
    index: dict[str, ast.ClassDef] = {}
    for package, relative in _SOURCES:
        spec = importlib.util.find_spec(package)
        if spec is None or spec.origin is None:
            raise TrlUnavailable(f"`{package}` is not installed")
        path = Path(spec.origin).parent / relative
        if not path.exists():
            continue                # a layout without this file; a missing base is caught below
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        index.update({node.name: node for node in tree.body if isinstance(node, ast.ClassDef)})
    return index


def _fields(name: str, index: dict[str, ast.ClassDef]) -> frozenset[str]:
    node = index.get(name)
    if node is None:
        raise TrlUnavailable(f"cannot find the source of `{name}` in the installed TRL")
    names = {stmt.target.id for stmt in node.body
             if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)
             and not stmt.target.id.startswith("_") and _is_init_field(stmt)}
    for base in node.bases:
        base_name = base.id if isinstance(base, ast.Name) else getattr(base, "attr", None)
        if base_name not in (None, "object"):
            names |= _fields(base_name, index)
    return frozenset(names)


def _is_init_field(stmt: ast.AnnAssign) -> bool:
    """False for ``field(init=False)``, which the config's constructor does not take."""
    call = stmt.value
    if isinstance(call, ast.Call) and getattr(call.func, "id", getattr(call.func, "attr", "")) == "field":
        return not any(k.arg == "init" and isinstance(k.value, ast.Constant) and k.value.value is False
                       for k in call.keywords)
    return True

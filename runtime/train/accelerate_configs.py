"""`accelerate` config files for each parallel mode a recipe profile can ask for.

Field names are accelerate 1.15's (`accelerate/commands/config/config_args.py`
`ClusterConfig`, and the interactive `accelerate config` questions in
`accelerate/commands/config/cluster.py`). The output is plain data, so the compiler can
emit it byte-for-byte reproducibly, and tests load it back with accelerate's own loader.

Modes:
    cpu      one process, no distribution.
    ddp_cpu  N processes on CPU, DDP over gloo. accelerate 1.15 only starts several CPU
             processes through torchrun's launcher (a `MULTI_CPU` config without an
             mpirun hostfile starts ONE process), so this is a `MULTI_GPU`-launcher config
             with `use_cpu: true`; transformers' `use_cpu=True` then selects gloo.
             craftc emits this config for a stage with `parallel ddp  gpus 0  processes N`.
    ddp      N GPUs per node, DDP over NCCL.
    fsdp2    FSDP version 2, wrapping each transformer decoder layer.
    zero3    DeepSpeed ZeRO-3; the MoE block is a ZeRO-3 leaf module
             (`deepspeed_moe_layer_cls_names`), so each rank gathers a whole expert block
             at once instead of hanging on experts that other ranks did not route to.

Example:
    >>> accelerate_config("ddp", gpus=8, nodes=1)["num_processes"]
    8
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

__all__ = ["PARALLEL_MODES", "AccelerateConfigError", "accelerate_config", "write_accelerate_config"]

PARALLEL_MODES = ("cpu", "ddp_cpu", "ddp", "fsdp2", "zero3")
_PRECISIONS = ("no", "fp16", "bf16", "fp8")
_CPU_MODES = ("cpu", "ddp_cpu")


class AccelerateConfigError(ValueError):
    """The requested parallel setup cannot be expressed as an accelerate config."""


def _check(parallel, gpus, nodes, mixed_precision, main_process_ip) -> list[str]:
    errors = []
    if parallel not in PARALLEL_MODES:
        errors.append(f"unknown parallel mode `{parallel}` (choose one of: {', '.join(PARALLEL_MODES)})")
    if not isinstance(gpus, int) or gpus < 1:
        errors.append(f"`gpus` must be an integer >= 1 (processes per node), got {gpus!r}")
    if not isinstance(nodes, int) or nodes < 1:
        errors.append(f"`nodes` must be an integer >= 1, got {nodes!r}")
    if mixed_precision not in _PRECISIONS:
        errors.append(f"`mixed_precision` must be one of {', '.join(_PRECISIONS)}, got {mixed_precision!r}")
    elif parallel in _CPU_MODES and mixed_precision != "no":
        errors.append(f"`{parallel}` runs in float32 on CPU: set mixed_precision `no`, not `{mixed_precision}`")
    if parallel == "cpu" and (gpus != 1 or nodes != 1):
        errors.append("`cpu` is a single process: use `ddp_cpu` for several CPU processes")
    if isinstance(nodes, int) and nodes > 1 and not main_process_ip:
        errors.append(f"{nodes} nodes need `main_process_ip` (the address of the node with machine_rank 0)")
    return errors


def accelerate_config(
    parallel: str,
    gpus: int = 1,
    nodes: int = 1,
    mixed_precision: str | None = None,
    moe_block_class: str = "Qwen3MoeSparseMoeBlock",
    decoder_layer_class: str = "Qwen3MoeDecoderLayer",
    main_process_ip: str | None = None,
    main_process_port: int = 29500,
) -> dict:
    """Build the accelerate config dict for a parallel mode.

    Args:
        parallel: One of `PARALLEL_MODES`.
        gpus: Processes per node (GPUs, or CPU processes for `ddp_cpu`: a recipe stage's
            `processes`).
        nodes: Machines. Above 1, each node launches with its own `--machine_rank`.
        mixed_precision: `no|fp16|bf16|fp8`; default `no` on CPU, `bf16` on GPU.
        moe_block_class: The MoE block class DeepSpeed treats as a ZeRO-3 leaf.
        decoder_layer_class: The layer class FSDP2 wraps.
        main_process_ip: Address of the rank-0 node (required when `nodes > 1`).
        main_process_port: Rendezvous port.

    Returns:
        A dict that `accelerate.commands.config.config_args.ClusterConfig` accepts.

    Raises:
        AccelerateConfigError: Listing every problem with the request.
    """
    if mixed_precision is None:
        mixed_precision = "no" if parallel in _CPU_MODES else "bf16"
    errors = _check(parallel, gpus, nodes, mixed_precision, main_process_ip)
    if errors:
        raise AccelerateConfigError("cannot build the accelerate config:\n  " + "\n  ".join(errors))

    config = {
        "compute_environment": "LOCAL_MACHINE",
        "debug": False,
        "mixed_precision": mixed_precision,
        "num_machines": nodes,
        "machine_rank": 0,
        # accelerate's num_processes counts every process on every machine.
        "num_processes": gpus * nodes,
        "rdzv_backend": "static",
        "same_network": True,
        "use_cpu": parallel in _CPU_MODES,
    }
    if nodes > 1:
        config.update(main_process_ip=main_process_ip, main_process_port=main_process_port)
    if parallel == "cpu":
        config["distributed_type"] = "NO"
    elif parallel == "ddp_cpu":
        config["distributed_type"] = "MULTI_GPU"  # the torchrun launcher; see the module docstring
    elif parallel == "ddp":
        config.update(distributed_type="MULTI_GPU", gpu_ids="all")
    elif parallel == "fsdp2":
        config["distributed_type"] = "FSDP"
        config["fsdp_config"] = {
            "fsdp_version": 2,
            "fsdp_auto_wrap_policy": "TRANSFORMER_BASED_WRAP",
            "fsdp_transformer_layer_cls_to_wrap": decoder_layer_class,
            "fsdp_cpu_ram_efficient_loading": True,
            "fsdp_offload_params": False,
            "fsdp_reshard_after_forward": True,
            # A full state dict so `final/` is an ordinary model dir.
            "fsdp_state_dict_type": "FULL_STATE_DICT",
            "fsdp_activation_checkpointing": False,
        }
    elif parallel == "zero3":
        config["distributed_type"] = "DEEPSPEED"
        config["deepspeed_config"] = {
            "zero_stage": 3,
            "offload_optimizer_device": "none",
            "offload_param_device": "none",
            "zero3_init_flag": True,
            "zero3_save_16bit_model": True,
            "deepspeed_moe_layer_cls_names": moe_block_class,
            "deepspeed_multinode_launcher": "standard",
        }
    return config


def write_accelerate_config(config: dict, path: str | os.PathLike) -> Path:
    """Write `config` as YAML (sorted keys, so the bytes are reproducible), atomically."""
    import yaml

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        yaml.safe_dump(config, f, sort_keys=True)
    os.replace(tmp, path)
    return path

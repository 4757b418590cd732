"""A grpo stage with ``engine verl``, lowered to verl 0.9.1's ``main_ppo`` and its plug-in files.

Every file here is pure text from the IR. The stage's settings become hydra overrides
(``verl_overrides.txt``, one per line, read by ``launch.sh``) wherever a setting means
the same thing in verl; the paths that only exist where the job runs (model, data,
warehouse, output) are added by ``launch.sh`` from the step config. The tool, agent
loop and reward manager are craft runtime classes, named here by import path:

- ``tool_config.yaml``: the ``run_code`` tool (``runtime.train.verl.tool.CraftCodeTool``),
  which runs a ``<CODE>`` block in craft's sandbox;
- ``agent_loop.yaml``: ``craft_tool_agent`` (``runtime.train.verl.agent_loop``), verl's
  tool agent loop that also records the policy's own text of each turn;
- ``reward.py``: the file verl loads by path, re-exporting craft's ``compute_score``
  and the reward manager that scores that policy-only text (never the tool output);
- ``rl_data.json``: how the grpo step writes verl's RL parquet from the train instances.
"""

from __future__ import annotations

import json

from craftc.check.engines import verl_data_parallel
from craftc.emit.render import render_template
from craftc.emit.specs import reward_spec
from craftc.emit.stages import checkpointing
from craftc.ir import REWARD_COMPONENTS, GRPOStage, Recipe
from craftc.version import __version__

__all__ = ["VERL_FILES", "verl_overrides", "verl_overrides_text", "verl_launch_script", "tool_config_yaml",
           "agent_loop_yaml", "rl_data_spec", "reward_entry", "verl_files"]

# Files of `stages/<name>/` for a verl stage (the trl stage's are trl_config.json and accelerate.yaml).
VERL_FILES = ("launch.sh", "verl_overrides.txt", "tool_config.yaml", "agent_loop.yaml", "reward.py", "rl_data.json")
AGENT_LOOP = "craft_tool_agent"
DATA_SOURCE = "craft"


def _strategy(stage: GRPOStage) -> list[str]:
    if stage.parallel == "megatron":
        mg = "actor_rollout_ref.actor.megatron"
        return ["model_engine=megatron",
                f"{mg}.tensor_model_parallel_size={stage.tensor_parallel}",
                f"{mg}.pipeline_model_parallel_size={stage.pipeline_parallel}",
                f"{mg}.context_parallel_size={stage.context_parallel}",
                f"{mg}.expert_model_parallel_size={stage.expert_parallel}"]
    return ["model_engine=dp", "actor_rollout_ref.actor.strategy=fsdp2",
            "actor_rollout_ref.ref.strategy=fsdp2"]


# `mixed_precision` as the torch dtype verl's actor and reference engines compute in
# (`no` trains in fp32, as under TRL). The rollout engine keeps verl's own dtype.
_DTYPE = {"no": "float32", "bf16": "bfloat16", "fp16": "float16"}


def _dtype(stage: GRPOStage) -> list[str]:
    engine = "megatron" if stage.parallel == "megatron" else "fsdp_config"
    return [f"actor_rollout_ref.{role}.{engine}.dtype={_DTYPE[stage.mixed_precision]}" for role in ("actor", "ref")]


def _reward(recipe: Recipe, stage: GRPOStage) -> list[str]:
    spec = reward_spec(recipe)
    kwargs = "+reward.custom_reward_function.reward_kwargs"
    weights = [f"{kwargs}.{c}={spec['weights'][c]!r}" for c in REWARD_COMPONENTS if c in spec["weights"]]
    lines = ["reward.custom_reward_function.name=compute_score",
             "reward.reward_manager.source=importlib", "reward.reward_manager.name=CraftRewardManager",
             *weights, f"{kwargs}.aggregate={spec['aggregate']}"]
    if stage.advantage == "gdpo":
        # GDPO normalises each component within its group, then weights them (the recipe's weights).
        keys = [c for c in REWARD_COMPONENTS if c in spec["weights"]]
        lines += [f"+algorithm.gdpo_reward_keys=[{','.join(keys)}]",
                  f"+algorithm.gdpo_reward_weights=[{','.join(repr(spec['weights'][c]) for c in keys)}]"]
    return lines


def _checkpointing(stage: GRPOStage) -> list[str]:
    """verl recomputes activations unless told otherwise, which is `auto`'s choice on GPUs;
    only a recipe's explicit `checkpointing on|off` is passed on."""
    if stage.checkpointing == "auto":
        return []
    return [f"actor_rollout_ref.model.enable_gradient_checkpointing={'true' if checkpointing(stage) else 'false'}"]


def verl_overrides(recipe: Recipe, stage: GRPOStage) -> list[str]:
    """The stage's hydra overrides for ``verl.trainer.main_ppo``, without run-time paths."""
    prompts = stage.batch // stage.group
    rollout = "actor_rollout_ref.rollout"
    turns = f"{rollout}.multi_turn"
    micro = stage.per_device_batch
    steps = [f"trainer.total_training_steps={stage.steps}"] if stage.steps else []
    return [
        f"algorithm.adv_estimator={stage.advantage}",
        "algorithm.use_kl_in_reward=false",
        *_strategy(stage),
        *_dtype(stage),
        f"data.train_batch_size={prompts}",
        f"data.max_prompt_length={stage.max_length}",
        # verl's response budget covers the whole trajectory, tool responses included.
        f"data.max_response_length={stage.max_new_tokens * stage.max_turns}",
        "data.return_raw_chat=true",
        f"data.seed={recipe.seed}",
        f"actor_rollout_ref.actor.optim.lr={stage.lr!r}",
        f"actor_rollout_ref.actor.optim.lr_warmup_steps_ratio={stage.warmup!r}",
        # One optimiser step per rollout batch, as TRL's GRPO does.
        f"actor_rollout_ref.actor.ppo_mini_batch_size={prompts}",
        f"actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu={micro}",
        f"actor_rollout_ref.actor.use_kl_loss={'true' if stage.beta > 0 else 'false'}",
        f"actor_rollout_ref.actor.kl_loss_coef={stage.beta!r}",
        f"actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu={micro}",
        f"{rollout}.log_prob_micro_batch_size_per_gpu={micro}",
        f"{rollout}.name={stage.rollout}",
        f"{rollout}.mode=async",
        f"{rollout}.n={stage.group}",
        f"{rollout}.temperature={stage.temperature!r}",
        f"{rollout}.tensor_model_parallel_size={stage.rollout_tensor_parallel}",
        f"{turns}.enable=true",
        f"{turns}.max_assistant_turns={stage.max_turns}",
        f"{turns}.max_user_turns={stage.max_turns}",
        # One <CODE> block per turn.
        f"{turns}.max_parallel_calls=1",
        f"{turns}.max_tool_response_length={stage.max_tool_response}",
        f"{turns}.format={stage.tool_format}",
        f"{rollout}.agent.default_agent_loop={AGENT_LOOP}",
        *_reward(recipe, stage),
        *_checkpointing(stage),
        # verl loads the actor with flash-attention 2 unless told otherwise, and flash-attn is
        # no part of torch (the lent GPU machine's image has none); SDPA is in every torch.
        "+actor_rollout_ref.model.override_config.attn_implementation=sdpa",
        "trainer.critic_warmup=0",
        "trainer.logger=[console]",
        "trainer.val_before_train=false",
        "trainer.test_freq=-1",
        "trainer.save_freq=-1" if not stage.steps else f"trainer.save_freq={stage.steps}",
        f"trainer.project_name={recipe.name}",
        f"trainer.experiment_name={recipe.profile}-{stage.name}",
        f"trainer.n_gpus_per_node={stage.gpus}",
        f"trainer.nnodes={stage.nodes}",
        f"trainer.total_epochs={max(1, round(stage.epochs))}",
        *steps,
    ]


def verl_overrides_text(recipe: Recipe, stage: GRPOStage) -> str:
    """``verl_overrides.txt``: one hydra override per line, with a header comment."""
    head = (f"# Stage `{stage.name}` of recipe `{recipe.name}`, engine verl: "
            f"hydra overrides for verl.trainer.main_ppo, generated by craftc {__version__}.\n"
            f"# {verl_data_parallel(stage)} data-parallel rank(s); launch.sh adds the run-time paths.\n")
    return head + "\n".join(verl_overrides(recipe, stage)) + "\n"


def verl_launch_script(recipe: Recipe, stage: GRPOStage) -> str:
    """``launch.sh``: Ray head/worker start and ``python -m verl.trainer.main_ppo`` with the overrides."""
    return render_template("stages/verl_launch.sh.j2", recipe=recipe, stage=stage, version=__version__)


def _yaml(data, **options) -> str:
    # PyYAML is imported here, not at the top: only verl stages write YAML, and its
    # import (about 15 ms) would otherwise be paid by every `craftc compile`.
    import yaml

    return yaml.safe_dump(data, sort_keys=True, **options)


def tool_config_yaml(recipe: Recipe, stage: GRPOStage) -> str:
    """verl's tool list: craft's ``run_code`` tool with the sandbox limits of ``gate execution``."""
    gate = recipe.gates.execution
    doc = next((t.doc for t in recipe.tools if t.kind == "run_code" and t.doc), "") or (
        "Run Python code against the analytics warehouse through `api`; the value of `result` is returned.")
    tool = {
        "class_name": "runtime.train.verl.tool.CraftCodeTool",
        "config": {"type": "native", "timeout_s": gate.timeout_s, "memory_mb": gate.memory_mb,
                   "workers": gate.workers, "secret_env": list(gate.secret_env),
                   "code_tag": recipe.format.code},
        "tool_schema": {"type": "function", "function": {
            "name": "run_code", "description": doc,
            "parameters": {"type": "object", "properties": {"code": {"type": "string", "description":
                           f"the Python code of the <{recipe.format.code}> block"}}, "required": ["code"]}}},
    }
    return _yaml({"tools": [tool]}, allow_unicode=True)


def agent_loop_yaml() -> str:
    """verl's agent-loop registry entry for craft's loop."""
    return _yaml([{"name": AGENT_LOOP, "_target_": "runtime.train.verl.agent_loop.CraftToolAgentLoop"}])


def rl_data_spec(recipe: Recipe, stage: GRPOStage) -> dict:
    """How the grpo step writes verl's RL parquet: columns and what fills them."""
    return {
        "agent_name": AGENT_LOOP,
        "data_source": DATA_SOURCE,
        "ability": "schema_grounded_analytics",
        "prompt": f"the stage's `{stage.input}` system prompt and the user turn, as a chat list",
        "reward_model": {"style": "rule", "ground_truth": "the reference solution's result, as JSON"},
        "extra_info": ["index", "split", "instance", "params", "expectations", "need_tools_kwargs", "tools_kwargs"],
        "tools_kwargs": {"run_code": {"create_kwargs": ["params"]}},
        "format": recipe.format.model_dump(mode="json"),
    }


def reward_entry(recipe: Recipe, stage: GRPOStage) -> str:
    """``reward.py``: the file verl loads by path for ``compute_score`` and the reward manager."""
    return (f'"""verl entry points of stage `{stage.name}` (recipe `{recipe.name}`), generated by craftc {__version__}.\n\n'
            "verl loads this file by path (reward.custom_reward_function.path and reward.reward_manager.module.path).\n"
            "The reward manager scores only the policy's own text of each turn (recorded by craft's agent loop),\n"
            "never the decoded response with tool output in it: see runtime/train/verl/reward.py.\n"
            '"""\n\n'
            "from runtime.train.verl.reward import CraftRewardManager, compute_score\n\n"
            '__all__ = ["CraftRewardManager", "compute_score"]\n')


def verl_files(recipe: Recipe, stage: GRPOStage) -> dict[str, str]:
    """``stages/<name>/`` file name -> text, for a verl stage."""
    return {
        "launch.sh": verl_launch_script(recipe, stage),
        "verl_overrides.txt": verl_overrides_text(recipe, stage),
        "tool_config.yaml": tool_config_yaml(recipe, stage),
        "agent_loop.yaml": agent_loop_yaml(),
        "reward.py": reward_entry(recipe, stage),
        "rl_data.json": json.dumps(rl_data_spec(recipe, stage), sort_keys=True, indent=2) + "\n",
    }

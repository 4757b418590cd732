"""The compiled verl overrides compose with verl's own hydra config and pass its validation.

Runs where verl 0.9.1 is installed (`make test-verl`); elsewhere every test here is
skipped with that reason printed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("verl", reason="verl is not installed here: `make test-verl` runs these tests in .venv-verl")

from verl_support import RECIPE, compile_plan  # noqa: E402


def launch_overrides(plan: Path, model: str = "/models/base") -> list[str]:
    """What launch.sh passes: the plan's overrides plus its run-time paths."""
    stage = plan / "stages/grpo"
    lines = [x for x in (stage / "verl_overrides.txt").read_text().splitlines() if x and not x.startswith("#")]
    return [*lines, f"actor_rollout_ref.model.path={model}", "data.train_files=/run/grpo/train.parquet",
            "data.val_files=/run/grpo/train.parquet",
            f"actor_rollout_ref.rollout.multi_turn.tool_config_path={stage / 'tool_config.yaml'}",
            f"actor_rollout_ref.rollout.agent.agent_loop_config_path={stage / 'agent_loop.yaml'}",
            f"reward.custom_reward_function.path={stage / 'reward.py'}",
            f"reward.reward_manager.module.path={stage / 'reward.py'}",
            f"+reward.custom_reward_function.reward_kwargs.plan_dir={plan}",
            "+ray_kwargs.ray_init.runtime_env.env_vars.CRAFT_WAREHOUSE=/run/world/warehouse.duckdb",
            "trainer.default_local_dir=/run/grpo/checkpoints"]


def compose(overrides: list[str]):
    import verl
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir

    with initialize_config_dir(config_dir=str(Path(verl.__file__).parent / "trainer/config"), version_base=None):
        return hydra_compose("ppo_trainer", overrides=overrides)


def test_the_launch_script_passes_every_override_the_test_composes(verl_plan):
    script = (verl_plan / "stages/grpo/launch.sh").read_text()
    for line in launch_overrides(verl_plan)[-10:]:
        key = line.split("=")[0]
        assert f'"{key}=' in script, key


def test_compiled_overrides_compose_and_pass_validate_config(verl_plan):
    from verl.utils.config import validate_config

    cfg = compose(launch_overrides(verl_plan))
    validate_config(cfg, use_reference_policy=False, use_critic=False)
    # What the recipe said, as verl reads it.
    assert cfg.actor_rollout_ref.actor.strategy == "megatron"
    assert cfg.actor_rollout_ref.actor.megatron.tensor_model_parallel_size == 4
    assert cfg.actor_rollout_ref.actor.megatron.expert_model_parallel_size == 4
    # `mixed_precision bf16`: the dtype the actor and the reference compute in.
    assert cfg.actor_rollout_ref.actor.megatron.dtype == cfg.actor_rollout_ref.ref.megatron.dtype == "bfloat16"
    assert cfg.data.train_batch_size * cfg.actor_rollout_ref.rollout.n == 64          # batch 64, group 8
    assert cfg.actor_rollout_ref.rollout.multi_turn.format == "craft"
    assert cfg.actor_rollout_ref.rollout.agent.default_agent_loop == "craft_tool_agent"
    assert cfg.trainer.n_gpus_per_node * cfg.trainer.nnodes == 16
    assert dict(cfg.reward.custom_reward_function.reward_kwargs)["outcome"] == 0.5


def test_the_reward_manager_and_compute_score_resolve_from_the_plan(verl_plan):
    from verl.trainer.ppo.reward import get_custom_reward_fn, resolve_reward_manager_cls

    cfg = compose(launch_overrides(verl_plan))
    assert resolve_reward_manager_cls(cfg).__name__ == "CraftRewardManager"
    assert get_custom_reward_fn(cfg) is not None


def test_gdpo_names_the_four_components_with_the_recipes_weights(tmp_path):
    recipe = tmp_path / "recipes/ads.craft"
    recipe.parent.mkdir()
    for part in ("schema_specs", "examples"):
        (tmp_path / part).symlink_to(RECIPE.parents[1] / part, target_is_directory=True)
    recipe.write_text(RECIPE.read_text().replace("stage grpo { engine verl  rollout vllm",
                                                 "stage grpo { engine verl  advantage gdpo  rollout vllm", 1))
    assert compile_plan(tmp_path / "plan", recipe=recipe).returncode == 0
    cfg = compose(launch_overrides(tmp_path / "plan"))
    assert cfg.algorithm.adv_estimator == "gdpo"
    assert list(cfg.algorithm.gdpo_reward_keys) == ["outcome", "process", "consistency", "judge"]
    assert list(cfg.algorithm.gdpo_reward_weights) == [0.5, 0.2, 0.2, 0.1]


def test_fsdp_without_mixed_precision_computes_in_float32(tmp_path):
    recipe = tmp_path / "recipes/ads.craft"
    recipe.parent.mkdir()
    for part in ("schema_specs", "examples"):
        (tmp_path / part).symlink_to(RECIPE.parents[1] / part, target_is_directory=True)
    text = RECIPE.read_text()
    grpo = next(x for x in text.splitlines() if "stage grpo { engine verl" in x)
    edited = (grpo.replace("parallel megatron  tensor_parallel 4  expert_parallel 4", "parallel fsdp2")
              .replace("  mixed_precision bf16", ""))
    recipe.write_text(text.replace(grpo, edited))
    assert compile_plan(tmp_path / "plan", recipe=recipe).returncode == 0
    cfg = compose(launch_overrides(tmp_path / "plan"))
    assert cfg.actor_rollout_ref.actor.strategy == "fsdp2"
    assert cfg.actor_rollout_ref.actor.fsdp_config.dtype == cfg.actor_rollout_ref.ref.fsdp_config.dtype == "float32"


def test_a_misconfigured_stage_is_refused_by_craft_at_its_line_and_by_verl_only_at_launch(tmp_path, verl_plan):
    from verl.utils.config import validate_config

    recipe = tmp_path / "recipes/ads.craft"
    recipe.parent.mkdir()
    for part in ("schema_specs", "examples"):
        (tmp_path / part).symlink_to(RECIPE.parents[1] / part, target_is_directory=True)
    text = RECIPE.read_text().replace("tensor_parallel 4  expert_parallel 4", "tensor_parallel 3  expert_parallel 1")
    recipe.write_text(text)
    line = next(n for n, x in enumerate(text.splitlines(), 1) if "tensor_parallel 3" in x)
    done = compile_plan(tmp_path / "plan", recipe=recipe)
    assert done.returncode == 1
    assert "E513" in done.stderr and f"ads.craft:{line}:" in done.stderr, done.stderr
    # The same numbers handed to verl: its own check fails, but only once a job starts.
    overrides = [x.replace("tensor_model_parallel_size=4", "tensor_model_parallel_size=3")
                 .replace("expert_model_parallel_size=4", "expert_model_parallel_size=1")
                 for x in launch_overrides(verl_plan)]
    with pytest.raises(AssertionError, match="must be divisible by model_parallel_size"):
        validate_config(compose(overrides), use_reference_policy=False, use_critic=False)


def test_crafts_advantage_and_tool_format_choices_are_verls():
    from typing import get_args

    import runtime.train.verl.tool_parser  # noqa: F401 - registers `craft`
    from craftc.ir import AdvantageEstimator, ToolFormat
    from verl.experimental.agent_loop.tool_parser import ToolParser
    from verl.trainer.ppo.core_algos import get_adv_estimator_fn

    for name in get_args(AdvantageEstimator):
        assert callable(get_adv_estimator_fn(name)), name
    assert set(get_args(ToolFormat)) <= set(ToolParser._registry), set(get_args(ToolFormat)) - set(ToolParser._registry)

"""A plan compiled under one transformers runs under another (runtime.train.version_fit).

The mapping is tested on stand-in config classes everywhere; the gpu and cluster profiles'
trl_config.json are built into the real SFTConfig/GRPOConfig under whatever transformers is
installed, and once more under transformers 5.17.0, the lent GPU machine's, where that is
the version installed (`make gpu-rehearsal` runs this file in such an environment).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from runtime.train.version_fit import RENAMES, fit_config_kwargs, fitted_config

ROOT = Path(__file__).resolve().parents[2]
GPU_MACHINE_TRANSFORMERS = "5.17.0"


@dataclasses.dataclass
class Before523:            # transformers <= 5.22: the old names only
    output_dir: str = ""
    gradient_checkpointing: bool = False
    gradient_checkpointing_kwargs: dict | None = None


@dataclasses.dataclass
class From523:              # transformers >= 5.23: both, the old ones deprecated
    output_dir: str = ""
    activation_checkpointing: bool | None = None
    activation_checkpointing_kwargs: dict | None = None
    gradient_checkpointing: bool | None = None
    gradient_checkpointing_kwargs: dict | None = None


@dataclasses.dataclass
class V6:                   # the old names gone (announced for v6)
    output_dir: str = ""
    activation_checkpointing: bool | None = None


def test_the_new_name_is_renamed_for_an_older_transformers_with_a_note():
    fitted, notes = fit_config_kwargs({"activation_checkpointing": True, "bf16": True,
                                       "activation_checkpointing_kwargs": {"use_reentrant": False}}, Before523)
    assert fitted == {"gradient_checkpointing": True, "bf16": True,
                      "gradient_checkpointing_kwargs": {"use_reentrant": False}}
    assert notes == ["`activation_checkpointing` is `gradient_checkpointing` in the installed transformers",
                     "`activation_checkpointing_kwargs` is `gradient_checkpointing_kwargs` in the installed transformers"]


def test_nothing_changes_where_the_installed_version_takes_the_name():
    kwargs = {"activation_checkpointing": False, "gradient_checkpointing": True}
    assert fit_config_kwargs(kwargs, From523) == (kwargs, [])


def test_the_old_name_is_renamed_for_a_transformers_without_it():
    assert fit_config_kwargs({"gradient_checkpointing": True}, V6)[0] == {"activation_checkpointing": True}


def test_an_unknown_key_is_left_for_the_config_class_to_refuse():
    fitted, notes = fit_config_kwargs({"not_a_field": 1}, Before523)
    assert fitted == {"not_a_field": 1} and notes == []
    with pytest.raises(TypeError, match="not_a_field"):
        fitted_config(Before523, fitted)


def test_the_config_is_built_and_the_note_logged():
    logged = []
    config = fitted_config(Before523, {"activation_checkpointing": True}, log=logged.append, output_dir="o")
    assert config.gradient_checkpointing is True and config.output_dir == "o"
    assert logged == ["note: `activation_checkpointing` is `gradient_checkpointing` in the installed transformers; "
                      "the plan's trl_config.json is passed with that name"]


def test_every_rename_is_a_pair_of_training_argument_names():
    assert all(new != old and new.startswith("activation") for new, old in RENAMES)


def _trl_configs(profile: str) -> dict[str, dict]:
    from craftc.emit.compile import compile_recipe

    compiled = compile_recipe(ROOT / "recipes/ads_analytics.craft", profile)
    assert compiled.ok, compiled.load.render()
    return {kind: json.loads(compiled.files[f"stages/{kind}/trl_config.json"]) for kind in ("sft", "grpo")}


def _build_real_configs(tmp_path, profile: str):
    from trl import GRPOConfig, SFTConfig

    built = {}
    for kind, cls in (("sft", SFTConfig), ("grpo", GRPOConfig)):
        kwargs = _trl_configs(profile)[kind]
        assert kwargs["bf16"] is True and kwargs["activation_checkpointing"] is True
        # This machine has no GPU: transformers refuses bf16 without one unless told it runs on
        # the CPU. `use_cpu` changes no field name, which is what is checked here.
        # One CPU process here, 16 GPUs there: GRPO's batch divides by the group only at 16.
        here = {"use_cpu": True, **({"generation_batch_size": 64} if profile == "cluster" and kind == "grpo" else {})}
        built[kind] = fitted_config(cls, {**kwargs, **here}, log=lambda _: None, output_dir=str(tmp_path / kind))
        assert built[kind].gradient_checkpointing is True      # the plan's setting, whatever its name here
        assert built[kind].bf16 is True
    return built


@pytest.mark.parametrize("profile", ["gpu", "cluster"])
def test_the_gpu_and_cluster_plans_build_trl_configs_under_the_installed_transformers(tmp_path, profile):
    built = _build_real_configs(tmp_path, profile)
    if profile == "cluster":
        assert built["grpo"].use_vllm and built["grpo"].vllm_tensor_parallel_size == 8


def _transformers_version() -> str:
    from importlib.metadata import version

    return version("transformers")


@pytest.mark.skipif(_transformers_version() != GPU_MACHINE_TRANSFORMERS,
                    reason=f"transformers {_transformers_version()} is installed, not the GPU machine's "
                           f"{GPU_MACHINE_TRANSFORMERS}: `make gpu-rehearsal` runs this test under it")
@pytest.mark.parametrize("profile", ["gpu", "cluster"])
def test_the_gpu_and_cluster_plans_build_trl_configs_under_the_gpu_machines_transformers(tmp_path, profile):
    from trl import SFTConfig

    assert "activation_checkpointing" not in {f.name for f in dataclasses.fields(SFTConfig)}
    kwargs = _trl_configs(profile)["sft"]
    with pytest.raises(TypeError, match="activation_checkpointing"):
        SFTConfig(output_dir=str(tmp_path), **{**kwargs, "use_cpu": True})     # the plan as it is
    _build_real_configs(tmp_path, profile)                                      # the plan fitted

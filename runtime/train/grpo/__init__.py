"""Stage II: execution-shaped GRPO with the composite reward and multi-turn rollouts.

TRL's ``GRPOTrainer`` trains the SFT model on every training instance. Its rollout is
the craft agent loop, sampling with the trainer's model: the ``<CODE>`` of a completion
runs in the sandbox and its output comes back as a tool turn, never trained. One
reward function per component of the plan's reward spec scores the rollout, weighted
so that TRL's logged ``reward`` is ``R_total`` as optimised.

Everything it runs from comes from the plan dir: the stage's ``trl_config.json`` is
passed to ``GRPOConfig`` unchanged; the reward spec, the system prompt and turn
wording (``specs/input_builder.json``), the masking spec (tool turns are never
trained) and the sandbox's worker count are read there too. The ``grpo`` step writes
a step config (model, instances, warehouse and output dirs, relative to itself) and
runs the plan's ``stages/<stage>/launch.sh`` with it, like SFT:
``python -m runtime.train.grpo --plan-dir PLAN --stage grpo --config STEP_CONFIG.json``
under ``accelerate launch``.

The modules, in the order a run uses them:

- :mod:`.step` is the ``grpo`` step of ``craftc run``: it writes the step config and
  runs the stage's ``launch.sh`` (``python -m runtime.train.grpo``, :mod:`.cli`);
- :mod:`.job` reads the plan and the step config into a ``GRPOJob``;
- :mod:`.rows` turns the training instances into TRL rows and what each one plays;
- :mod:`.rollout` plays them with the policy (TRL's ``rollout_func``) and masks the
  tokens that are not the policy's;
- :mod:`.rewards` scores a rollout, one TRL reward function per component;
- :mod:`.measuring` measures the policy's reward before and after training;
- :mod:`.trainer` runs ``GRPOTrainer`` and writes the model, metrics and summary, with
  the reward curves of :mod:`.plots`; with ``shared_prefix on`` its log-prob forwards run
  each group's prompt once (:mod:`.prompt_groups`).

Heavy imports (torch, transformers, trl) happen inside functions, so importing this
package is cheap.
"""

from runtime.train.grpo.cli import main
from runtime.train.grpo.job import GRPOJob, GRPOSetupError
from runtime.train.grpo.measuring import measure
from runtime.train.grpo.rewards import make_reward_funcs
from runtime.train.grpo.rollout import make_rollout_func
from runtime.train.grpo.rows import build_rows
from runtime.train.grpo.step import adopt_grpo_step, run_grpo
from runtime.train.grpo.trainer import grpo_config, train_grpo

__all__ = ["GRPOSetupError", "GRPOJob", "build_rows", "make_reward_funcs", "make_rollout_func",
           "grpo_config", "train_grpo", "measure", "run_grpo", "adopt_grpo_step", "main"]

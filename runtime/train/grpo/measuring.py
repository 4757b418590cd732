"""Measuring the policy: its mean reward on a fixed set of rows, before and after training.

The same seeded rows are played greedily (what an evaluation sees) and sampled at the
stage's temperature (what GRPO optimises), and scored exactly as the reward functions
score a training rollout.
"""

from __future__ import annotations

from runtime.train.grpo.job import GRPOJob, reward_spec
from runtime.train.grpo.rewards import score_episode
from runtime.train.grpo.rollout import play
from runtime.train.grpo.rows import RolloutTask

__all__ = ["measure"]


def measure(job: GRPOJob, model, tokenizer, sandbox, probe: list[RolloutTask], terms=None,
            samples: int = 0, llm_judge=None) -> dict:
    """Mean R_total, each component and execution success over the ``probe`` rollout tasks.

    ``samples=0`` decodes greedily (what an evaluation sees). ``samples=k`` draws k
    completions per task at the stage's temperature, seeded, which is the policy GRPO
    actually optimises: its expected reward is what a step should raise.
    """
    import torch

    from runtime.agent import HFGenerator

    spec = reward_spec(job)
    # As many conversations per generate call as a training step's rollouts of one process
    # (runtime.train.grpo.rollout decodes a step's prompts together): the stage's setting,
    # not a constant of this module.
    generate = HFGenerator(model, tokenizer, max_new_tokens=job.stage["max_new_tokens"],
                           batch_size=job.stage["per_device_batch"],
                           do_sample=samples > 0, temperature=job.stage["temperature"], frozen=True)
    tasks = [task for task in probe for _ in range(max(samples, 1))]
    torch.manual_seed(job.seed)
    episodes, _, _ = play(job, generate, sandbox, tasks, [t.prompt for t in tasks])
    sums: dict[str, float] = {}
    for task, episode in zip(tasks, episodes):
        for k, v in score_episode(episode, task, spec, terms, llm_judge).items():
            sums[k] = sums.get(k, 0.0) + v
    return {k: round(v / max(1, len(tasks)), 6) for k, v in sorted(sums.items())}

"""Stage II on verl: what a grpo stage with ``engine verl`` runs on.

The compiler writes the verl-facing files into ``stages/<stage>/`` of the plan
(``craftc.emit.verl``); these modules are what those files name:

- :mod:`.data` writes verl's RL parquet from the train instances (no verl import);
- :mod:`.scoring` scores the policy's own turns with craft's composite reward (no verl import);
- :mod:`.step` is the ``grpo`` step for a verl stage: prepare, validate, hand off or launch;
- :mod:`.tool`, :mod:`.tool_parser`, :mod:`.agent_loop` and :mod:`.reward` plug into verl
  0.9.1 and import it (install the ``verl`` extra in its own environment: docs/training.md).
"""

__all__ = ["data", "scoring", "step"]

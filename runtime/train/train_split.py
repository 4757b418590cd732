"""The training instances a Stage II engine plays: the gate's instances of the train split.

Both engines (TRL's GRPO step and verl's) write the same file, so held-out instances
never shape the policy whichever engine trains it.
"""

from __future__ import annotations

import json
from pathlib import Path

from runtime.layout import GATE_INSTANCES, TRAIN_INSTANCES

__all__ = ["train_split", "write_train_instances"]


def train_split(instances: list[dict]) -> list[dict]:
    """The instances of the train split: all a Stage II engine plays (the leak audit reads it too)."""
    return [i for i in instances if i.get("split", "train") == "train"]


def write_train_instances(ctx) -> Path:
    """Write ``RUN_DIR/<step>/train_instances.json`` from the gate's instances; returns its path."""
    all_instances = json.loads(ctx.input(GATE_INSTANCES).read_text())
    path = ctx.out_dir / TRAIN_INSTANCES.path
    path.write_text(json.dumps(train_split(all_instances),
                               indent=2, sort_keys=True, default=str) + "\n")
    return path

"""`sampler by_prefix`: the examples of each training batch begin with the same tokens.

A packed shared-prefix batch (runtime.train.prefix_groups) saves the most when all its
examples share one prefix. This sampler draws the batches so that they do: examples are
grouped by their first ``MIN_SHARED_PREFIX`` tokens (the stuffed arm's schema prompt, or
one of several system prompts), each group is shuffled and cut into batches of the
trainer's per-device size, and the batches are shuffled. A group's remainder (fewer than a
batch) goes into batches of mixed prefixes, which the collator packs group by group; the
one batch short of a full size comes last, as a plain shuffle's does.

The order depends only on the seed and the epoch (``set_epoch``, which the Trainer calls),
so a run resumed from a checkpoint skips exactly the batches it had trained.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import get_args

import torch

from craftc.ir import SFTStage
from runtime.agent.shared_prefix import MIN_SHARED_PREFIX
from runtime.train.prefix_groups import SharedPrefixCollator, SharedPrefixError, group_key, use_shared_prefix

__all__ = ["BATCHES_FILE", "SAMPLERS", "PrefixGroupedSampler", "group_batches_by_prefix", "prefix_keys", "read_sampler"]

BATCHES_FILE = "batches.json"
# The values `stage sft { sampler ... }` takes, as the IR declares them.
SAMPLERS = get_args(SFTStage.model_fields["sampler"].annotation)
DEFAULT_SAMPLER = SFTStage.model_fields["sampler"].default

# Rows read at a time when the keys are taken from a datasets.Dataset.
_KEY_BATCH = 512


def read_sampler(plan_dir: str | Path, stage: str) -> str:
    """The stage's sampler from the plan's ``stages/<stage>/batches.json``; ``random`` without one."""
    path = Path(plan_dir) / "stages" / stage / BATCHES_FILE
    if not path.exists():
        return DEFAULT_SAMPLER
    try:
        sampler = json.loads(path.read_text(encoding="utf-8"))["sampler"]
        if sampler not in SAMPLERS:
            raise ValueError(f"unknown sampler `{sampler}`")
        return sampler
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise SharedPrefixError(f"`{path}` is not a batches file craftc wrote ({exc}); recompile the recipe "
                                "with `craftc compile`") from None


def prefix_keys(dataset) -> list[tuple[int, ...]]:
    """Each example's grouping key (``group_key``), read without decoding every token.

    The stuffed arm's examples are ~5,000 tokens: as Python lists they would take hundreds
    of megabytes, so from a ``datasets.Dataset`` only the first tokens of each row are
    taken, in Arrow, batch by batch.
    """
    from datasets import Dataset

    if not isinstance(dataset, Dataset):
        return [group_key(row["input_ids"]) for row in dataset]
    import pyarrow.compute as pc

    keys: list[tuple[int, ...]] = []
    for table in dataset.select_columns(["input_ids"]).with_format("arrow").iter(batch_size=_KEY_BATCH):
        heads = pc.list_slice(table.column("input_ids"), 0, MIN_SHARED_PREFIX)
        keys += [tuple(head) for head in heads.to_pylist()]
    return keys


class PrefixGroupedSampler(torch.utils.data.Sampler[int]):
    """Indices in batches of ``batch_size`` whose examples share their ``keys``.

    >>> keys = [("a",), ("b",), ("a",), ("b",), ("a",)]
    >>> s = PrefixGroupedSampler(keys, batch_size=2, seed=0)
    >>> order = list(s)
    >>> sorted(order), len(s)
    ([0, 1, 2, 3, 4], 5)
    >>> [len({keys[i] for i in order[j:j + 2]}) for j in (0, 2)]   # two full batches, one prefix each
    [1, 1]
    """

    def __init__(self, keys: list, batch_size: int, seed: int):
        self.keys, self.batch_size, self.seed, self.epoch = list(keys), int(batch_size), int(seed), 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = int(epoch)

    def __len__(self) -> int:
        return len(self.keys)

    def batches(self) -> list[list[int]]:
        """This epoch's batches, in order (the last one may be short)."""
        rng = random.Random(f"{self.seed}:{self.epoch}")
        size = self.batch_size
        groups: dict = {}
        for index, key in enumerate(self.keys):
            groups.setdefault(key, []).append(index)
        full, rest = [], []
        for members in groups.values():
            rng.shuffle(members)
            cut = len(members) - len(members) % size
            full += [members[i:i + size] for i in range(0, cut, size)]
            rest += members[cut:]          # kept by group: a mixed batch spans as few prefixes as it can
        cut = len(rest) - len(rest) % size
        full += [rest[i:i + size] for i in range(0, cut, size)]
        rng.shuffle(full)
        return full + ([rest[cut:]] if rest[cut:] else [])

    def __iter__(self):
        for batch in self.batches():
            yield from batch


def group_batches_by_prefix(trainer) -> PrefixGroupedSampler:
    """Make a TRL trainer draw its batches by prefix and run each batch's shared prefix once.

    Its model attends with ``shared_prefix_attention``, its collator packs the batches that
    share a prefix (``SharedPrefixCollator`` around TRL's own), and its training sampler is a
    ``PrefixGroupedSampler`` seeded as the trainer's shuffle is (``data_seed``, else ``seed``).
    TRL's loop, loss and metrics are unchanged.

    Raises:
        SharedPrefixError: With TRL's own packing or padding-free batches (already one row),
            or a model whose attention the shared-prefix path does not compute.
    """
    args = trainer.args
    for name in ("packing", "padding_free"):
        if getattr(args, name, False):
            raise SharedPrefixError(f"`sampler by_prefix` packs each batch itself, and the TRL config sets "
                                    f"`{name}`; remove `{name}` from the stage's `trl {{ }}` block, or use "
                                    "`sampler random`")
    use_shared_prefix(trainer.model)
    trainer.data_collator = SharedPrefixCollator(trainer.data_collator)
    sampler = PrefixGroupedSampler(prefix_keys(trainer.train_dataset), args.train_batch_size,
                                   args.data_seed if args.data_seed is not None else args.seed)
    # The Trainer builds its training DataLoader with this sampler (a method it calls, not a loop of our own).
    trainer._get_train_sampler = lambda train_dataset=None: sampler
    return sampler

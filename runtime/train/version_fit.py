"""A plan's TRL settings fitted to the transformers and TRL installed where it runs.

A plan is compiled in one environment and may run in another (a GPU machine's image,
a cluster's environment), whose transformers names a setting differently. The plan's
``trl_config.json`` keeps the compiler's names; before it becomes ``SFTConfig(**kwargs)``
or ``GRPOConfig(**kwargs)``, each key the installed config class does not take but
knows under another name is renamed, and the step prints a note saying so. A key with
no known other name is left as it is, so the config class still refuses it by name.

The renames known (old name in the older release, new name in the newer):

- transformers 5.23 renamed ``gradient_checkpointing`` to ``activation_checkpointing``
  (and ``gradient_checkpointing_kwargs`` to ``activation_checkpointing_kwargs``); the
  old names are deprecated aliases there. transformers 5.17 (the lent GPU machine's)
  knows only the old ones.

Example:
    >>> import dataclasses
    >>> @dataclasses.dataclass
    ... class Old:
    ...     gradient_checkpointing: bool = False
    >>> fit_config_kwargs({"activation_checkpointing": True}, Old)
    ({'gradient_checkpointing': True}, ['`activation_checkpointing` is `gradient_checkpointing` in the installed transformers'])
"""

from __future__ import annotations

import dataclasses
import sys

__all__ = ["RENAMES", "config_fields", "fit_config_kwargs", "fitted_config"]

# (name in the newer transformers/TRL, name in the older one).
RENAMES: tuple[tuple[str, str], ...] = (
    ("activation_checkpointing", "gradient_checkpointing"),
    ("activation_checkpointing_kwargs", "gradient_checkpointing_kwargs"),
)


def config_fields(config_cls) -> frozenset[str]:
    """The keyword arguments a config dataclass's constructor takes."""
    return frozenset(f.name for f in dataclasses.fields(config_cls) if f.init)


def fit_config_kwargs(kwargs: dict, config_cls) -> tuple[dict, list[str]]:
    """``kwargs`` with each known rename applied where ``config_cls`` takes only the other name.

    Returns:
        The fitted kwargs (a new dict, same order) and one note per renamed key.
    """
    fields = config_fields(config_cls)
    renames = {}
    for new, old in RENAMES:
        for have, want in ((new, old), (old, new)):
            if have in kwargs and have not in fields and want in fields and want not in kwargs:
                renames[have] = want
    notes = [f"`{have}` is `{want}` in the installed transformers" for have, want in renames.items()]
    return {renames.get(k, k): v for k, v in kwargs.items()}, notes


def fitted_config(config_cls, kwargs: dict, log=None, **extra):
    """``config_cls(**fitted kwargs, **extra)``, with a note per rename (to stderr unless ``log``)."""
    fitted, notes = fit_config_kwargs(kwargs, config_cls)
    for note in notes:
        (log or (lambda text: print(text, file=sys.stderr)))(
            f"note: {note}; the plan's trl_config.json is passed with that name")
    return config_cls(**extra, **fitted)

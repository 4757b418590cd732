"""Resuming a trainer from its last checkpoint without training past its last step.

transformers' `Trainer.train(resume_from_checkpoint=...)` checks whether training should
stop only after a step. Given a checkpoint of the last step (`global_step == max_steps`:
the trainer saves one when training ends), it trains one more step before it stops. A run
killed after its training but before its stage finished (GRPO's measurement after
training, a merge, the summary) would then resume into a model one step past the plan,
and a GRPO step's extra step draws rollouts too.

:func:`train_from` reads the checkpoint's own trainer state first: a checkpoint of the
last step is loaded as it is (its weights and its state, log history included) and
nothing is trained; any other checkpoint resumes as transformers resumes it.

And the weights: transformers' resume loads a checkpoint's state dict into the model as it
is stored. A model whose saved form differs from its loaded form loses weights there:
tiny_moe saves each expert's projections apart and holds them fused, so a plain load
leaves every expert at the weights the run started from (transformers only warns of
"missing keys"), and the resumed run trains other weights than a run never killed. Here
the checkpoint is loaded as `from_pretrained` loads it, with its conversions, and every
key is required (tests/train/test_timed_checkpoints.py). An adapter checkpoint (LoRA) and a
sharded model (DeepSpeed, FSDP) load through transformers, which reads their own formats.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

__all__ = ["finished_at", "tokens_at", "train_from"]

STATE_FILE = "trainer_state.json"     # transformers' TRAINER_STATE_NAME


def finished_at(checkpoint: str | Path | None, max_steps: int) -> int | None:
    """The step of ``checkpoint`` when training ``max_steps`` would end there, else None.

    ``max_steps`` is the resuming trainer's (its args'; a run given more steps than the
    checkpoint's own goes on). When it is not set (-1, epochs instead) the checkpoint's
    own maximum counts: the plan that wrote it is the plan resuming it.

    >>> import tempfile
    >>> d = Path(tempfile.mkdtemp())
    >>> _ = (d / STATE_FILE).write_text('{"global_step": 4, "max_steps": 4}')
    >>> finished_at(d, 4), finished_at(d, -1), finished_at(d, 6)
    (4, 4, None)
    >>> _ = (d / STATE_FILE).write_text('{"global_step": 3, "max_steps": 4}')
    >>> finished_at(d, 4) is None, finished_at(None, 4) is None, finished_at(d / "absent", 4) is None
    (True, True, True)
    """
    if not checkpoint:
        return None
    try:
        state = json.loads((Path(checkpoint) / STATE_FILE).read_text(encoding="utf-8"))
        step, last = int(state["global_step"]), int(state["max_steps"])
    except (OSError, ValueError, KeyError, TypeError):
        return None          # no state to read: let transformers resume (or refuse) as it does
    if max_steps and max_steps > 0:
        last = max_steps
    return step if last > 0 and step >= last else None


def tokens_at(checkpoint: str | Path | None) -> int:
    """The tokens trained up to ``checkpoint`` (its log's `num_tokens`), 0 without one.

    >>> import tempfile
    >>> d = Path(tempfile.mkdtemp())
    >>> _ = (d / STATE_FILE).write_text('{"log_history": [{"num_tokens": 300.0}, {"num_tokens": 610.0}, {}]}')
    >>> tokens_at(d), tokens_at(None), tokens_at(d / "absent")
    (610, 0, 0)
    """
    if not checkpoint:
        return 0
    try:
        history = json.loads((Path(checkpoint) / STATE_FILE).read_text(encoding="utf-8"))["log_history"]
        return int(max((entry.get("num_tokens", 0) for entry in history), default=0))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return 0


def _is_adapter(model) -> bool:
    return hasattr(model, "peft_config") and hasattr(model, "load_adapter")


def _load_full_weights(model, checkpoint: str) -> None:
    """Every weight of ``checkpoint`` into ``model``, converted as `from_pretrained` converts them."""
    from runtime.train.precision import quantized_load_kwargs

    dtype = next(model.parameters()).dtype
    # A checkpoint of a model loaded unpacked (MXFP4) is read the way the stage first read it.
    loaded = type(model).from_pretrained(checkpoint, dtype=dtype, **quantized_load_kwargs(checkpoint))
    model.load_state_dict(loaded.state_dict(), strict=True)
    del loaded


def train_from(trainer, checkpoint: str | None):
    """``trainer.train(resume_from_checkpoint=checkpoint)``, except from a checkpoint of the last step.

    That one is loaded into ``trainer`` (model weights and trainer state) and nothing is
    trained. Returns transformers' ``TrainOutput``; a loaded one has a train runtime of 0.
    """
    from transformers.trainer_callback import TrainerState
    from transformers.trainer_utils import TrainOutput

    if not checkpoint:
        return trainer.train()
    sharded = getattr(trainer, "is_deepspeed_enabled", False) or getattr(trainer, "is_fsdp_enabled", False)
    step = finished_at(checkpoint, trainer.args.max_steps)
    if sharded:
        # Sharded weights load only inside transformers' training loop, after the model is wrapped.
        if step is not None:
            print(f"warning: {checkpoint} is training's last step, and a sharded model (DeepSpeed, FSDP) resumes "
                  "only through transformers' loop, which trains one step more than the plan's", file=sys.stderr)
        return trainer.train(resume_from_checkpoint=checkpoint)
    if _is_adapter(trainer.model):
        load = trainer._load_from_checkpoint      # the adapter's own keys: transformers loads them whole
    else:
        _load_full_weights(trainer.model, checkpoint)
        # Loaded already: transformers' own load would only warn that the converted keys are missing.
        trainer._load_from_checkpoint = load = lambda *args, **kwargs: None
    if step is None:
        return trainer.train(resume_from_checkpoint=checkpoint)
    load(checkpoint)
    trainer.state = TrainerState.load_from_json(str(Path(checkpoint) / STATE_FILE))
    losses = [e["loss"] for e in trainer.state.log_history if "loss" in e]
    return TrainOutput(step, sum(losses) / len(losses) if losses else 0.0,
                       {"train_runtime": 0.0, "resumed_at_last_step": step})

"""GRPO's log-prob forwards with each group's prompt run once (`stage grpo { shared_prefix on }`).

TRL's ``GRPOTrainer`` scores a batch of completions with one forward over prompt +
completion per row (``_get_per_token_logps_and_entropies``): for the loss, for the
reference model's log-probs when ``beta > 0``, and for the old policy's when TRL keeps
them. The ``group`` completions of a prompt share that prompt token for token, so a
plain batch of 16 rows in groups of 4 runs each prompt 4 times. Here the batch is
packed into one row instead, as SFT's shared-prefix batches are
(:mod:`runtime.train.prefix_groups`, after Prefix Grouper, arXiv 2506.05433):

    [prompt A but its last token][A's last token + completion 1][A's last token + completion 2] ... [prompt B ...

- **What is shared**: the rows whose prompt tokens (left padding removed) are the same.
  The prompt's last token stays each row's own: its hidden state predicts the row's
  first completion token, and each row's own tokens are scored from their own
  positions only. A multi-turn rollout's later turns and tool outputs are completion
  tokens (TRL's ``tool_mask`` masks them in the loss), so only the prompt is shared.
- **Positions** are those TRL's plain forward gives each token: it passes no position
  ids, so a left-padded row counts from its first pad; rows of a group have the same
  prompt, hence the same padding, hence the same positions.
- **Attention** is ``prefix_groups.shared_prefix_attention``: a prompt attends to itself
  causally, each row's own tokens to their group's prompt and causally to themselves.
  Right padding and masked completions are left out of the row, as the plain forward's
  attention mask leaves them out of every key.
- **attention_mask** carries how many rows each token stands for (the group's size on
  the shared prompt), which the MoE load-balancing loss weights tokens by, so it is the
  plain batch's.
- **Outputs**: TRL's (or craft's CPU, :mod:`runtime.train.loss_head`) fused head scores
  the completion tokens the plain forward scores (``attention_mask`` 1), and their
  log-probs and entropies are gathered back into TRL's ``(rows, logits_to_keep)``
  tensors, zero elsewhere as TRL's are. Equal to the plain path's to float rounding
  (tests/grpo/test_grpo_shared_prefix.py).

A row whose prompt no other row of its forward shares is packed alone (a shared part of
0 tokens: its padding is still dropped); a forward in which no two rows share a prompt,
or one with images, goes through TRL's method unchanged. TRL chunks the reference and
old-policy forwards by ``per_device_train_batch_size``; each chunk is packed on its own.

Why patch the trainer's method rather than subclass ``GRPOTrainer``: the trainer is
TRL's, built by ``train_grpo`` as it is for ``shared_prefix off``; the patch is applied
after construction, like the CPU head, and replaces the one method every log-prob
forward of TRL goes through (loss, reference, old policy), calling the original for
whatever it does not pack.
"""

from __future__ import annotations

import types
from dataclasses import dataclass

from runtime.train.prefix_groups import GROUPS_KEY, PackedGroups, PrefixGroup, use_shared_prefix

__all__ = ["PackedRows", "pack_rows", "packed_logps", "score_group_prompts_once"]

IGNORE = -100


@dataclass(frozen=True)
class PackedRows:
    """A packed forward: the model's keywords and, for each of the plain ``(rows, logits_to_keep)``
    outputs (flattened), the index of its log-prob in the packed row's ``(tokens - 1)`` outputs,
    or ``tokens - 1`` (one past them: a zero) where the plain path scores nothing."""

    inputs: dict
    gather: list[int]
    shape: tuple[int, int]

    @property
    def layout(self) -> PackedGroups:
        return self.inputs[GROUPS_KEY]


def _row_spans(mask_row: list[int], prompt_width: int) -> tuple[int, int] | None:
    """(left padding, completion tokens attended) of one row, or None if its mask is not
    TRL's shape (zeros then ones over the prompt, ones then zeros over the completion)."""
    prompt, completion = mask_row[:prompt_width], mask_row[prompt_width:]
    pad = next((i for i, v in enumerate(prompt) if v), prompt_width)
    attended = next((i for i, v in enumerate(completion) if not v), len(completion))
    if any(v != 1 for v in prompt[pad:]) or any(v != 1 for v in completion[:attended]) or any(completion[attended:]):
        return None
    return pad, attended


def pack_rows(input_ids, attention_mask, logits_to_keep: int) -> PackedRows | None:
    """The packed forward of TRL's ``(rows, prompt + completion)`` batch, or None if no two rows share a prompt.

    ``input_ids`` and ``attention_mask`` are TRL's: left-padded prompts, right-padded
    completions, the last ``logits_to_keep`` columns the completions.

    >>> import torch
    >>> ids = torch.tensor([[0, 5, 6, 7, 1, 2], [0, 5, 6, 7, 3, 0], [8, 9, 9, 9, 4, 4]])
    >>> mask = torch.tensor([[0, 1, 1, 1, 1, 1], [0, 1, 1, 1, 1, 0], [1, 1, 1, 1, 1, 1]])
    >>> packed = pack_rows(ids, mask, 2)
    >>> packed.inputs["input_ids"].tolist()
    [[5, 6, 7, 1, 2, 7, 3, 8, 9, 9, 9, 4, 4]]
    >>> packed.inputs["position_ids"].tolist()      # the plain rows' positions, padding counted
    [[1, 2, 3, 4, 5, 3, 4, 0, 1, 2, 3, 4, 5]]
    >>> packed.inputs["attention_mask"].tolist()    # rows each token stands for
    [[2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1]]
    >>> packed.gather                               # 12: nothing scored (row 1's pad)
    [2, 3, 5, 12, 10, 11]
    """
    import torch

    rows, width = input_ids.shape
    prompt_width = width - logits_to_keep
    ids, masks = input_ids.tolist(), attention_mask.tolist()
    spans = [_row_spans(m, prompt_width) for m in masks]
    if rows < 2 or any(s is None for s in spans) or any(pad == prompt_width for pad, _ in spans):
        return None      # one row, a mask of another shape, or an empty prompt: TRL's own forward
    prompts = [tuple(ids[r][pad:prompt_width]) for r, (pad, _) in enumerate(spans)]
    members: dict[tuple[int, ...], list[int]] = {}
    for r, prompt in enumerate(prompts):
        members.setdefault(prompt, []).append(r)
    # A group shares its prompt but the last token; a row alone (or a one-token prompt) shares nothing.
    packing = []
    for prompt, group in members.items():
        shared = len(prompt) - 1 if len(group) > 1 else 0
        packing += [(group, shared)] if shared else [([r], 0) for r in group]
    if all(shared == 0 for _, shared in packing):
        return None
    tokens, positions, weights, labels, groups = [], [], [], [], []
    sources = {}                       # flat (row, completion column) -> index in the packed log-probs
    for group, shared in packing:
        first = group[0]
        pad, prompt = spans[first][0], prompts[first]
        start = len(tokens)
        tokens += prompt[:shared]
        positions += range(pad, pad + shared)
        weights += [len(group)] * shared
        labels += [IGNORE] * shared
        own_rows = []
        for r in group:
            completion = ids[r][prompt_width:prompt_width + spans[r][1]]
            own_prompt = len(prompt) - shared
            at = len(tokens)
            own_rows.append((at, own_prompt + len(completion)))
            tokens += list(prompt[shared:]) + completion
            positions += range(pad + shared, pad + len(prompt) + len(completion))
            weights += [1] * (own_prompt + len(completion))
            labels += [IGNORE] * own_prompt + completion
            for k in range(len(completion)):
                # completion token k sits at at + own_prompt + k; the position before it predicts it
                sources[r * logits_to_keep + k] = at + own_prompt + k - 1
        groups.append(PrefixGroup(start, shared, tuple(own_rows)))
    nothing = len(tokens) - 1
    device = input_ids.device
    inputs = {name: torch.tensor([values], dtype=torch.long, device=device) for name, values in
              (("input_ids", tokens), ("position_ids", positions), ("attention_mask", weights), ("labels", labels))}
    inputs[GROUPS_KEY] = PackedGroups(tuple(groups), len(tokens))
    return PackedRows(inputs, [sources.get(i, nothing) for i in range(rows * logits_to_keep)],
                      (rows, logits_to_keep))


def _spread(values, packed: PackedRows):
    """The packed row's ``(1, tokens - 1)`` outputs as TRL's ``(rows, logits_to_keep)``, zero where
    nothing is scored (a gather, so the result stays connected to the model even then)."""
    import torch

    flat = torch.cat([values[0], values.new_zeros(1)])
    index = torch.tensor(packed.gather, dtype=torch.long, device=values.device)
    return flat[index].view(packed.shape)


def packed_logps(trainer, model, packed: PackedRows, compute_entropy: bool, compute_aux_loss: bool):
    """TRL's ``(log-probs, entropies or None, aux loss or None)`` of one packed forward."""
    inputs = dict(packed.inputs)
    if compute_aux_loss:
        inputs["output_router_logits"] = True
    with trainer.accelerator.autocast():
        outputs = model(**inputs, fused_lm_head=True)
    entropies = _spread(outputs.entropy, packed) if compute_entropy else None
    return _spread(outputs.log_probs, packed), entropies, outputs.aux_loss if compute_aux_loss else None


def score_group_prompts_once(trainer) -> None:
    """Make ``trainer`` (TRL's ``GRPOTrainer``) run each group's prompt once in every log-prob forward.

    The policy (and a reference model, when TRL keeps one) attend with the shared-prefix
    attention, which is sdpa's for any forward that is not packed (rollouts, measurements).

    Raises:
        runtime.train.prefix_groups.SharedPrefixError: for a model whose attention has a
            sliding window (the packed attention does not compute it).
    """
    import torch
    from trl.extras.profiling import profiling_decorator

    for model in (trainer.model, getattr(trainer, "ref_model", None)):
        if model is not None:
            use_shared_prefix(trainer.accelerator.unwrap_model(model),
                              fix="remove `shared_prefix on` from the grpo stage")
    # TRL's method without its profiling wrapper: the replacement is profiled under the same name
    # (TRL's `profiling/Time taken` metric), so a forward it leaves to TRL is timed once.
    method = type(trainer)._get_per_token_logps_and_entropies
    plain = types.MethodType(getattr(method, "__wrapped__", method), trainer)

    @profiling_decorator
    def _get_per_token_logps_and_entropies(self, model, input_ids, attention_mask, logits_to_keep, batch_size=None,
                                           compute_entropy=False, compute_aux_loss=False, **extra):
        if any(value is not None for value in extra.values()):      # images: TRL's own forward
            return plain(model, input_ids, attention_mask, logits_to_keep, batch_size=batch_size,
                         compute_entropy=compute_entropy, compute_aux_loss=compute_aux_loss, **extra)
        batch_size = batch_size or input_ids.size(0)
        logps, entropies, aux_losses = [], [], []
        for start in range(0, input_ids.size(0), batch_size):      # TRL's chunks, each packed on its own
            ids, mask = input_ids[start:start + batch_size], attention_mask[start:start + batch_size]
            packed = pack_rows(ids, mask, logits_to_keep)
            if packed is None:
                chunk = plain(model, ids, mask, logits_to_keep, compute_entropy=compute_entropy,
                              compute_aux_loss=compute_aux_loss)
            else:
                chunk = packed_logps(self, model, packed, compute_entropy, compute_aux_loss)
            logps.append(chunk[0])
            entropies.append(chunk[1])
            aux_losses.append(chunk[2])
        return (torch.cat(logps, dim=0), torch.cat(entropies, dim=0) if compute_entropy else None,
                torch.stack(aux_losses).mean() if compute_aux_loss else None)

    trainer._get_per_token_logps_and_entropies = types.MethodType(_get_per_token_logps_and_entropies, trainer)

"""The trainers' LM head on CPU: project only the positions whose next token is trained.

TRL's `SFTTrainer` scores next tokens through a fused LM head (`trl.trainer.utils.
add_fused_lm_head`) that never builds the `(batch, seq_len, vocab)` logits. On a device
with Triton it projects only the positions whose label is trained; on CPU it projects
every position, masked or not (so that tile shapes never change), and folds each tile
in torch. craft trains few of a sequence's positions (a warm-up example trains its
THINK block, not the system prompt and history before it; a stuffed example trains a
few hundred of its ~5,000), so on CPU that head cost about a third of tiny_moe's step.

`score_trained_positions` replaces that head (SFT's, and GRPO's when it scores
completions), on CPU only, with the one TRL runs on
Triton devices: the masked positions are dropped before the projection, and the
`(trained tokens, vocab)` logits are built whole, which is small for a short trained
span. The loss, the per-token log-probabilities (with their gradient), the entropy and
top-1 metrics and the MoE load-balancing loss are those TRL's head returns, in its own
output class, so `SFTTrainer.compute_loss` and its logged metrics are unchanged.
Measured in `benchmarks/sft_loss_head.py`.

The head runs under the trainer's autocast (`mixed_precision bf16`). accelerate wraps a
model's `forward` in autocast only the first time a model is prepared, so a second trainer
on the same model (the conversations after `schema_docs` or the THINK warm-up) would
otherwise run this head, installed after that wrapping, in float32.
"""

from __future__ import annotations

import contextlib
import functools
import types

__all__ = ["MAX_LOGITS", "score_trained_positions", "score_trained_positions_in"]

# The most logits (trained tokens x vocabulary) built at once, about 256 MB in float32.
# A batch with more (a large vocabulary and a long trained span) takes TRL's tiled head,
# which never builds them.
MAX_LOGITS = 64 * 1024 * 1024

# Config attributes that scale or cap the logits; TRL's head applies them, this one does
# not, so a model that sets any of them keeps TRL's head.
_LOGIT_TRANSFORMS = ("final_logit_softcapping", "logit_scale", "output_multiplier", "lm_head_multiplier",
                     "logits_scaling")


def score_trained_positions(model, temperature: float = 1.0, autocast=contextlib.nullcontext) -> bool:
    """Give `model` (patched by a TRL trainer) a head that projects only trained positions on CPU.

    Args:
        model: The model the trainer gave its fused head to: `trainer.model`, or its base
            model when it is a PEFT model.
        temperature: What the logits are divided by: the trainer's (`GRPOTrainer` scores
            completions at its sampling temperature; SFT at 1).
        autocast: A context manager factory the head runs under: the trainer's
            `accelerator.autocast` (bf16 autocast under `mixed_precision bf16`).

    Returns:
        True if the head was replaced; False for a model whose config scales or caps its
        logits (it keeps TRL's head).
    """
    import torch
    from trl.trainer.utils import FusedCausalLMOutput

    text_config = model.config.get_text_config()
    if any(getattr(text_config, name, None) not in (None, 1.0) for name in _LOGIT_TRANSFORMS):
        return False
    fused_forward = model.forward   # TRL's, bound to the model

    # The model class's signature, as TRL keeps it: `generate` checks its kwargs against it.
    @functools.wraps(type(model).forward)
    def forward(self, *args, **kwargs):
        with autocast():
            return _forward(self, *args, **kwargs)

    def _forward(self, *args, fused_lm_head=False, labels=None, shift_labels=None, num_items_in_batch=None,
                 **kwargs):
        head = self.get_output_embeddings()
        untouched = (not fused_lm_head or shift_labels is not None or labels is None
                     or head.weight.device.type != "cpu" or head.weight.dtype != torch.float32
                     or int((labels[:, 1:] != -100).sum()) * head.weight.shape[0] > MAX_LOGITS)
        if untouched:
            return fused_forward(*args, fused_lm_head=fused_lm_head, labels=labels, shift_labels=shift_labels,
                                 num_items_in_batch=num_items_in_batch, **kwargs)
        kwargs["use_cache"] = False
        if getattr(text_config, "output_router_logits", False):
            kwargs.setdefault("output_router_logits", True)
        backbone = self.base_model(*args, **kwargs)
        targets = labels[:, 1:]
        mask = targets != -100
        # float32 from here on, as TRL's head computes the log-softmax (bf16 under autocast).
        logits = head(backbone.last_hidden_state[:, :-1][mask]).float() / temperature
        log_softmax = logits.log_softmax(dim=-1)
        picked = log_softmax.gather(-1, targets[mask].unsqueeze(-1)).squeeze(-1)
        entropy = -(log_softmax.exp() * log_softmax).sum(dim=-1)   # with its gradient, as TRL's (an entropy bonus)
        with torch.no_grad():
            is_top1 = logits.argmax(dim=-1) == targets[mask]

        def spread(values):
            # Back to (batch, seq_len - 1), zero where the label is ignored, as TRL's head returns it.
            return values.new_zeros(mask.shape).masked_scatter(mask, values)

        log_probs = spread(picked)
        loss = -picked.sum() / (mask.sum().clamp(min=1) if num_items_in_batch is None else num_items_in_batch)
        aux_loss = None
        if kwargs.get("output_router_logits"):
            # The load-balancing loss TRL's head and the model's own forward add (Mixtral's, shared by MoE families).
            from transformers.models.mixtral.modeling_mixtral import load_balancing_loss_func

            aux_loss = load_balancing_loss_func(backbone.router_logits, text_config.num_experts,
                                                text_config.num_experts_per_tok, kwargs.get("attention_mask"))
            loss = loss + getattr(text_config, "router_aux_loss_coef", 0.0) * aux_loss
        return FusedCausalLMOutput(loss=loss, log_probs=log_probs, entropy=spread(entropy),
                                   is_top1=spread(is_top1), label_mask=mask, aux_loss=aux_loss)

    model.forward = types.MethodType(forward, model)
    return True


def score_trained_positions_in(trainer, temperature: float = 1.0) -> bool:
    """`score_trained_positions` on the model a TRL trainer gave its fused head to.

    The trainer patches the base model of a PEFT model, so that is the one patched here.
    """
    from peft import PeftModel

    model = trainer.model.get_base_model() if isinstance(trainer.model, PeftModel) else trainer.model
    return score_trained_positions(model, temperature, trainer.accelerator.autocast)

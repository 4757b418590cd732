"""Turning a Hugging Face model into the agent loop's ``generate`` function.

The loop only needs ``generate(conversations) -> [(text, input_tokens), ...]``;
keeping that seam small lets tests, evaluation (batched greedy decoding) and GRPO
rollouts (sampling, with token ids and log-probs) share one loop.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from runtime.agent.copy_bias import CopyBiasProcessor, asked_token_ids
from runtime.agent.shared_prefix import (
    MIN_SHARED_PREFIX, batch_cache, cache_keyword, middle_padded, prefix_cache, shared_prefix_length,
)

__all__ = ["Generation", "HFGenerator", "chosen_logprobs", "TrainerVLLMGenerator", "VLLMGenerator", "max_across_ranks",
           "release_vllm_engine", "render_prompt_ids", "vllm_engine"]


@dataclass
class Generation:
    """One model output: its text, input size and (for training) token-level data."""

    text: str
    input_tokens: int
    prompt_ids: list[int] = field(default_factory=list)
    completion_ids: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    cut_off: bool = False       # it stopped at max_new_tokens, not at its end-of-turn token


def chosen_logprobs(scores, tokens):
    """``(rows, steps)`` log-probs of the generated ``tokens`` under each step's ``scores``.

    One step at a time: each step's log-softmax is that of the whole ``(rows, steps, vocab)``
    stack (the same rows, the same kernel), without that stack and its log-softmax, each
    as large as every step's scores together.
    """
    import torch

    return torch.cat([step.float().log_softmax(-1).gather(-1, tokens[:, i:i + 1].to(step.device)).cpu()
                      for i, step in enumerate(scores)], dim=1)


def render_prompt_ids(tokenizer, messages: list[dict]) -> list[int]:
    """Token ids of ``messages`` rendered with the chat template plus the assistant header."""
    return list(tokenizer.apply_chat_template(
        messages, add_generation_prompt=True, tokenize=True, return_dict=False,
    ))


class HFGenerator:
    """Batched generation with a ``transformers`` causal LM, greedy unless sampling.

    Args:
        model: A ``PreTrainedModel`` (put in eval mode for the call).
        tokenizer: Its tokenizer, with a chat template.
        max_new_tokens: Per model call.
        do_sample: Sample (GRPO rollouts) instead of greedy decoding (evaluation).
        temperature: Sampling temperature.
        batch_size: Conversations per ``generate`` call.
        context: Longest input kept; longer inputs keep their last tokens.
        frozen: The weights do not change between calls (evaluation), so the cache of
            the prompt prefix every call shares (the system prompt) is computed once and
            kept. Leave it off where a trainer updates the model between calls.
        share_prefix: Read a prefix the batch's prompts share once (below); off, every
            row is left-padded and read whole (benchmarks/shared_prefix.py compares the two).
        prefix_attention: Decoding steps read the shared prefix once for all rows
            (``runtime.agent.prefix_attention``); off, each row attends its own copy
            (benchmarks/prefix_attention.py compares the two).
        copy_bias: Added to the logits of the tokens that write the words of each
            conversation's user messages (``runtime.agent.copy_bias``; the plan's ``eval { copy_bias }``); 0 is
            plain decoding.
        logprobs: Keep each generated token's log-prob (``Generation.logprobs``): GRPO
            rollouts train on them. Off (evaluation, measuring), ``generate`` keeps no
            per-step scores: with a 49,152-token vocabulary those are 1.5 MB a step for a
            batch of 8, 0.6 GB for a 384-token call, and their log-softmax as much again.

    Within a call, a prefix the batch's prompts share is read once for the whole batch
    (``runtime.agent.shared_prefix``): the stuffed baseline's schema prompt is most of
    every one of its inputs.
    """

    def __init__(self, model, tokenizer, max_new_tokens: int = 256, do_sample: bool = False,
                 temperature: float = 1.0, batch_size: int = 8, context: int | None = None,
                 frozen: bool = False, share_prefix: bool = True, copy_bias: float = 0.0,
                 prefix_attention: bool = True, logprobs: bool = True):
        self.model, self.tokenizer = model, tokenizer
        self.logprobs = logprobs
        self.copy_bias = copy_bias
        self.max_new_tokens, self.do_sample, self.temperature = max_new_tokens, do_sample, temperature
        self.batch_size = batch_size
        self.frozen, self.share_prefix, self.prefix_attention = frozen, share_prefix, prefix_attention
        self._kept: tuple[list[int], object] | None = None   # (prefix ids, its one-row cache) when frozen
        limit = context or getattr(model.config, "max_position_embeddings", 2048)
        self.context = max(16, limit - max_new_tokens)

    def __call__(self, conversations: list[list[dict]]) -> list[Generation]:
        out: list[Generation] = []
        for start in range(0, len(conversations), self.batch_size):
            out += self._batch(conversations[start:start + self.batch_size])
        return out

    def _batch(self, conversations: list[list[dict]]) -> list[Generation]:
        import torch

        from runtime.agent.kv_cache import growing, growing_cache
        from runtime.agent.prefix_attention import prefix_once

        tok = self.tokenizer
        pad_id = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
        prompts = [render_prompt_ids(tok, messages)[-self.context:] for messages in conversations]
        was_training = self.model.training
        self.model.eval()
        try:
            cache = self._shared_prefix_cache(prompts) if self.share_prefix else None
            # With no shared prefix this is plain left padding, as decoder-only models need.
            shared = cache.get_seq_length() if cache is not None else 0
            input_ids, attention = middle_padded(prompts, shared, pad_id)
            # Either way the cache grows in place as tokens are generated (runtime.agent.kv_cache).
            extra = {cache_keyword(): growing(batch_cache(cache, len(prompts))) if cache is not None
                     else growing_cache(self.model)}
            width = input_ids.shape[1]
            if self.copy_bias:
                from transformers import LogitsProcessorList

                rows = [asked_token_ids(tok, messages) for messages in conversations]
                extra["logits_processor"] = LogitsProcessorList([CopyBiasProcessor(rows, self.copy_bias)])
            # Decoding reads the shared prefix once for all rows (runtime.agent.prefix_attention).
            with torch.no_grad(), prefix_once(self.model, shared if self.prefix_attention else 0):
                generated = self.model.generate(
                    input_ids=input_ids.to(self.model.device), attention_mask=attention.to(self.model.device), **extra,
                    max_new_tokens=self.max_new_tokens, do_sample=self.do_sample,
                    temperature=self.temperature if self.do_sample else None, top_k=None, top_p=None,
                    pad_token_id=pad_id, eos_token_id=tok.eos_token_id,
                    output_scores=self.logprobs, return_dict_in_generate=True,
                    # MoE router logits are a training signal; with a KV cache they no
                    # longer line up with the attention mask and break generation.
                    output_router_logits=False,
                )
        finally:
            self.model.train(was_training)
        new = generated.sequences[:, width:].cpu()
        logps = chosen_logprobs(generated.scores, new) if generated.scores else None
        results = []
        for row, ids in enumerate(prompts):
            completion = new[row].tolist()
            if tok.eos_token_id in completion:              # keep the end-of-turn token, drop padding
                completion = completion[: completion.index(tok.eos_token_id) + 1]
            lp = logps[row, :len(completion)].tolist() if logps is not None else []
            text = tok.decode(completion, skip_special_tokens=True)
            cut_off = tok.eos_token_id not in completion and len(completion) >= self.max_new_tokens
            results.append(Generation(text, len(ids), list(ids), completion, lp, cut_off))
        return results

    def _shared_prefix_cache(self, prompts: list[list[int]]):
        """The one-row cache of the prefix all ``prompts`` share, or None to pad them plainly.

        Frozen, a kept prefix serves every later batch that starts with it (a batch of one
        conversation too); otherwise a prefix is worth reading once only for two or more rows.
        """
        shared = shared_prefix_length(prompts)
        if self._kept is not None:
            ids, cache = self._kept
            if len(ids) <= shared and prompts[0][:len(ids)] == ids:
                return cache
        if shared < MIN_SHARED_PREFIX or (len(prompts) < 2 and not self.frozen):
            return None
        cache = prefix_cache(self.model, prompts[0][:shared])
        if cache is not None and self.frozen:
            self._kept = (prompts[0][:shared], cache)
        return cache


def max_across_ranks(trainer):
    """``n -> max of n over the training processes``, or None with one process."""
    accelerator = getattr(trainer, "accelerator", None)
    if accelerator is None or getattr(accelerator, "num_processes", 1) <= 1:
        return None
    from accelerate.utils import gather_object

    return lambda n: max(gather_object([n]))


class TrainerVLLMGenerator:
    """GRPO rollouts through the trainer's own vLLM engine (TRL's ``vllm_generation``).

    The plan's ``rollout vllm, server|colocate`` compiles to ``use_vllm`` and
    ``vllm_mode`` in the stage's GRPOConfig; TRL then builds ``trainer.vllm_generation``
    (a ``trl vllm-serve`` client or an in-process engine) and keeps its weights in step
    with the policy. The agent loop is the same as with ``HFGenerator``: only this call
    differs. Sampling settings (temperature, ``max_completion_length`` = the stage's
    ``max_new_tokens``) are the trainer's. Not run on a GPU yet (docs/training.md).

    With several processes the calls go in lockstep. In server mode TRL gathers every
    process's prompts at each call (and in colocate mode with ``vllm_tensor_parallel_size``
    above 1, those of its group), then hands each process the slice at ``rank x its own
    count``: a process that makes fewer calls, or a call with fewer prompts, hangs the
    others or gets another's completions. So each call first agrees on the largest count
    (``max_across``), pads to it with a one-token prompt whose completions are dropped, and
    a process whose episodes have ended keeps answering the others' calls (``finish``)
    until every process is done.
    """

    def __init__(self, trainer, tokenizer, max_across=None):
        self.trainer, self.tokenizer = trainer, tokenizer
        self.max_across = max_across if max_across is not None else max_across_ranks(trainer)
        self.padded_calls = 0          # calls this process made only to keep in step

    def _filler(self) -> list[int]:
        token = self.tokenizer.eos_token_id
        return [token if token is not None else 0]

    def _generate(self, prompts: list[list[int]]):
        _, completions, logprobs, _ = self.trainer.vllm_generation.generate(
            prompts=prompts, images=None, num_generations=1)
        return completions, logprobs

    def __call__(self, conversations: list[list[dict]]) -> list[Generation]:
        prompts = [render_prompt_ids(self.tokenizer, messages) for messages in conversations]
        if self.max_across is not None:
            wanted = self.max_across(len(prompts))
            prompts_sent = prompts + [self._filler()] * (wanted - len(prompts))
        else:
            prompts_sent = prompts
        if not prompts_sent:
            return []
        completions, logprobs = self._generate(prompts_sent)
        out = []
        for ids, completion, logps in zip(prompts, completions, logprobs):
            completion = list(completion)
            # vLLM returns the top logprobs per position; the first is the sampled token's.
            sampled = [float(lp[0]) if isinstance(lp, (list, tuple)) else float(lp) for lp in logps]
            text = self.tokenizer.decode(completion, skip_special_tokens=True)
            out.append(Generation(text, len(ids), list(ids), completion, sampled))
        return out

    def finish(self) -> None:
        """Take part in the other processes' calls until every process has finished its episodes."""
        if self.max_across is None:
            return
        while (wanted := self.max_across(0)) > 0:
            self._generate([self._filler()] * wanted)
            self.padded_calls += 1


# The process's one offline vLLM engine (model dir, engine): an engine takes a share of
# the GPU's memory (`gpu_memory_utilization`, 0.92 by default) until it is released, so a
# second one beside it fails. Eval decodes its arms one after another in one process.
_ENGINE: list = []


def release_vllm_engine() -> None:
    """Free the process's offline vLLM engine, if any (its GPU memory included)."""
    import gc

    if not _ENGINE:
        return
    while _ENGINE:
        _, llm = _ENGINE.pop()
        engine = getattr(llm, "llm_engine", None)
        shutdown = getattr(getattr(engine, "engine_core", None), "shutdown", None)
        if callable(shutdown):
            shutdown()
        del llm, engine
    gc.collect()
    try:
        from vllm.distributed.parallel_state import cleanup_dist_env_and_memory
    except ImportError:
        cleanup_dist_env_and_memory = None
    if cleanup_dist_env_and_memory is not None:
        cleanup_dist_env_and_memory()
    try:
        import torch
    except ImportError:
        return
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def vllm_engine(model_dir):
    """The process's offline vLLM engine for ``model_dir``: kept while the model is the same,
    the previous one released before a new model's is built."""
    if _ENGINE and _ENGINE[0][0] == str(model_dir):
        return _ENGINE[0][1]
    release_vllm_engine()
    from vllm import LLM

    llm = LLM(model=str(model_dir))
    _ENGINE.append((str(model_dir), llm))
    return llm


class VLLMGenerator:
    """Batched generation with an offline vLLM engine (``vllm.LLM``), greedy unless sampling.

    What evaluation uses when the plan's GRPO stage says ``rollout vllm``: the same agent
    loop as ``HFGenerator``, only this call differs. vLLM is an optional extra (it pins its
    own torch and transformers) and needs a GPU; not run here yet (docs/training.md).
    ``copy_bias`` is passed as each request's ``logit_bias`` (vLLM's own processor).
    One engine per process (``vllm_engine``): a generator for another arm's model frees
    the previous arm's engine first.
    """

    def __init__(self, model_dir, tokenizer, max_new_tokens: int = 256, do_sample: bool = False,
                 temperature: float = 1.0, copy_bias: float = 0.0, seed: int | None = None):
        self.tokenizer = tokenizer
        self.llm = vllm_engine(model_dir)
        self.copy_bias = copy_bias
        self.sampling = {"max_tokens": max_new_tokens, "temperature": temperature if do_sample else 0.0,
                         "logprobs": 0}
        if do_sample and seed is not None:      # vLLM seeds each request itself, not from torch's generator
            self.sampling["seed"] = seed

    def _params(self, conversations: list[list[dict]]):
        from vllm import SamplingParams

        if not self.copy_bias:
            return SamplingParams(**self.sampling)
        return [SamplingParams(**self.sampling, logit_bias={i: self.copy_bias for i in
                                                           asked_token_ids(self.tokenizer, messages)})
                for messages in conversations]

    def __call__(self, conversations: list[list[dict]]) -> list[Generation]:
        from vllm.inputs import TokensPrompt

        prompts = [render_prompt_ids(self.tokenizer, messages) for messages in conversations]
        if not prompts:
            return []
        outputs = self.llm.generate([TokensPrompt(prompt_token_ids=ids) for ids in prompts],
                                    self._params(conversations))
        results = []
        for ids, output in zip(prompts, outputs):
            sample = output.outputs[0]
            completion = list(sample.token_ids)
            logps = [float(step[token].logprob) for step, token in zip(sample.logprobs or [], completion)]
            results.append(Generation(self.tokenizer.decode(completion, skip_special_tokens=True), len(ids),
                                      list(ids), completion, logps, sample.finish_reason == "length"))
        return results

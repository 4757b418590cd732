"""A system prompt every call shares is read once per batch, or once per run when frozen,
and the model's outputs stay those of plain left-padded decoding."""

import copy

import pytest

from runtime.agent import HFGenerator
from runtime.agent.shared_prefix import MIN_SHARED_PREFIX, shared_prefix_length

# Long enough to be worth sharing, as the stuffed baseline's schema prompt is.
SCHEMA = " ".join(f"Table campaign{i} has columns name, budget and channel." for i in range(12))
QUESTIONS = ["Top 3 campaigns by budget", "Which travel campaigns are there?",
             "Rank campaigns", "Top 2 campaigns by budget in the travel channel, with their channel"]


def conversations(system=SCHEMA, questions=QUESTIONS):
    return [[{"role": "system", "content": system}, {"role": "user", "content": q}] for q in questions]


class CountingForward:
    """Counts the input tokens the model reads (prefill and decoding) with a forward pre-hook.

    Wrapping ``forward`` instead would hide its signature, from which ``generate`` decides
    to pass position ids.
    """

    def __init__(self, model):
        self.model, self.read = model, 0

    def __enter__(self):
        def count(module, args, kwargs):
            self.read += int(kwargs["input_ids"].numel())
        self.handle = self.model.register_forward_pre_hook(count, with_kwargs=True)
        return self

    def __exit__(self, *exc):
        self.handle.remove()


def test_a_shared_schema_prompt_gives_the_plain_paths_tokens_and_log_probs(tiny_model):
    model, tok = tiny_model
    # The untrained model ends its turn at once; with an end token it never writes, every
    # row decodes all 12 tokens, so decoding after the padded prefill is compared too.
    tok = copy.deepcopy(tok)
    tok.eos_token = "<|im_start|>"
    shared = HFGenerator(model, tok, max_new_tokens=12, batch_size=4)(conversations())
    # One conversation per call never shares a prefix: the plain path, row by row.
    plain = HFGenerator(model, tok, max_new_tokens=12, batch_size=1)(conversations())
    assert all(len(g.completion_ids) == 12 for g in shared)
    for a, b in zip(shared, plain):
        assert a.prompt_ids == b.prompt_ids and a.input_tokens == b.input_tokens
        assert a.completion_ids == b.completion_ids and a.text == b.text
        assert a.logprobs == pytest.approx(b.logprobs, abs=1e-4)
    # The rows' questions differ in length, so some rows carry pads between schema and
    # question; their log-probs still depend on what they were asked.
    assert len({len(g.prompt_ids) for g in shared}) > 1
    assert shared[0].logprobs != pytest.approx(shared[2].logprobs, abs=1e-4)


def test_a_batch_reads_the_shared_prompt_once_instead_of_once_per_row(tiny_model):
    model, tok = tiny_model
    batch = conversations()
    with CountingForward(model) as plain_reads:
        plain = HFGenerator(model, tok, max_new_tokens=1, batch_size=1)(batch)
    with CountingForward(model) as shared_reads:
        HFGenerator(model, tok, max_new_tokens=1, batch_size=4)(batch)
    prompts = [g.prompt_ids for g in plain]
    lengths, shared = [len(p) for p in prompts], shared_prefix_length(prompts)
    assert shared >= MIN_SHARED_PREFIX
    # One token is generated, so the model reads each prompt once: row by row, every
    # token; batched, the shared prefix once, then each row's own tokens (padded).
    assert plain_reads.read == sum(lengths)
    assert shared_reads.read == shared + len(batch) * (max(lengths) - shared)
    assert shared_reads.read < plain_reads.read / 2


def test_a_frozen_generator_keeps_the_prefix_for_later_calls_and_a_training_one_does_not(tiny_model):
    model, tok = tiny_model
    frozen = HFGenerator(model, tok, max_new_tokens=1, batch_size=4, frozen=True)
    training = HFGenerator(model, tok, max_new_tokens=1, batch_size=4)
    frozen(conversations())
    training(conversations())
    one_more = conversations(questions=["Which channel spent the most?"])
    with CountingForward(model) as kept:
        after_frozen = frozen(one_more)
    with CountingForward(model) as fresh:
        after_training = training(one_more)
    # The frozen generator reads only the new question; a generator whose model a trainer
    # updates between calls reads the whole prompt again.
    assert fresh.read == len(after_training[0].prompt_ids)
    assert kept.read < fresh.read / 2
    assert after_frozen[0].completion_ids == after_training[0].completion_ids


def test_short_prompts_are_padded_as_before(tiny_model):
    model, tok = tiny_model
    short = conversations(system="Answer in blocks.")
    prompts = [g.prompt_ids for g in HFGenerator(model, tok, max_new_tokens=1, batch_size=1)(short)]
    assert min(len(p) for p in prompts) < MIN_SHARED_PREFIX
    with CountingForward(model) as reads:
        HFGenerator(model, tok, max_new_tokens=1, batch_size=4)(short)
    assert reads.read == len(short) * max(len(p) for p in prompts)     # every row, left-padded

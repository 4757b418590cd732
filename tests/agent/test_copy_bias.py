"""`eval { copy_bias B }`: each row of a batch decodes with its own questions' tokens raised.

The bias is what makes a small model copy the asked names and numbers instead of
recalling training ones (docs/evaluation.md, "Copy bias"); these tests pin down which
tokens it raises, for which row, and that 0 is plain decoding.
"""

import copy

import torch

from runtime.agent import HFGenerator
from runtime.agent.copy_bias import CopyBiasProcessor, asked_text, asked_token_ids


def conversation(*messages):
    roles = ("system", "user", "assistant", "tool")
    return [{"role": role, "content": text} for role, text in zip(roles, messages)]


def test_the_questions_are_every_user_message_and_nothing_else():
    messages = [{"role": "system", "content": "s"}, {"role": "user", "content": "Top 3 campaigns"},
                {"role": "assistant", "content": "<CODE>x</CODE>"}, {"role": "tool", "content": "error"},
                {"role": "user", "content": "Only travel ones"}, {"role": "tool", "content": "3 rows"}]
    # A follow-up's code writes the first question's 3 again, so both questions count.
    assert asked_text(messages) == "Top 3 campaigns\nOnly travel ones"
    assert asked_text([{"role": "system", "content": "s"}]) == ""


def test_a_word_is_raised_as_written_after_a_space_and_alone(tiny_model):
    _, tok = tiny_model
    ids = asked_token_ids(tok, conversation("zxq", "Which campaigns of Maple Home ran for 30 days?"))
    for written in (" Maple", "Maple", " Home", "Home", " 30", "30"):
        assert set(tok.encode(written, add_special_tokens=False)) <= set(ids), written
    assert ids == sorted(ids)
    # Punctuation is not a word: raising `?` and `,` broke code (docs/evaluation.md).
    assert not set(tok.encode("?", add_special_tokens=False)) & set(ids)
    # The end of turn and padding are never raised: the bias must not end or lengthen a reply.
    assert not set(ids) & set(tok.all_special_ids)
    # The system prompt is not the question (this tokenizer writes `zxq` in letters the
    # question does not have).
    assert not set(tok.encode("zxq", add_special_tokens=False)) & set(ids)


def test_each_row_gets_its_own_questions_tokens():
    scores = torch.zeros(2, 6)
    biased = CopyBiasProcessor([[1, 4], [2]], 2.5)(torch.zeros(2, 1, dtype=torch.long), scores)
    assert biased.tolist() == [[0, 2.5, 0, 0, 2.5, 0], [0, 0, 2.5, 0, 0, 0]]
    # Ids past the scores' width (a tokenizer larger than the head) are ignored, not an error.
    assert CopyBiasProcessor([[9]], 1.0)(None, torch.zeros(1, 6)).tolist() == [[0.0] * 6]


def test_a_large_bias_writes_only_question_tokens_and_zero_is_plain_decoding(tiny_model):
    model, tok = tiny_model
    tok = copy.deepcopy(tok)
    tok.eos_token = "<|im_start|>"       # the untrained model would end its turn at once
    asked = [conversation("You write SQL.", "Top 3 campaigns by budget"),
             conversation("You write SQL.", "Which travel advertisers spent most in 14 days?")]
    plain = HFGenerator(model, tok, max_new_tokens=8, batch_size=2)(asked)
    zero = HFGenerator(model, tok, max_new_tokens=8, batch_size=2, copy_bias=0.0)(asked)
    assert [g.completion_ids for g in zero] == [g.completion_ids for g in plain]
    # A random tiny model's logits are a few units apart: at 20 every greedy token is one
    # of its own row's question tokens.
    biased = HFGenerator(model, tok, max_new_tokens=8, batch_size=2, copy_bias=20.0)(asked)
    for generation, messages in zip(biased, asked):
        assert len(generation.completion_ids) == 8
        assert set(generation.completion_ids) <= set(asked_token_ids(tok, messages))
    assert [g.completion_ids for g in biased] != [g.completion_ids for g in plain]

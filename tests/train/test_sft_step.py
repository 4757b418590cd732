"""The sft step's arithmetic: how much room and how many steps each arm gets."""

from runtime.train.step import arm_max_length, token_matched_steps


def test_the_stripped_arm_keeps_the_recipes_max_length():
    assert arm_max_length(2304, context=8192, longest=2229, longest_stripped=2229) == 2304


def test_the_stuffed_arm_gets_the_same_room_plus_its_prompt_overhead():
    assert arm_max_length(2304, context=8192, longest=6652, longest_stripped=2229) == 2304 + 4423


def test_the_model_context_caps_every_arm():
    assert arm_max_length(2304, context=4096, longest=6652, longest_stripped=2229) == 4096


def test_token_matched_steps_give_the_stuffed_arm_the_stripped_arms_tokens():
    # 929,368 stripped tokens; stuffed examples of ~5,700 tokens, 4 per step -> about 41 steps
    assert token_matched_steps(929_368, [5_700] * 189, 4) == 41
    assert token_matched_steps(10, [5_000], 4) == 1     # never zero steps


def test_the_truncation_warning_counts_the_rows_a_short_run_trains_not_the_whole_dataset():
    """256 steps of one conversation over 866 train the trainer's seeded draw of 256 rows:
    the warning counts those, and names the dataset they were drawn from."""
    from types import SimpleNamespace as NS

    from datasets import Dataset

    from runtime.train.step import _trained_lengths, truncation_warning

    lengths = [3000 if i % 2 else 100 for i in range(866)]       # every odd row is too long
    trl = {"max_steps": 256, "data_seed": 2027, "seed": 2027}
    trained, drawn_from = _trained_lengths(lengths, trl, {}, 1, NS(question_dropout=0.0))
    drawn = Dataset.from_dict({"n": list(range(866))}).shuffle(seed=2027).select(range(256))["n"]
    assert drawn_from == 866 and trained == [lengths[i] for i in drawn]     # the trainer's own draw
    over = sum(1 for i in drawn if i % 2)
    assert truncation_warning("craft", trained, 2304, drawn_from).startswith(
        f"craft: {over} of the 256 examples this run trains (a draw of 866) are longer than max_length 2304")
    # Whole epochs, a budget past one pass, or question dropout's rewritten passes: every row.
    assert _trained_lengths(lengths, {**trl, "max_steps": -1}, {}, 1, NS(question_dropout=0.0)) == (lengths, None)
    assert _trained_lengths(lengths, trl, {"max_steps": 900}, 1, NS(question_dropout=0.0)) == (lengths, None)
    assert _trained_lengths(lengths, trl, {}, 1, NS(question_dropout=0.3)) == (lengths, None)

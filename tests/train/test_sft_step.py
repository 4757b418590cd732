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

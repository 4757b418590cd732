"""`earlier_turns compact` and `thinks`: a follow-up question sees each earlier turn shortened.

Under `compact` an earlier turn is its question, last code and answer; under `thinks`, its
question, last THINK block and answer. The rules live in ``runtime.agent.history``. The
training data (one example per turn), GRPO's reference rows and the agent loop at eval all
apply them, so the agent is trained on the context it meets; these tests hold each of them
to the same shortened messages.
"""

import pytest

from craftc.ir import BlockFormat
from runtime.agent import AgentTask, run_episodes
from runtime.agent.history import compact_before_last_question, compact_turn, earlier_turns_of
from runtime.distill.blocks import format_answer, format_turn
from runtime.distill.datasets import build_examples
from tests.agent.test_loop import SYSTEM, Script
from tests.agent.warehouse import TOP_CODE, TRAVEL_CODE, assistant, task_dict

FMT = BlockFormat()


def _turn(ask: str, *calls: tuple[str, str], answer: str | None = None) -> list[dict]:
    messages = [{"role": "user", "content": ask}]
    for code, output in calls:
        messages += [{"role": "assistant", "content": format_turn("think", "plan", code, FMT)},
                     {"role": "tool", "content": output}]
    if answer is not None:
        messages.append({"role": "assistant", "content": format_answer(answer, FMT)})
    return messages


def test_an_earlier_turn_keeps_its_question_its_last_code_and_its_answer():
    turn = _turn("Top 3 campaigns?", ("result = broken", "NameError: broken"), ("result = top(3)", "a 1\n[1 rows x 1 columns]"),
                 answer="Winter Fly leads.")
    assert compact_turn(turn, FMT) == [
        {"role": "user", "content": "Top 3 campaigns?"},
        {"role": "assistant", "content": "<CODE>\nresult = top(3)\n</CODE>"},
        {"role": "assistant", "content": "<ANSWER>\nWinter Fly leads.\n</ANSWER>"},
    ]


def test_under_thinks_an_earlier_turn_keeps_the_last_attempts_reasoning_instead_of_its_code():
    turn = [{"role": "user", "content": "Top 3 travel campaigns?"},
            {"role": "assistant", "content": format_turn("Parameters: n = 2.", "plan", "result = broken", FMT)},
            {"role": "tool", "content": "NameError: broken"},
            {"role": "assistant", "content": format_turn("Parameters: n = 3, industry = travel.", "plan",
                                                         "result = top(3)", FMT)},
            {"role": "tool", "content": "a 1\n[1 rows x 1 columns]"},
            {"role": "assistant", "content": format_answer("Winter Fly leads.", FMT)}]
    assert compact_turn(turn, FMT, rule="thinks") == [
        {"role": "user", "content": "Top 3 travel campaigns?"},
        {"role": "assistant", "content": "<THINK>\nParameters: n = 3, industry = travel.\n</THINK>"},
        {"role": "assistant", "content": "<ANSWER>\nWinter Fly leads.\n</ANSWER>"},
    ]


def test_every_shortening_rule_the_ir_declares_names_the_block_it_keeps():
    from runtime.agent.history import EARLIER_TURNS, KEPT_BLOCK

    assert set(KEPT_BLOCK) == set(EARLIER_TURNS) - {"full"}


def test_a_turn_that_wrote_no_code_keeps_only_its_question():
    turn = [{"role": "user", "content": "Hello?"}, {"role": "assistant", "content": "I am not sure."},
            {"role": "tool", "content": "FormatError: no <CODE> block and no <ANSWER> block"}]
    assert compact_turn(turn, FMT) == [{"role": "user", "content": "Hello?"}]


def test_only_the_turn_before_the_new_question_is_compacted_and_the_system_prompt_stays():
    messages = [{"role": "system", "content": "s"}, *_turn("q1", ("result = 1", "1"), answer="one"),
                {"role": "user", "content": "q2"}]
    compacted = compact_before_last_question(messages, FMT)
    assert [m["role"] for m in compacted] == ["system", "user", "assistant", "assistant", "user"]
    # Asking a third question leaves the compacted first turn as it is.
    later = compacted + _turn("q2", ("result = 2", "2"), answer="two")[1:] + [{"role": "user", "content": "q3"}]
    again = compact_before_last_question(later, FMT)
    assert again[:4] == compacted[:4] and [m["content"] for m in again if m["role"] == "user"] == ["q1", "q2", "q3"]
    assert not any(m["role"] == "tool" for m in again)


def _replies():
    broken = "result = api.query('SELECT nme FROM campaign')"
    return [assistant("List campaigns.", broken), assistant("Rank campaigns.", TOP_CODE.format(n=2)),
            "<ANSWER>\nWinter Fly leads.\n</ANSWER>", assistant("Keep travel.", TRAVEL_CODE.format(n=2))]


def test_the_agent_loop_asks_a_follow_up_on_the_compacted_history(sandbox):
    task = AgentTask.from_dict(task_dict(n=2))
    model = Script(_replies())
    episode = run_episodes(model, [task], SYSTEM, sandbox, max_turns=3, earlier_turns="compact")[0]
    assert [len(t.calls) for t in episode.turns] == [2, 1] and all(t.final_ok for t in episode.turns)
    # The repair still saw its failed attempt and the error: the turn being worked on is whole.
    assert [m["role"] for m in model.seen[1]] == ["system", "user", "assistant", "tool"]
    # The follow-up saw the first turn as question, the code that ran, and the answer.
    assert model.seen[3] == [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": task.turns[0].ask},
        {"role": "assistant", "content": f"<CODE>\n{TOP_CODE.format(n=2).strip()}\n</CODE>"},
        {"role": "assistant", "content": "<ANSWER>\nWinter Fly leads.\n</ANSWER>"},
        {"role": "user", "content": task.turns[1].ask},
    ]
    # The same replies with the whole history: the follow-up's input is longer, the rest alike.
    whole = run_episodes(Script(_replies()), [task], SYSTEM, sandbox, max_turns=3)[0]
    assert [c.input_tokens for c in whole.turns[0].calls] == [c.input_tokens for c in episode.turns[0].calls]
    assert whole.turns[1].calls[0].input_tokens > episode.turns[1].calls[0].input_tokens


def test_the_agent_loop_asks_a_follow_up_on_the_earlier_thinks(sandbox):
    task = AgentTask.from_dict(task_dict(n=2))
    model = Script(_replies())
    episode = run_episodes(model, [task], SYSTEM, sandbox, max_turns=3, earlier_turns="thinks")[0]
    assert [len(t.calls) for t in episode.turns] == [2, 1] and all(t.final_ok for t in episode.turns)
    assert model.seen[3] == [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": task.turns[0].ask},
        {"role": "assistant", "content": "<THINK>\nthink\n</THINK>"},
        {"role": "assistant", "content": "<ANSWER>\nWinter Fly leads.\n</ANSWER>"},
        {"role": "user", "content": task.turns[1].ask},
    ]


def test_an_unknown_rule_is_refused_by_the_loop_and_by_the_plan_reader(sandbox):
    task = AgentTask.from_dict(task_dict(n=2))
    with pytest.raises(ValueError, match="earlier_turns must be one of full, compact, thinks"):
        run_episodes(Script([]), [task], SYSTEM, sandbox, earlier_turns="summary")
    with pytest.raises(ValueError, match="recompile the recipe"):
        earlier_turns_of({"earlier_turns": "summary"})
    assert earlier_turns_of({}) == "full"


def _two_turn_examples(earlier_turns: str) -> list[dict]:
    instance = {"instance_id": "i-0", "workflow": "w", "split": "train",
                "turns": [{"ask": "Top 2 campaigns?"}, {"ask": "Only travel?"}]}
    ok = {"ok": True, "rows": 1, "columns": ["name"], "preview": "name\nWinter Fly\n[1 rows x 1 columns]"}
    failed = {"text": format_turn("t", "p", "result = nme", FMT), "output": "NameError: nme"}
    accepted = {("i-0", 0): [{"text": format_turn("t0", "p0", "result = top(2)", FMT), "execution": ok,
                              "attempts": [failed]}],
                ("i-0", 1): [{"text": format_turn("t1", "p1", "result = travel(2)", FMT), "execution": ok}]}
    return build_examples([instance], accepted, {"stripped": "s", "stuffed": "S"},
                          {"user": "{ask}", "tool": "{output}"}, FMT, earlier_turns)["stripped"]


def test_compacted_training_data_has_one_example_per_turn_and_trains_each_reply_once():
    whole = _two_turn_examples("full")
    per_turn = _two_turn_examples("compact")
    assert len(whole) == 1 and len(per_turn) == 2
    first, second = (example["messages"] for example in per_turn)
    # The first turn's example is the first turn as the whole conversation has it.
    assert first == whole[0]["messages"][: len(first)]
    # The second turn's example sees the first one compacted, masked: it trained in its own example.
    assert [(m["role"], m.get("masked", False)) for m in second[:4]] == [
        ("system", False), ("user", False), ("assistant", True), ("assistant", True)]
    assert second[2]["content"] == "<CODE>\nresult = top(2)\n</CODE>"
    trained = [m["content"] for example in per_turn for m in example["messages"]
               if m["role"] == "assistant" and not m.get("masked")]
    trained_whole = [m["content"] for m in whole[0]["messages"] if m["role"] == "assistant" and not m.get("masked")]
    assert sorted(trained) == sorted(trained_whole)
    assert all(example["turns"] == 2 for example in per_turn)


def test_training_data_under_thinks_shows_the_second_turn_the_first_ones_think_masked():
    per_turn = _two_turn_examples("thinks")
    assert len(per_turn) == 2
    second = per_turn[1]["messages"]
    assert [(m["role"], m.get("masked", False)) for m in second[:4]] == [
        ("system", False), ("user", False), ("assistant", True), ("assistant", True)]
    # The THINK of the attempt that ran, not of the failed one before it.
    assert second[2]["content"] == "<THINK>\nt0\n</THINK>"


def test_a_reference_turn_restates_its_question_and_the_params_used_so_far():
    """GRPO's and verl's reference rows: under `thinks` the THINK is what a follow-up keeps."""
    from runtime.train.reference_turns import reference_turn_texts

    task = AgentTask.from_dict(task_dict(n=3))
    first, second = reference_turn_texts(task, FMT)
    assert first.startswith("<THINK>\nQuestion: Top 3 campaigns by budget\nParameters: n = 3.\n</THINK>\n<PLAN>")
    # The follow-up's reference keeps the earlier turn's parameter, and its own code.
    assert second.startswith("<THINK>\nQuestion: Only travel advertisers\nParameters: n = 3.\n</THINK>")
    assert TRAVEL_CODE.format(n=3).strip() in second
    kept = compact_turn([{"role": "user", "content": "q"}, {"role": "assistant", "content": first}], FMT, "thinks")
    assert kept[1]["content"] == "<THINK>\nQuestion: Top 3 campaigns by budget\nParameters: n = 3.\n</THINK>"

"""`stage sft { prefix_epochs N  prefix_history H  prefix_renames R }`: a warm-up on each turn's
reasoning block before the whole conversations, with the whole conversation before it or only
the questions and reasoning blocks (`thinks`), and R copies of each first turn whose names are
made up."""

from __future__ import annotations

import json

import pytest

from runtime.train.curriculum import (CurriculumError, prefix_conversations, prefix_messages, read_curriculum,
                                      think_conversation)
from runtime.train.masking import ASSISTANT_ONLY
from runtime.train.sft import PREFIX_DIR, SFTSetupError, StepConfig, train_sft
from test_sft import SHORT

CONVERSATION = [
    {"role": "system", "content": "You are an analyst."},
    {"role": "user", "content": "Top 3 campaigns"},
    {"role": "assistant", "content": "<THINK>\nQuestion: Top 3 campaigns\n</THINK>\n<PLAN>\nrank\n</PLAN>\n<CODE>\nx\n</CODE>"},
    {"role": "tool", "content": "3 rows"},
    {"role": "assistant", "content": "<ANSWER>\nthree\n</ANSWER>"},
    {"role": "user", "content": "Only search"},
    {"role": "assistant", "content": "<THINK>\nQuestion: only search\n</THINK>\n<PLAN>\nfilter\n</PLAN>"},
]
WHOLE = {"prefix_epochs": 1.0, "cut_after": "</THINK>", "history": "conversation"}
THINKS = {**WHOLE, "history": "thinks"}


def test_every_turn_with_a_reasoning_block_becomes_one_example_cut_after_it():
    examples = prefix_messages(CONVERSATION, "</THINK>")
    assert [len(e) for e in examples] == [3, 7]
    assert examples[0][-1]["content"] == "<THINK>\nQuestion: Top 3 campaigns\n</THINK>"
    assert examples[1][-1]["content"] == "<THINK>\nQuestion: only search\n</THINK>"
    # the history before a later turn is the conversation as it was, whole
    assert examples[1][:6] == CONVERSATION[:6]


def test_a_teachers_failed_attempt_is_never_a_warm_up_target():
    failed = [*CONVERSATION[:2], {**CONVERSATION[2], "masked": True}]
    assert prefix_messages(failed, "</THINK>") == []


def test_the_warm_up_dataset_keeps_the_datasets_order():
    from datasets import Dataset

    ds = Dataset.from_list([{"messages": CONVERSATION}, {"messages": CONVERSATION[:3]}])
    assert [len(m) for m in prefix_conversations(ds, WHOLE)["messages"]] == [3, 7, 3]
    assert [len(m) for m in prefix_conversations(ds, THINKS)["messages"]] == [5, 3]


def test_renamed_copies_of_the_first_turn_make_up_the_names_it_asks_about():
    from datasets import Dataset

    asked = [{**m, "content": m["content"].replace("Top 3 campaigns", "Top 3 campaigns of Maple Home")}
             if m["role"] in ("user", "assistant") and "Top 3" in m["content"] else m for m in CONVERSATION]
    ds = Dataset.from_list([{"messages": asked, "names": ["Maple Home", "search"], "instance_id": "w-0001",
                             "variant": 0}])
    examples = prefix_conversations(ds, {**WHOLE, "renames": 2})["messages"]
    assert [len(m) for m in examples] == [3, 7, 3, 3]         # the two turns, then two renamed first turns
    first = examples[0]
    for renamed in examples[2:]:
        question, think = renamed[1]["content"], renamed[2]["content"]
        made_up = question.removeprefix("Top 3 campaigns of ")
        assert "Maple Home" not in question + think and made_up in think
        assert renamed[0] == first[0]                          # the system prompt is kept
    assert examples[2][1] != examples[3][1]                    # each copy has its own names
    # the same dataset gives the same examples
    assert prefix_conversations(ds, {**WHOLE, "renames": 2})["messages"] == examples


def test_renamed_first_turns_through_the_code_rename_its_plan_and_code_and_stop_before_the_tool_output():
    from datasets import Dataset

    asked = [{**m, "content": m["content"].replace("Top 3 campaigns", "Top 3 campaigns of Maple Home")
              .replace("<CODE>\nx\n", "<CODE>\nrows(advertiser='Maple Home')\n")} for m in CONVERSATION]
    ds = Dataset.from_list([{"messages": asked, "names": ["Maple Home"], "instance_id": "w-0001", "variant": 0}])
    through_think = prefix_conversations(ds, {**WHOLE, "renames": 1})["messages"][-1]
    through_code = prefix_conversations(ds, {**WHOLE, "renames": 1, "renames_cut_after": "</CODE>"})["messages"][-1]
    assert through_think[-1]["content"].endswith("</THINK>")
    assert [m["role"] for m in through_code] == ["system", "user", "assistant"]     # no tool output
    reply = through_code[-1]["content"]
    assert reply.endswith("</CODE>") and "Maple Home" not in reply
    made_up = through_code[1]["content"].removeprefix("Top 3 campaigns of ")
    assert f"rows(advertiser='{made_up}')" in reply and reply.startswith(through_think[-1]["content"])


def test_the_plan_says_where_renamed_first_turns_end_only_when_it_is_not_the_default():
    from craftc.emit.stages import curriculum_json
    from craftc.ir import BlockFormat, Recipe, SFTStage

    recipe = Recipe.model_construct(format=BlockFormat())     # the emitter reads only the block tags
    think = json.loads(curriculum_json(recipe, SFTStage(name="sft", prefix_epochs=3, prefix_renames=1)))
    code = json.loads(curriculum_json(recipe, SFTStage(name="sft", prefix_epochs=3, prefix_renames=1,
                                                       prefix_renames_through="code")))
    assert "renames_cut_after" not in think and code["renames_cut_after"] == "</CODE>"


def test_renamed_examples_need_the_datasets_names_column():
    from datasets import Dataset

    ds = Dataset.from_list([{"messages": CONVERSATION}])
    with pytest.raises(CurriculumError, match="no `names` column.*--only dataset"):
        prefix_conversations(ds, {**WHOLE, "renames": 1})


def test_a_thinks_example_is_the_questions_each_followed_by_its_reasoning_block():
    example, = think_conversation(CONVERSATION, "</THINK>")
    assert [(m["role"], m["content"]) for m in example] == [
        ("system", "You are an analyst."),
        ("user", "Top 3 campaigns"), ("assistant", "<THINK>\nQuestion: Top 3 campaigns\n</THINK>"),
        ("user", "Only search"), ("assistant", "<THINK>\nQuestion: only search\n</THINK>")]
    assert not any(m["masked"] for m in example)


def test_a_repairs_reasoning_block_is_context_in_a_thinks_example_not_a_target():
    # The repair may speak of the error; the example no longer holds the error, so it is not trained.
    repaired = [*CONVERSATION[:2], {**CONVERSATION[2], "masked": True}, CONVERSATION[3],
                {**CONVERSATION[2], "content": "<THINK>\nThe error names x\n</THINK>\n<CODE>\ny\n</CODE>"},
                *CONVERSATION[3:]]
    example, = think_conversation(repaired, "</THINK>")
    assert [(m["content"], m["masked"]) for m in example if m["role"] == "assistant"] == [
        ("<THINK>\nThe error names x\n</THINK>", True), ("<THINK>\nQuestion: only search\n</THINK>", False)]
    # a conversation whose only reply was a repair leaves nothing to train
    assert think_conversation(repaired[:5], "</THINK>") == []


def test_the_plan_file_is_read_or_named_with_the_fix(tmp_path):
    assert read_curriculum(tmp_path, "sft") is None
    stage = tmp_path / "stages" / "sft"
    stage.mkdir(parents=True)
    (stage / "curriculum.json").write_text(json.dumps({"prefix_epochs": 2, "cut_after": "</THINK>", "history": "thinks"}))
    assert read_curriculum(tmp_path, "sft") == {"prefix_epochs": 2.0, "cut_after": "</THINK>", "history": "thinks",
                                                "renames": 0, "renames_cut_after": "</THINK>", "question_dropout": 0.0}
    (stage / "curriculum.json").write_text(json.dumps({"prefix_epochs": 2, "cut_after": "</THINK>", "history": "all"}))
    with pytest.raises(CurriculumError, match="unknown history `all`.*recompile"):
        read_curriculum(tmp_path, "sft")
    (stage / "curriculum.json").write_text("{")
    with pytest.raises(CurriculumError, match="curriculum.json.*recompile"):
        read_curriculum(tmp_path, "sft")


def test_the_step_config_may_carry_the_warm_ups_measured_steps(tmp_path):
    config = {"model_dir": "m", "dataset_dir": "d", "out_dir": "o", "trl_overrides": {},
              "prefix_overrides": {"max_steps": 3}}
    (tmp_path / "c.json").write_text(json.dumps(config))
    assert StepConfig.read(tmp_path / "c.json")["prefix_overrides"] == {"max_steps": 3}


def test_the_warm_up_trains_first_then_the_whole_conversations(tiny_model_dir, dataset_dir, tmp_path):
    curriculum = WHOLE
    summary = train_sft(tiny_model_dir, dataset_dir, tmp_path, {**SHORT, "max_steps": 4, "save_steps": 100},
                        ASSISTANT_ONLY, curriculum=curriculum, prefix_overrides={"max_steps": 3})
    warm_up = summary["prefix_warm_up"]
    assert warm_up["steps"] == 3 and warm_up["examples"] > 0
    assert summary["steps"] == 4                       # the main phase counts its own steps
    assert (tmp_path / PREFIX_DIR).is_dir() and (tmp_path / "final" / "config.json").is_file()
    # a warm-up example trains a few dozen tokens, a whole conversation hundreds
    assert warm_up["num_tokens"] / (3 * SHORT["per_device_train_batch_size"]) < summary["num_tokens"] / 16


def test_a_warm_up_with_nothing_to_cut_is_refused_before_any_training(tiny_model_dir, dataset_dir, tmp_path):
    curriculum = {**WHOLE, "cut_after": "</SCRATCH>"}     # a tag the conversations never use
    with pytest.raises(SFTSetupError, match="no trained reply holds `</SCRATCH>`.*remove `prefix_epochs`"):
        train_sft(tiny_model_dir, dataset_dir, tmp_path, SHORT, ASSISTANT_ONLY, curriculum=curriculum)
    assert not (tmp_path / "final").exists() and not list(tmp_path.glob("checkpoint-*"))


def test_the_sft_step_counts_the_conversations_its_warm_up_skips(tiny_model_dir, tmp_path):
    from datasets import Dataset

    from runtime.train.step import example_lengths

    # The second conversation's only trained reply repairs a failed attempt: under `thinks`
    # it gives no warm-up example, and the step warns with this count.
    attempt = {**CONVERSATION[2], "masked": True}
    repaired = [*CONVERSATION[:2], attempt, {"role": "tool", "content": "BinderError: x"}, CONVERSATION[2]]
    rows = [[{**m, "masked": bool(m.get("masked"))} for m in convo] for convo in (CONVERSATION, repaired)]
    Dataset.from_list([{"messages": r} for r in rows]).save_to_disk(str(tmp_path / "data"))
    thinks = example_lengths(tiny_model_dir, tmp_path / "data", THINKS)
    assert len(thinks.whole) == 2 and len(thinks.cuts) == 1 and thinks.without == 1
    whole = example_lengths(tiny_model_dir, tmp_path / "data", WHOLE)
    assert len(whole.cuts) == 3 and whole.without == 0          # the repair is a target when the history is whole


def test_the_sft_step_counts_renamed_first_turns_and_the_conversations_without_one(tiny_model_dir, tmp_path):
    from datasets import Dataset

    from runtime.train.step import example_lengths

    # The first question names `Maple Home`; the second names none of its conversation's names.
    asked = [{**m, "content": m["content"].replace("Top 3 campaigns", "Top 3 campaigns of Maple Home")}
             for m in CONVERSATION]
    rows = [{"messages": asked, "names": ["Maple Home"]}, {"messages": CONVERSATION, "names": ["Prime Labs"]}]
    Dataset.from_list(rows).save_to_disk(str(tmp_path / "data"))
    counted = example_lengths(tiny_model_dir, tmp_path / "data", {**WHOLE, "renames": 2})
    assert (len(counted.cuts), counted.renamed, counted.not_renamed) == (2 + 2 + 2, 2, 1)
    plain = example_lengths(tiny_model_dir, tmp_path / "data", WHOLE)
    assert (len(plain.cuts), plain.renamed, plain.not_renamed) == (4, 0, 0)


def test_the_dataset_step_gives_each_conversation_the_names_its_questions_are_drawn_with():
    from craftc.ir import BlockFormat
    from runtime.distill.blocks import format_turn
    from runtime.distill.datasets import build_examples

    instance = {"instance_id": "i-0", "workflow": "w", "split": "train",
                "params": {"advertiser": "Maple Home", "channel": "search", "n": 3, "days": 30},
                "turns": [{"ask": "Top 3 search campaigns of Maple Home"}]}
    execution = {"ok": True, "result_rows": 0, "result_columns": [], "result_preview": ""}
    accepted = {("i-0", 0): [{"text": format_turn("t", "p", "result = 1", BlockFormat()), "execution": execution}]}
    out = build_examples([instance], accepted, {"stripped": "s", "stuffed": "S"}, {"user": "{ask}", "tool": "{output}"},
                         BlockFormat())
    assert [e["names"] for mode in ("stripped", "stuffed") for e in out[mode]] == [["Maple Home", "search"]] * 2


def test_a_schema_prompt_every_text_shares_is_counted_once_and_the_counts_are_the_whole_texts(tiny_model_dir,
                                                                                               monkeypatch):
    from transformers import AutoTokenizer

    from runtime.train import step
    from runtime.train.step import MIN_SHARED_HEAD, token_counts

    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    schema = " ".join(f"Table campaign{i} has columns name, budget and channel." for i in range(40))
    asks = ["Top 3 campaigns by budget", "Which travel campaigns are there?", "Rank campaigns"]
    texts = [tokenizer.apply_chat_template([{"role": "system", "content": schema}, {"role": "user", "content": a}],
                                           tokenize=False) for a in asks]
    whole = [len(tokenizer(t, add_special_tokens=False)["input_ids"]) for t in texts]
    heads = []
    real_head = step.shared_head
    monkeypatch.setattr(step, "shared_head", lambda *a: heads.append(real_head(*a)) or heads[-1])
    assert token_counts(tokenizer, texts) == whole
    assert len(heads[0]) >= MIN_SHARED_HEAD and heads[0].endswith(("<|im_end|>", "<|im_start|>"))
    # A head that does not end where the tokenizer splits (here: mid-word) fails the check on
    # the first text, and every text is tokenized whole.
    cut = texts[0].index("campaign7") + len("camp")
    split = sum(len(tokenizer(part, add_special_tokens=False)["input_ids"]) for part in (texts[0][:cut], texts[0][cut:]))
    assert split != whole[0]
    monkeypatch.setattr(step, "shared_head", lambda *a: texts[0][:cut])
    assert token_counts(tokenizer, texts) == whole

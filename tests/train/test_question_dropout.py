"""`stage sft { question_dropout 20% }`: in every pass, two thirds of the training questions
lose that share of their words, never a parameter value, and the reasoning block restates
the question as rewritten (runtime.train.question_dropout)."""

from __future__ import annotations

import random

from datasets import Dataset

from runtime.train.curriculum import read_curriculum
from runtime.train.masking import ASSISTANT_ONLY
from runtime.train.question_dropout import KEEP, drop_words, rewritten_passes, rewritten_row
from runtime.train.sft import train_sft
from test_sft import SHORT

QUESTION = "Which 5 campaigns of Maple Home had the best CTR in the last 30 days?"
ROW = {"instance_id": "top_ctr-0001", "variant": 0, "names": ["Maple Home"], "messages": [
    {"role": "system", "content": "You are an analyst."},
    {"role": "user", "content": QUESTION},
    {"role": "assistant", "content": f"<THINK>\nQuestion: {QUESTION}\nParameters: n = 5.\n</THINK>\n<CODE>\nx\n</CODE>"},
    {"role": "tool", "content": f"Output: {QUESTION}"},
    {"role": "user", "content": "Only the search channel"},
    {"role": "assistant", "content": "<THINK>\nQuestion: Only the search channel\n</THINK>"},
]}


def test_a_rewritten_question_keeps_its_names_and_numbers_and_leaves_out_words():
    rewritten = [drop_words(QUESTION, ["Maple Home"], 0.3, random.Random(seed)) for seed in range(200)]
    assert all("Maple Home" in q and "5" in q.split() and "30" in q.split() for q in rewritten)
    changed = [q for q in rewritten if q != QUESTION]
    assert changed and all(len(q.split()) <= len(QUESTION.split()) for q in changed)
    # A third of the draws keep the question as written (and a few drop nothing).
    assert KEEP - 0.1 < 1 - len(changed) / len(rewritten) < KEEP + 0.15


def test_at_rate_zero_nothing_changes():
    assert rewritten_row(ROW, 0.0, "main") == ROW


def test_the_reasoning_block_restates_the_question_as_rewritten_and_tool_output_is_left_alone():
    row = next(r for r in (rewritten_row(ROW, 0.5, f"warm{k}") for k in range(20))
               if r["messages"][1]["content"] != QUESTION)
    new = row["messages"][1]["content"]
    assert f"Question: {new}\n" in row["messages"][2]["content"]
    assert row["messages"][3]["content"] == f"Output: {QUESTION}"        # a tool's output is what it was
    assert row["messages"][0] == ROW["messages"][0]


def test_draws_are_seeded_per_pass():
    assert rewritten_row(ROW, 0.5, "warm1") == rewritten_row(ROW, 0.5, "warm1")
    passes = {rewritten_row(ROW, 0.5, f"warm{k}")["messages"][1]["content"] for k in range(10)}
    assert len(passes) > 2


def test_the_passes_are_copies_each_rewritten_and_trained_once():
    dataset = Dataset.from_list([ROW] * 4)
    copies, epochs = rewritten_passes(dataset, 0.5, 3.0, "warm")
    assert len(copies) == 12 and epochs == 1.0
    assert len({row["messages"][1]["content"] for row in copies}) > 1
    half, epochs = rewritten_passes(dataset, 0.5, 0.5, "main")
    assert len(half) == 4 and epochs == 0.5


def test_the_plan_file_carries_the_rate_and_reads_back(tmp_path):
    (tmp_path / "stages/sft").mkdir(parents=True)
    (tmp_path / "stages/sft/curriculum.json").write_text(
        '{"prefix_epochs": 0.0, "cut_after": "</THINK>", "history": "conversation", "question_dropout": 0.2}')
    assert read_curriculum(tmp_path, "sft")["question_dropout"] == 0.2
    (tmp_path / "stages/sft/curriculum.json").write_text(
        '{"prefix_epochs": 1.0, "cut_after": "</THINK>", "history": "conversation"}')
    assert read_curriculum(tmp_path, "sft")["question_dropout"] == 0.0      # a plan from before the setting


def test_question_dropout_trains_without_a_warm_up(tiny_model_dir, dataset_dir, tmp_path):
    curriculum = {"prefix_epochs": 0.0, "cut_after": "</THINK>", "history": "conversation", "renames": 0,
                  "renames_cut_after": "</THINK>", "question_dropout": 0.3}
    summary = train_sft(tiny_model_dir, dataset_dir, tmp_path, {**SHORT, "max_steps": 2, "save_steps": 100},
                        ASSISTANT_ONLY, curriculum=curriculum)
    assert summary["steps"] == 2 and summary["prefix_warm_up"] is None

"""The mask report proves that SFT trains on assistant output only."""

from __future__ import annotations

import json

import pytest

from runtime.train.masking import MaskingError, attribute_tokens, check_masking, mask_report, write_mask_report
from runtime.train.tiny_moe import CHAT_TEMPLATE

# Negative control: the same template, except that tool messages render inside
# {% generation %}, so tool output (ids, timestamps) would be trained on.
TOOL_INSIDE_GENERATION = CHAT_TEMPLATE.replace(
    "{%- else %}{{- '<|im_start|>' + message.role",
    "{%- elif message.role == 'tool' %}{{- '<|im_start|>tool\\n' }}{%- generation %}{{- content + '<|im_end|>' }}"
    "{%- endgeneration %}{{- '\\n' }}{%- else %}{{- '<|im_start|>' + message.role",
)


@pytest.fixture
def wrong_tokenizer(tokenizer):
    import copy

    assert TOOL_INSIDE_GENERATION != CHAT_TEMPLATE
    wrong = copy.deepcopy(tokenizer)
    wrong.chat_template = TOOL_INSIDE_GENERATION
    return wrong


def test_only_assistant_output_is_trainable(tokenizer, conversations):
    report = mask_report(tokenizer, conversations, n_samples=16, seed=0)
    roles = report["per_role"]
    assert roles["assistant"]["trainable"] > 0
    # The assistant header `<|im_start|>assistant\n` is given to the model, not trained.
    assert roles["assistant"]["masked"] > 0
    for role in ("system", "user", "tool"):
        assert roles[role]["trainable"] == 0 and roles[role]["masked"] > 0
    assert report["violations"] == [] and report["untrained_examples"] == []
    assert report["eos_trained"]["trained"] == report["eos_trained"]["total"] > 0
    check_masking(report)  # does not raise


def test_trained_spans_are_exactly_the_assistant_blocks(tokenizer, conversations):
    tokens = attribute_tokens(tokenizer, conversations[0]["messages"])
    trained = "".join(t["text"] for t in tokens if t["trained"])
    assistant = [m["content"] for m in conversations[0]["messages"] if m["role"] == "assistant"]
    assert trained == "".join(a + "<|im_end|>" for a in assistant)


def test_rendered_samples_mark_trained_spans(tokenizer, conversations):
    report = mask_report(tokenizer, conversations, n_samples=4, seed=1, n_rendered=2)
    marked = report["samples"][0]["marked"]
    assert "<|im_start|>assistant\n[[<THINK>" in marked
    assert "</CODE><|im_end|>]]\n<|im_start|>tool\ncampaign_id" in marked
    assert len(report["samples"]) == 2


def test_report_is_reproducible_and_written_as_json_and_markdown(tokenizer, conversations, tmp_path):
    a = mask_report(tokenizer, conversations, n_samples=5, seed=3)
    assert a == mask_report(tokenizer, conversations, n_samples=5, seed=3)
    json_path, md_path = write_mask_report(a, tmp_path)
    assert json.loads(json_path.read_text()) == json.loads(json.dumps(a))
    md = md_path.read_text()
    assert "| tool | 0 |" in md and "[[" in md


def test_tool_output_inside_generation_fails_with_a_clear_message(wrong_tokenizer, conversations):
    report = mask_report(wrong_tokenizer, conversations, n_samples=4, seed=0)
    assert report["per_role"]["tool"]["trainable"] > 0
    with pytest.raises(MaskingError, match=r"\(tool\)"):
        check_masking(report)


def test_a_spec_that_trains_tool_output_fails_with_a_clear_message(tokenizer, conversations):
    roles = {"assistant": "trained", "system": "masked", "tool": "trained", "user": "masked"}
    report = mask_report(tokenizer, conversations, n_samples=4, seed=0, roles=roles)
    assert report["per_role"]["tool"]["trainable"] > 0
    with pytest.raises(MaskingError) as err:
        check_masking(report)
    msg = str(err.value)
    first = report["violations"][0]
    assert f"example {first['example']} (id {first['id']})" in msg
    assert "(tool)" in msg and "campaign_id" in msg  # names the role and shows the offending span
    assert "help: tool outputs are never trained: keep `tool_outputs` in the stage's `mask`" in msg


def test_a_spec_that_trains_user_turns_trains_them_and_passes(tokenizer, conversations):
    roles = {"assistant": "trained", "system": "masked", "tool": "masked", "user": "trained"}
    report = mask_report(tokenizer, conversations, n_samples=4, seed=0, roles=roles)
    assert report["per_role"]["user"]["trainable"] > 0 and report["per_role"]["system"]["trainable"] == 0
    check_masking(report)


def test_datasets_rows_work_like_plain_dicts(tokenizer, dataset_dir):
    from datasets import load_from_disk

    ds = load_from_disk(str(dataset_dir))
    report = mask_report(tokenizer, ds, n_samples=3, seed=0)
    assert report["samples"][0]["id"].startswith(("top_ctr", "ctr_drill"))
    check_masking(report)

"""The embedded base model is an ordinary, reproducible Hugging Face model directory."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from train_support import TINY_SPEC, corpus_of

from runtime.train.tiny_moe import DEFAULT_SPEC, TinyMoeSpecError, build_tiny_moe, build_tokenizer, resolve_spec


def file_hashes(model_dir: Path) -> dict[str, str]:
    return {f.name: hashlib.sha256(f.read_bytes()).hexdigest() for f in sorted(model_dir.iterdir())}


def test_model_dir_reloads_offline_as_a_qwen3_moe(tiny_model_dir, tokenizer):
    from transformers import AutoModelForCausalLM

    assert {p.name for p in tiny_model_dir.iterdir()} >= {
        "config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json", "chat_template.jinja"}
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir, local_files_only=True)
    assert type(model).__name__ == "Qwen3MoeForCausalLM"
    assert model.config.num_experts == TINY_SPEC["experts"]
    assert model.config.num_experts_per_tok == TINY_SPEC["top_k"]
    assert model.config.vocab_size == len(tokenizer)
    assert (tokenizer.eos_token, tokenizer.pad_token) == ("<|im_end|>", "<|endoftext|>")
    assert model.config.eos_token_id == tokenizer.eos_token_id
    assert model.config.pad_token_id == tokenizer.pad_token_id
    # Special tokens are single added tokens, never split by BPE.
    for special in ("<|im_start|>", "<|im_end|>", "<|endoftext|>"):
        assert special in tokenizer.get_added_vocab()
        assert len(tokenizer(special, add_special_tokens=False)["input_ids"]) == 1


def test_default_spec_is_a_few_million_parameters():
    import torch
    from transformers import Qwen3MoeConfig, Qwen3MoeForCausalLM

    spec = resolve_spec({})
    cfg = Qwen3MoeConfig(vocab_size=spec["vocab"], hidden_size=spec["hidden"], moe_intermediate_size=spec["intermediate"],
                         intermediate_size=spec["intermediate"], num_hidden_layers=spec["layers"],
                         num_attention_heads=spec["heads"], num_key_value_heads=spec["kv_heads"],
                         head_dim=spec["hidden"] // spec["heads"], num_experts=spec["experts"],
                         num_experts_per_tok=spec["top_k"], tie_word_embeddings=False)
    with torch.device("meta"):
        n = sum(p.numel() for p in Qwen3MoeForCausalLM(cfg).parameters())
    assert 2e6 <= n <= 10e6, n


def test_same_corpus_spec_and_seed_give_identical_files(tmp_path, conversations):
    a = build_tiny_moe(tmp_path / "a", corpus_of(conversations), TINY_SPEC)
    b = build_tiny_moe(tmp_path / "b", corpus_of(conversations), TINY_SPEC)
    assert file_hashes(a) == file_hashes(b)
    c = build_tiny_moe(tmp_path / "c", corpus_of(conversations), {**TINY_SPEC, "seed": 1})
    assert file_hashes(c)["model.safetensors"] != file_hashes(a)["model.safetensors"]
    assert file_hashes(c)["tokenizer.json"] == file_hashes(a)["tokenizer.json"]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")], "temporary dirs left behind"


def test_chat_template_renders_chatml_with_tool_turns(tokenizer):
    msgs = [{"role": "system", "content": "S"}, {"role": "user", "content": "Q"},
            {"role": "assistant", "content": "<CODE>x</CODE>"}, {"role": "tool", "content": "42"}]
    assert tokenizer.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True) == (
        "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nQ<|im_end|>\n"
        "<|im_start|>assistant\n<CODE>x</CODE><|im_end|>\n<|im_start|>tool\n42<|im_end|>\n"
        "<|im_start|>assistant\n")


def test_template_meets_trl_requirements_for_sft_and_grpo(tokenizer):
    from trl.chat_template_utils import (
        get_training_chat_template, has_generation_markers, is_chat_template_prefix_preserving,
        is_chat_template_stop_token_trained, supports_tool_calling)

    assert has_generation_markers(tokenizer.chat_template)
    assert get_training_chat_template(tokenizer) is None  # no patching needed
    assert is_chat_template_stop_token_trained(tokenizer)
    assert supports_tool_calling(tokenizer)
    assert is_chat_template_prefix_preserving(tokenizer)


def test_response_template_parses_a_tool_call_back(tokenizer):
    msgs = [{"role": "user", "content": "add"},
            {"role": "assistant", "content": "", "tool_calls": [
                {"type": "function", "function": {"name": "run_code", "arguments": {"code": "result = 1"}}}]}]
    prompt = tokenizer.apply_chat_template(msgs[:1], add_generation_prompt=True, return_dict=False)
    full = tokenizer.apply_chat_template(msgs, return_dict=False)
    parsed = tokenizer.parse_response(full[len(prompt):], prefix=[])
    assert parsed["tool_calls"][0]["function"] == {"name": "run_code", "arguments": {"code": "result = 1"}}


def test_bad_spec_names_every_problem():
    with pytest.raises(TinyMoeSpecError) as err:
        resolve_spec({"hiden": 64, "top_k": 9, "layers": 0})
    msg = str(err.value)
    assert "unknown key `hiden`" in msg and "`layers` must be a positive integer" in msg
    assert set(DEFAULT_SPEC) == {"hidden", "layers", "heads", "kv_heads", "experts", "top_k",
                                 "intermediate", "vocab", "context", "seed", "digits", "spaces"}
    with pytest.raises(TinyMoeSpecError, match="`digits` must be one of merged, split, got 'apart'"):
        resolve_spec({"digits": "apart"})
    with pytest.raises(TinyMoeSpecError, match="`spaces` must be one of merged, split, got 'none'"):
        resolve_spec({"spaces": "none"})


def test_empty_corpus_is_refused(tmp_path):
    with pytest.raises(TinyMoeSpecError, match="corpus is empty"):
        build_tiny_moe(tmp_path / "m", [], TINY_SPEC)
    assert not (tmp_path / "m").exists()


# Numbers the corpus repeats, so that merged BPE learns multi-digit pieces for them.
NUMBERS = ["campaign 1234 spent 5678 on 2024-01-31; top 10 of 1234 by ctr"] * 40


def _pieces(tokenizer, text):
    return tokenizer.convert_ids_to_tokens(tokenizer(text, add_special_tokens=False)["input_ids"])


def test_split_digits_give_every_digit_its_own_token():
    split = build_tokenizer(NUMBERS, 400, digits="split")
    assert _pieces(split, "campaign 1234") == ["campaign", "Ġ", "1", "2", "3", "4"]
    # a number the corpus never had is still one token per digit, and decodes unchanged
    assert [p for p in _pieces(split, "spent 90817") if p.isdigit()] == ["9", "0", "8", "1", "7"]
    assert split.decode(split("campaign 1234, 2024-01-31")["input_ids"]) == "campaign 1234, 2024-01-31"


def test_merged_digits_leave_numbers_to_bpe_as_before():
    merged = build_tokenizer(NUMBERS, 400)
    assert _pieces(merged, "campaign 1234") == ["campaign", "Ġ1234"]
    again = build_tokenizer(NUMBERS, 400, digits="merged")
    assert again.backend_tokenizer.to_str() == merged.backend_tokenizer.to_str()


def test_the_digits_setting_reaches_the_built_model_dir(tmp_path, conversations):
    from transformers import AutoTokenizer

    built = build_tiny_moe(tmp_path / "m", corpus_of(conversations) + NUMBERS, {**TINY_SPEC, "digits": "split"})
    tokenizer = AutoTokenizer.from_pretrained(built)
    assert _pieces(tokenizer, "campaign 1234")[-4:] == ["1", "2", "3", "4"]


# A name the question writes after a space and the code after a quote.
NAMES = ["Which campaigns of Maple Home had the best CTR?\nWHERE a.name = 'Maple Home'\n    AND x = 1"] * 40


def test_split_spaces_make_a_word_one_token_after_a_space_and_after_a_quote():
    split = build_tokenizer(NAMES, 400, spaces="split")
    assert "Maple" in _pieces(split, "campaigns of Maple Home")
    assert "Maple" in _pieces(split, "a.name = 'Maple Home'")
    # a run of spaces is still one piece that BPE may merge, and everything decodes unchanged
    assert "ĠĠĠĠ" in _pieces(split, "\n    AND x")
    for text in NAMES[:1] + ["  two  spaces ", "['display', 'search']"]:
        assert split.decode(split(text)["input_ids"]) == text


def test_merged_spaces_give_a_word_after_a_space_its_own_token_as_before():
    merged = build_tokenizer(NAMES, 400)
    assert "ĠMaple" in _pieces(merged, "campaigns of Maple Home")
    assert "ĠMaple" not in _pieces(merged, "a.name = 'Maple Home'")
    again = build_tokenizer(NAMES, 400, spaces="merged")
    assert again.backend_tokenizer.to_str() == merged.backend_tokenizer.to_str()


def test_the_spaces_setting_reaches_the_built_model_dir(tmp_path, conversations):
    from transformers import AutoTokenizer

    built = build_tiny_moe(tmp_path / "m", corpus_of(conversations) + NAMES, {**TINY_SPEC, "spaces": "split"})
    tokenizer = AutoTokenizer.from_pretrained(built)
    assert _pieces(tokenizer, "of Maple")[-2:] == ["Ġ", "Maple"]

"""The embedded base model: a tiny Qwen3-MoE with a BPE tokenizer trained on the recipe.

`build_tiny_moe` writes an ordinary Hugging Face model directory (config, safetensors,
tokenizer files, `chat_template.jinja`) so that every later step (SFT, GRPO, eval,
a `transformers serve` teacher) loads it with `from_pretrained`, exactly as it would a
real base model named in a profile. Nothing is downloaded.

The chat template is ChatML. Only assistant output (its content, any tool calls and the
closing `<|im_end|>`) is rendered inside `{% generation %}...{% endgeneration %}`, so
`return_assistant_tokens_mask=True` (and TRL's `assistant_only_loss=True`) trains on
assistant output only: system, user and tool messages are never trained. The
`<|im_start|>assistant\\n` header sits outside the block because the model is always
given it (the generation prompt) and never has to produce it.

Example (not run here: importing torch and building a model takes most of a minute on a
small machine; tests/train builds one)::

    path = build_tiny_moe("build/tiny", ["SELECT 1", "<PLAN>count</PLAN>"],
                          {"hidden": 64, "layers": 1, "vocab": 400})
    (path / "config.json").is_file()   # True
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import get_args

from craftc.ir import ModelSpec

__all__ = [
    "SIZE_FIELDS",
    "SPEC_FIELDS",
    "DIGITS",
    "CHAT_TEMPLATE",
    "DEFAULT_SPEC",
    "RESPONSE_TEMPLATE",
    "SPECIAL_TOKENS",
    "TinyMoeSpecError",
    "build_tiny_moe",
    "build_tokenizer",
    "resolve_spec",
]

# Order matters: BpeTrainer gives special tokens the first ids, so `<|endoftext|>` is
# id 0 (pad), `<|im_start|>` 1 and `<|im_end|>` 2 (eos) in every build.
SPECIAL_TOKENS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")

# Sizes give ~5M parameters: big enough to learn templated plans and code, small enough
# to train at a few thousand tokens/s on two CPU cores (see shared environment facts).
# The sizes a tiny_moe build takes, with the IR's defaults: craftc.ir.ModelSpec declares
# them once (type, range, default) for recipes and for this builder alike.
SIZE_FIELDS = ("hidden", "layers", "heads", "kv_heads", "experts", "top_k", "intermediate", "vocab", "context",
               "seed")
# How the tokenizer treats numbers (`ModelSpec.digits`): `split` gives every digit its own token.
DIGITS: tuple[str, ...] = get_args(ModelSpec.model_fields["digits"].annotation)
# How it treats spaces (`ModelSpec.spaces`): `split` keeps them apart from the words.
SPACES: tuple[str, ...] = get_args(ModelSpec.model_fields["spaces"].annotation)
SPEC_FIELDS = (*SIZE_FIELDS, "digits", "spaces")
DEFAULT_SPEC = {name: ModelSpec.model_fields[name].default for name in SPEC_FIELDS}

# Assistant output sits inside {% generation %}; everything else outside. Tool calls are
# rendered in Qwen's <tool_call> JSON form so that TRL's GRPO tool loop
# (`supports_tool_calling`) accepts the template; the craft agent itself uses <CODE>
# blocks in plain content. Each message renders independently of later messages, which
# keeps the template prefix-preserving (required by GRPO's tool-suffix diffing).
CHAT_TEMPLATE = (
    "{%- for message in messages %}"
    "{%- if message.content is string %}{%- set content = message.content %}"
    "{%- else %}{%- set content = '' %}{%- endif %}"
    "{%- if message.role == 'assistant' %}"
    "{{- '<|im_start|>assistant\\n' }}"
    "{%- generation %}"
    "{{- content }}"
    "{%- if message.tool_calls %}"
    "{%- for tool_call in message.tool_calls %}"
    "{%- if tool_call.function %}{%- set tool_call = tool_call.function %}{%- endif %}"
    "{%- if content or not loop.first %}{{- '\\n' }}{%- endif %}"
    "{{- '<tool_call>\\n{\"name\": \"' + tool_call.name + '\", \"arguments\": ' }}"
    "{%- if tool_call.arguments is string %}{{- tool_call.arguments }}"
    "{%- else %}{{- tool_call.arguments | tojson }}{%- endif %}"
    "{{- '}\\n</tool_call>' }}"
    "{%- endfor %}"
    "{%- endif %}"
    "{{- '<|im_end|>' }}"
    "{%- endgeneration %}"
    "{{- '\\n' }}"
    "{%- else %}"
    "{{- '<|im_start|>' + message.role + '\\n' + content + '<|im_end|>\\n' }}"
    "{%- endif %}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)

# transformers' `parse_response` schema for the template above (mirrors TRL's Qwen3
# schema). TRL's `add_response_schema` only knows stock templates, so a custom tokenizer
# must carry its own; it is saved in tokenizer_config.json.
RESPONSE_TEMPLATE = {
    "defaults": {"role": "assistant"},
    "start_anchor": "<|im_start|>assistant\n",
    "fields": {
        "tool_calls": {
            "open": "<tool_call>",
            "close_pattern": r"</tool_call>\s*",
            "repeats": True,
            "content": "json",
            "transform": {"type": "function", "function": "{content}"},
        },
        "content": {"close_pattern": r"<\|im_end\|>\s*", "content": "text"},
    },
}


class TinyMoeSpecError(ValueError):
    """A tiny_moe spec has an unknown key or an impossible value."""


def resolve_spec(spec: dict | None) -> dict:
    """Fill a partial spec with `DEFAULT_SPEC` and validate it, collecting every error.

    Args:
        spec: Any subset of `DEFAULT_SPEC`'s keys.

    Returns:
        A complete spec dict.

    Raises:
        TinyMoeSpecError: On unknown keys, non-positive sizes, `top_k > experts`,
            heads not divisible by kv_heads or hidden not divisible by heads.

    Example:
        >>> resolve_spec({"layers": 1})["layers"], resolve_spec({})["hidden"]
        (1, 192)
    """
    spec = dict(spec or {})
    errors = [f"unknown key `{k}` (known: {', '.join(DEFAULT_SPEC)})" for k in spec if k not in DEFAULT_SPEC]
    full = {**DEFAULT_SPEC, **{k: v for k, v in spec.items() if k in DEFAULT_SPEC}}
    for key in SIZE_FIELDS:
        value = full[key]
        if not isinstance(value, int) or isinstance(value, bool) or (value <= 0 and key != "seed"):
            errors.append(f"`{key}` must be a positive integer, got {value!r}")
    if full["digits"] not in DIGITS:
        errors.append(f"`digits` must be one of {', '.join(DIGITS)}, got {full['digits']!r}")
    if full["spaces"] not in SPACES:
        errors.append(f"`spaces` must be one of {', '.join(SPACES)}, got {full['spaces']!r}")
    if not errors:
        if full["top_k"] > full["experts"]:
            errors.append(f"`top_k` ({full['top_k']}) exceeds `experts` ({full['experts']})")
        if full["heads"] % full["kv_heads"]:
            errors.append(f"`heads` ({full['heads']}) must be a multiple of `kv_heads` ({full['kv_heads']})")
        if full["hidden"] % full["heads"]:
            errors.append(f"`hidden` ({full['hidden']}) must be a multiple of `heads` ({full['heads']})")
        if full["vocab"] < 300:
            errors.append(f"`vocab` ({full['vocab']}) must be at least 300 (256 byte symbols + specials)")
    if errors:
        raise TinyMoeSpecError("invalid tiny_moe spec:\n  " + "\n  ".join(errors))
    return full


def build_tokenizer(corpus: Iterable[str], vocab: int, digits: str = "merged", spaces: str = "merged"):
    """Train a byte-level BPE tokenizer on `corpus` and wrap it for transformers.

    Args:
        corpus: The recipe's own texts (prompts, plans, code, schema docs).
        vocab: Target vocabulary size (a small corpus may give fewer merges).
        digits: `split` pre-tokenizes every digit apart, so no merge can join digits and
            `1234` is always four tokens; `merged` leaves numbers to BPE like other text.
        spaces: `split` pre-tokenizes every run of spaces apart, so `Maple` is one token
            in `of Maple` and in `'Maple'`; `merged` lets a word carry its leading space.

    Returns:
        A `PreTrainedTokenizerFast` with the ChatML specials, chat template and
        response template set.
    """
    from transformers import PreTrainedTokenizerFast

    bpe = bpe_tokenizer(corpus, vocab, digits, spaces)
    tok = PreTrainedTokenizerFast(
        tokenizer_object=bpe,
        bos_token=None,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        chat_template=CHAT_TEMPLATE,
        model_max_length=DEFAULT_SPEC["context"],
    )
    tok.response_template = RESPONSE_TEMPLATE
    return tok


def bpe_tokenizer(corpus: Iterable[str], vocab: int, digits: str = "merged", spaces: str = "merged"):
    """The `tokenizers.Tokenizer` that :func:`build_tokenizer` wraps: the same corpus gives the
    same merges, so `craftc check` counts a recipe's prompts with the tokenizer the sft step
    will train (without importing transformers)."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    # A list, not a generator: a fixed order is part of what makes the build reproducible.
    texts = [t for t in corpus if t]
    if not texts:
        raise TinyMoeSpecError("the tokenizer corpus is empty: pass the recipe's prompts, plans and code")
    bpe = Tokenizer(models.BPE())
    # Splits run before ByteLevel, which then sees only their pieces. Digits: ByteLevel maps
    # them to themselves, so isolating them first keeps every digit a one-byte piece that
    # BPE can never merge with its neighbours. Spaces: a run of spaces alone in its piece
    # can still merge into one token (indentation), but never with the word after it.
    splits = [pre_tokenizers.Digits(individual_digits=True)] if digits == "split" else []
    if spaces == "split":
        splits.append(pre_tokenizers.Split(Regex(" +"), behavior="isolated"))
    byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.pre_tokenizer = pre_tokenizers.Sequence([*splits, byte_level]) if splits else byte_level
    bpe.decoder = decoders.ByteLevel()
    # trim_offsets=False keeps offsets exact, which the mask report relies on.
    bpe.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(
        vocab_size=vocab,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    bpe.train_from_iterator(texts, trainer)
    return bpe


def _model_config(spec: dict, tok):
    from transformers import Qwen3MoeConfig

    head_dim = spec["hidden"] // spec["heads"]
    return Qwen3MoeConfig(
        vocab_size=len(tok),
        hidden_size=spec["hidden"],
        intermediate_size=spec["intermediate"],
        moe_intermediate_size=spec["intermediate"],
        num_hidden_layers=spec["layers"],
        num_attention_heads=spec["heads"],
        num_key_value_heads=spec["kv_heads"],
        head_dim=head_dim,
        num_experts=spec["experts"],
        num_experts_per_tok=spec["top_k"],
        max_position_embeddings=spec["context"],
        tie_word_embeddings=False,
        bos_token_id=None,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
    )


def build_tiny_moe(out_dir: str | os.PathLike, corpus: Iterable[str], spec: dict | None = None) -> Path:
    """Build the tiny Qwen3-MoE base model and its tokenizer into `out_dir`.

    The same corpus, spec and seed give byte-identical files. An existing `out_dir` is
    replaced. The sft step builds it inside its staged step dir (runtime.runner), so a
    crash leaves no half model in a run dir.

    Args:
        out_dir: Destination model directory.
        corpus: Texts to train the tokenizer on, in a fixed order.
        spec: Sizes (see `DEFAULT_SPEC`); missing keys take defaults.

    Returns:
        The model directory path.

    Raises:
        TinyMoeSpecError: If the spec is invalid or the corpus is empty.
    """
    import torch
    from transformers import GenerationConfig, Qwen3MoeForCausalLM

    spec = resolve_spec(spec)
    out = Path(out_dir)
    tok = build_tokenizer(corpus, spec["vocab"], spec["digits"], spec["spaces"])
    tok.model_max_length = spec["context"]
    config = _model_config(spec, tok)
    # Seed only the init: fork_rng leaves the caller's global RNG state untouched.
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(spec["seed"])
        model = Qwen3MoeForCausalLM(config)
    model.generation_config = GenerationConfig(
        eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id, bos_token_id=None
    )

    if out.exists():
        shutil.rmtree(out)
    model.save_pretrained(out)
    tok.save_pretrained(out)
    return out

"""The context-length budget: how many tokens a training example's prompt takes.

Two counts. :func:`stuffed_prompt_estimate` is the word-and-punctuation estimate of
:func:`craftc.tokens.estimate_tokens`, the one ``token_budget.json`` states (a ratio
between prompts, stable across versions). :func:`example_tokens` counts *real*
tokens where it can: a `tiny_moe` base trains its byte-level BPE tokenizer on the
recipe's corpus (runtime/distill/datasets.py `corpus_text`: both system prompts, the
turn template, the logical DDL and every training turn's ask, plan and code), so the
check trains the same tokenizer (`runtime.train.tiny_moe.bpe_tokenizer`, same vocab,
digit and space settings) on the same texts with the reference solutions standing in
for the teacher's plans and code, and counts the ChatML text the trainer reads. For
any other base it falls back to the estimate times :data:`ESTIMATE_FACTOR`, and says
so. The counts are memoised on disk (craftc/cache.py), keyed by everything they are
built from, so a warm compile does not retrain the tokenizer.

What the checks do with them (craftc/check/stages.py): an sft arm whose prompt head
(system prompt, the first question, the assistant's header) does not fit in the
tokens that arm trains on keeps no assistant token after TRL's truncation, so every
example is dropped and training stops: that is error E528 at compile time.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from craftc.emit.binding_sql import logical_ddl
from craftc.emit.prompts import render_prompts, system_prompt
from craftc.ir import ModelSpec, Recipe
from craftc.tokens import estimate_tokens

__all__ = ["estimate_tokens", "stuffed_prompt_estimate", "example_tokens", "ExampleTokens", "ESTIMATE_FACTOR",
           "ESTIMATE_ERROR"]

# Real tokenizers split identifiers further than words and punctuation marks. Measured on the
# ads recipe (SmolLM2's tokenizer) and an imported payments schema (a 512-piece BPE): the
# real counts ran 1.2x to 2.3x the estimate. 2.0 is the factor the check multiplies by when
# it cannot load a tokenizer; the stated error is the spread around it.
ESTIMATE_FACTOR = 2.0
ESTIMATE_ERROR = 0.4

# The ChatML the tiny_moe chat template writes (runtime/train/tiny_moe.py CHAT_TEMPLATE).
_CHAT_ROLE = "<|im_start|>{role}\n{content}<|im_end|>\n"
_ASSISTANT_HEAD = "<|im_start|>assistant\n"


def stuffed_prompt_estimate(recipe: Recipe) -> int:
    """Estimated tokens (words and punctuation) of the stuffed system prompt of ``recipe``."""
    return estimate_tokens(system_prompt(recipe, "stuffed", logical_ddl(recipe.schema_)))


@dataclass(frozen=True)
class ExampleTokens:
    """Tokens of a recipe's training examples, per dataset mode (`stripped`, `stuffed`).

    ``head``: the system prompt, the longest first question and the assistant header:
    what must fit before a single assistant token is trained. ``longest``: the longest
    whole example, with each turn's reference solution standing in for the teacher's
    reply and a small allowance for the tool output. ``how`` says how they were counted.
    """

    head: dict[str, int]
    longest: dict[str, int]
    how: str
    measured: bool


def _first_model(recipe: Recipe) -> ModelSpec | None:
    first = next((s for s in recipe.stages if s.kind == "sft"), recipe.stages[0] if recipe.stages else None)
    if first is None:
        return None
    return next((m for m in recipe.models if m.name == first.base), None)


def _turn_reply(ask: str, solution: str) -> str:
    # The synthetic teacher's shape: a THINK that restates the question, the reference's
    # docstring as the plan and its code; then the tool's frame and a one-line answer.
    plan, _, code = solution.partition('"""\n') if solution.startswith('"""') else ("", "", solution)
    return (f"<THINK>\nThe analyst asks: {ask}\nPlan first in business terms, then one query through `api`; "
            f"the answer goes to `result`.\n</THINK>\n<PLAN>\n{plan.strip(chr(34)).strip()}\n</PLAN>\n"
            f"<CODE>\n{code.strip()}\n</CODE>")


_TOOL_ALLOWANCE = "Output of the CODE block:\n" + "\n".join(f"  value_{i}  {1000 * i + 17}.25" for i in range(6))
_ANSWER = "<ANSWER>\nThe result has 6 rows; the first is value_0 with 17.25.\n</ANSWER>"


def _conversations(recipe: Recipe, solutions: dict[str, str]) -> list[tuple[str, list[tuple[str, str]]]]:
    """(first question, the turns' (ask, reply) pairs) per workflow."""
    out = []
    for w in recipe.workflows:
        turns = [(t.asks[0], _turn_reply(t.asks[0], solutions.get(t.solution or "", "result = None")))
                 for t in w.turns]
        if turns:
            out.append((max((a for t in w.turns for a in t.asks), key=len), turns))
    return out


def _chat(system: str, turns: list[tuple[str, str]]) -> str:
    text = _CHAT_ROLE.format(role="system", content=system)
    for ask, reply in turns:
        text += _CHAT_ROLE.format(role="user", content=ask)
        text += f"{_ASSISTANT_HEAD}{reply}<|im_end|>\n"
        text += _CHAT_ROLE.format(role="tool", content=_TOOL_ALLOWANCE)
    return text + f"{_ASSISTANT_HEAD}{_ANSWER}<|im_end|>\n"


def _head(system: str, ask: str) -> str:
    return _CHAT_ROLE.format(role="system", content=system) + _CHAT_ROLE.format(role="user", content=ask) \
        + _ASSISTANT_HEAD


def example_tokens(recipe: Recipe, solutions: dict[str, str] | None = None) -> ExampleTokens:
    """Count ``recipe``'s training examples (see the module doc); ``solutions`` maps each
    turn's plan-dir solution path to its text (missing ones count as one short line)."""
    solutions = solutions or {}
    ddl = logical_ddl(recipe.schema_)
    prompts = render_prompts(recipe, ddl)
    systems = {"stripped": prompts["prompts/system_stripped.md"], "stuffed": prompts["prompts/system_stuffed.md"]}
    conversations = _conversations(recipe, solutions) or [("How many rows are there?", [])]
    heads = {mode: [_head(system, first) for first, _ in conversations] for mode, system in systems.items()}
    wholes = {mode: [_chat(system, turns) for _, turns in conversations] for mode, system in systems.items()}
    model = _first_model(recipe)
    if model is not None and model.source == "tiny_moe":
        corpus = [*systems.values(), prompts["prompts/turn.md"], ddl]
        for _, turns in conversations:
            for ask, reply in turns:
                corpus += [ask, reply]
        counted = _measured(corpus, model, heads, wholes)
        if counted is not None:
            return ExampleTokens(*counted, how=f"measured with the tokenizer the sft step trains (vocab "
                                 f"{model.vocab}) on this recipe's corpus, reference solutions standing in for "
                                 "the teacher's replies", measured=True)
    factor = ESTIMATE_FACTOR
    return ExampleTokens({m: max(round(estimate_tokens(t) * factor) for t in texts) for m, texts in heads.items()},
                         {m: max(round(estimate_tokens(t) * factor) for t in texts) for m, texts in wholes.items()},
                         how=f"estimated: words and punctuation x{factor:g}, within about "
                         f"{ESTIMATE_ERROR:.0%} of a real tokenizer's count", measured=False)


def _measured(corpus: list[str], model: ModelSpec, heads: dict[str, list[str]], wholes: dict[str, list[str]]):
    from craftc.cache import cache_subdir, content_key

    key = content_key("example_tokens/1", str(model.vocab), model.digits, model.spaces, "\0".join(corpus),
                      json.dumps([heads, wholes], sort_keys=True))
    folder = cache_subdir("example_tokens")
    entry = folder / f"{key}.json" if folder is not None else None
    if entry is not None:
        try:
            cached = json.loads(entry.read_text(encoding="utf-8"))
            return cached["head"], cached["longest"]
        except (OSError, ValueError, KeyError):
            pass
    try:
        from runtime.train.tiny_moe import bpe_tokenizer
        tokenizer = bpe_tokenizer(corpus, model.vocab, model.digits, model.spaces)
    except ImportError:         # the tokenizers library is missing: estimate instead
        return None

    def longest(texts: list[str]) -> int:
        return max(len(e.ids) for e in tokenizer.encode_batch(texts, add_special_tokens=False))

    head = {mode: longest(texts) for mode, texts in heads.items()}
    whole = {mode: longest(texts) for mode, texts in wholes.items()}
    if entry is not None:
        try:
            entry.write_text(json.dumps({"head": head, "longest": whole}), encoding="utf-8")
        except OSError:
            pass
    return head, whole


def solution_texts(sources: dict[str, Path]) -> dict[str, str]:
    """Plan-dir solution path -> its text (unreadable files are left out)."""
    out = {}
    for path, source in sources.items():
        try:
            out[path] = Path(source).read_text(encoding="utf-8")
        except OSError:
            pass
    return out

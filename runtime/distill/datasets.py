"""Accepted trajectories -> conversational SFT datasets, in both input modes.

Each example is one instance's conversation: ``system`` (the stripped or the
stuffed prompt), then per turn ``user`` (the ask, worded as ``prompts/turn.md``
says), ``assistant`` (the accepted three-block turn), ``tool`` (the execution
output, worded as ``turn.md``'s tool section) and a final ``assistant``
``<ANSWER>`` summarising the result. A conversation keeps its turns up to the first
turn with no accepted candidate. Both modes are built from the same trajectories,
so they differ only in the system prompt. Under the recipe's ``earlier_turns compact``
or ``thinks`` a conversation gives one example per turn instead: its earlier turns
shortened to question, code (or THINK) and answer (``runtime.agent.history``) and
masked, then the turn whole.

Only ``train`` instances become training data; the others are written to
``eval_instances.json`` for the eval step. Token counts use the compiler's
estimator (``craftc.tokens.estimate_tokens``), because the tokenizer is trained
later, in the sft step; the ``token_counter`` column says so.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from craftc.ir import BlockFormat
from craftc.tokens import estimate_tokens
from runtime.agent.episode import ExecRecord, answer_text, tool_output_text
from runtime.agent.history import DEFAULT_EARLIER_TURNS, as_earlier_turn
from runtime.distill.blocks import format_answer, format_turn, parse_turn

__all__ = ["MODES", "TOKEN_COUNTER", "read_turn_templates", "build_examples", "save_dataset", "corpus_text"]

MODES = ("stripped", "stuffed")
TOKEN_COUNTER = "craftc.tokens.estimate_tokens"
PER_INSTANCE = 2          # distinct accepted trajectories kept per instance


def read_turn_templates(text: str) -> dict[str, str]:
    """``prompts/turn.md`` split into its ``## user`` and ``## tool`` sections."""
    sections: dict[str, list[str]] = {}
    current = None
    for line in text.splitlines():
        heading = re.match(r"^##\s+(\w+)\s*$", line)
        if heading:
            current = heading.group(1).lower()
            sections[current] = []
        elif current:
            sections[current].append(line)
    templates = {role: "\n".join(lines).strip("\n") for role, lines in sections.items()}
    if "{ask}" not in templates.get("user", "") or "{output}" not in templates.get("tool", ""):
        raise ValueError("prompts/turn.md must have a `## user` section with {ask} and a `## tool` "
                         "section with {output}; recompile the plan with `craftc compile`")
    return templates


def _canonical(text: str, fmt: BlockFormat) -> str:
    turn = parse_turn(text, fmt)
    return format_turn(turn.think, turn.plan, turn.code, fmt)


def build_examples(instances: list[dict[str, Any]], accepted: dict[tuple[str, int], list[dict[str, Any]]],
                   systems: dict[str, str], templates: dict[str, str], fmt: BlockFormat,
                   earlier_turns: str = DEFAULT_EARLIER_TURNS) -> dict[str, list[dict]]:
    """Examples per mode from accepted candidates keyed by (instance_id, turn index).

    With ``earlier_turns compact`` or ``thinks`` a conversation gives one example per turn:
    the earlier turns shortened (``runtime.agent.history``) and masked, then the turn
    itself, trained.
    Each trained message is then trained once, in the context the agent meets it in.
    """
    out: dict[str, list[dict]] = {mode: [] for mode in MODES}
    for instance in instances:
        if instance["split"] != "train":
            continue
        chosen_per_turn = []
        for turn_index in range(len(instance["turns"])):
            unique, seen = [], set()
            for record in accepted.get((instance["instance_id"], turn_index), []):
                # A repaired trajectory (its failed attempts kept) teaches something a clean
                # one with the same final turn does not: the attempts are part of its key.
                attempts = tuple(_canonical(a["text"], fmt) for a in record.get("attempts", []))
                key = (*attempts, _canonical(record["text"], fmt))
                if key not in seen:
                    seen.add(key)
                    unique.append((key, record))
            if not unique:
                break
            chosen_per_turn.append(unique)
        if not chosen_per_turn:
            continue
        variants = min(PER_INSTANCE, max(len(options) for options in chosen_per_turn))
        # What `stage sft { prefix_renames N }` makes up: the names and categories the
        # conversation's questions are drawn with (runtime.train.renames).
        names = sorted({v for v in instance.get("params", {}).values() if isinstance(v, str) and v})
        for variant in range(variants):
            turns = []
            for turn_index, options in enumerate(chosen_per_turn):
                key, record = options[variant % len(options)]
                text = key[-1]
                turn = [{"role": "user", "content": templates["user"].format(ask=instance["turns"][turn_index]["ask"])}]
                # Teacher feedback with `failed_attempts masked`: the failed turns and their
                # errors stay in the conversation, masked from the loss.
                for attempt in record.get("attempts", []):
                    turn += [{"role": "assistant", "content": _canonical(attempt["text"], fmt), "masked": True},
                             {"role": "tool", "content": attempt["output"]}]
                execution = ExecRecord.from_summary(record["execution"])
                turn += [{"role": "assistant", "content": text},
                         {"role": "tool", "content": templates["tool"].format(output=tool_output_text(execution))},
                         {"role": "assistant", "content": format_answer(answer_text(execution), fmt)}]
                turns.append(turn)
            for body in _bodies(turns, fmt, earlier_turns):
                for mode in MODES:
                    messages = [{"role": "system", "content": systems[mode]}, *body]
                    out[mode].append({"messages": messages, "workflow": instance["workflow"],
                                      "instance_id": instance["instance_id"], "split": "train", "names": names,
                                      "turns": len(chosen_per_turn), "variant": variant,
                                      "n_tokens": sum(estimate_tokens(m["content"]) for m in messages),
                                      "token_counter": TOKEN_COUNTER})
    return out


def _bodies(turns: list[list[dict]], fmt: BlockFormat, earlier_turns: str) -> list[list[dict]]:
    """The examples' messages after the system prompt: the whole conversation, or one per turn."""
    if earlier_turns == "full":
        return [[message for turn in turns for message in turn]]
    bodies, context = [], []
    for turn in turns:
        bodies.append(context + turn)
        # What later turns see of this one is context only: it was trained in its own example.
        context = context + [{**m, "masked": True} if m["role"] == "assistant" else m
                             for m in as_earlier_turn(turn, earlier_turns, fmt)]
    return bodies


def save_dataset(examples: list[dict], out_dir: Path) -> None:
    """Save with `datasets` (Arrow) into ``out_dir``, inside the dataset step's staged dir."""
    from datasets import Dataset

    columns = ["messages", "workflow", "instance_id", "split", "turns", "variant", "names", "n_tokens",
               "token_counter"]
    data = {c: [e[c] for e in examples] for c in columns}
    Path(out_dir).parent.mkdir(parents=True, exist_ok=True)
    Dataset.from_dict(data).save_to_disk(str(out_dir))


def corpus_text(systems: dict[str, str], templates: dict[str, str], instances: list[dict[str, Any]],
                extra: list[str]) -> str:
    """Plain text for training the tokenizer: prompts, asks, plans, code, schema docs."""
    parts = [*systems.values(), *templates.values(), *extra]
    for instance in instances:
        for turn in instance["turns"]:
            parts += [turn["ask"], turn["plan"], turn["code"]]
    return "\n\n".join(p.strip() for p in parts if p and p.strip()) + "\n"


def dumps(data: Any) -> str:
    return json.dumps(data, indent=2, sort_keys=True, default=str) + "\n"

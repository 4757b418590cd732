"""Input tokens per model call under each `earlier_turns` rule (whole, compact, thinks).

Reads the stripped and stuffed SFT datasets of a run whose recipe keeps whole earlier
turns (one example per conversation) and replays each conversation as the agent loop
would feed it: for every code-writing assistant message (failed attempts included, the
answers between turns left out, as eval counts calls), the messages before it. It counts
them with a tokenizer trained on the run's corpus, as tiny_moe's is, under every rule the
IR declares (`runtime.agent.history`), and prints tokens per call and the stripped/stuffed
ratio.

Training conversations are not eval episodes: every turn here ran, and repairs are as
frequent as the teacher made them, so the figures show what the rule removes, not the
ratio a report will give.

Run: .venv/bin/python benchmarks/history_tokens.py RUN_DIR   (e.g. runs/ads_analytics of a
`make run PROFILE=smoke`, whose profile keeps whole earlier turns)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from craftc.ir import BlockFormat
from runtime.agent.history import EARLIER_TURNS, compact_before_last_question
from runtime.train.tiny_moe import build_tokenizer

OVERHEAD = 3        # ChatML's <|im_start|>role\n ... <|im_end|>\n around each message


def calls(messages: list[dict], rule: str, fmt: BlockFormat):
    """Each code-writing call's input messages under `rule`."""
    context: list[dict] = []
    for message in messages:
        if message["role"] == "user" and rule != "full":
            context = compact_before_last_question(context + [message], fmt, rule)
            continue
        if message["role"] == "assistant" and not message["content"].lstrip().startswith(f"<{fmt.answer}>"):
            yield list(context)
        context.append({"role": message["role"], "content": message["content"]})


def main(run_dir: Path) -> None:
    from datasets import load_from_disk

    data = run_dir / "dataset" / "dataset"
    corpus = (data / "corpus.txt").read_text(encoding="utf-8").split("\n\n")
    tokenizer = build_tokenizer(corpus, 4096)
    cache: dict[str, int] = {}

    def count(text: str) -> int:
        if text not in cache:
            cache[text] = len(tokenizer(text, add_special_tokens=False)["input_ids"]) + OVERHEAD
        return cache[text]

    manifest = json.loads((run_dir / "dataset" / "manifest.json").read_text(encoding="utf-8"))
    if manifest["metrics"].get("earlier_turns", "full") != "full":
        sys.exit(f"{run_dir}: its dataset already compacts earlier turns; give a run with `earlier_turns full`")
    fmt = BlockFormat()
    per_call = {}
    for mode in ("stripped", "stuffed"):
        dataset = load_from_disk(str(data / mode))
        for rule in EARLIER_TURNS:
            sizes = [sum(count(m["content"]) for m in context)
                     for messages in dataset["messages"] for context in calls(messages, rule, fmt)]
            per_call[mode, rule] = sum(sizes) / len(sizes)
            print(f"{mode:8} {rule:8} {len(sizes):6} calls  {per_call[mode, rule]:8.1f} input tokens per call")
    for rule in EARLIER_TURNS:
        print(f"stripped/stuffed with {rule} earlier turns: {per_call['stripped', rule] / per_call['stuffed', rule]:.3f}x")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(Path(sys.argv[1]))

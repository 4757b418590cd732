"""Shared fixtures for the training tests: a small distilled dataset and a tiny model.

The conversations follow the distill step's contract: a `messages` column where each
assistant turn is `<THINK>..</THINK><PLAN>..</PLAN><CODE>..</CODE>` or `<ANSWER>..</ANSWER>`,
each `<CODE>` turn is followed by a `tool` message with the execution output, and some
conversations have several user turns. Extra columns (`workflow`, `instance_id`,
`n_tokens`) are present, as in real data, and must be ignored.
"""

from __future__ import annotations

import functools
import sys
from contextlib import contextmanager
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

SYSTEM = ("You are a data agent for the ads warehouse. Answer with <THINK>, <PLAN> and <CODE> blocks; "
          "the code calls api.query and assigns result. Finish with <ANSWER>.")
ADVERTISERS = ["Acme Travel", "Blue Fox", "Cedar Foods", "Delta Shoes"]

# Tiny sizes so the whole tests/train suite stays within a few minutes on 2 cores.
TINY_SPEC = {"hidden": 64, "layers": 2, "heads": 4, "kv_heads": 2, "experts": 4, "top_k": 2,
             "intermediate": 64, "vocab": 700, "context": 1024, "seed": 0}


def _tool_output(i: int, n: int) -> str:
    rows = "\n".join(f"{1000 + 7 * i + r}  2024-03-{(i + r) % 28 + 1:02d}T10:{r:02d}:00Z  {0.01 * (r + i % 5):.3f}"
                     for r in range(n))
    return f"campaign_id  day  ctr\n{rows}\n[{n} rows]"


def make_conversations(n: int = 24) -> list[dict]:
    """Deterministic distilled conversations covering single- and multi-turn workflows."""
    rows = []
    for i in range(n):
        adv, k, days = ADVERTISERS[i % 4], 3 + i % 5, (7, 14, 30)[i % 3]
        code = (f"result = api.query(\"select campaign_id, ctr from campaign_ctr where advertiser = '{adv}' "
                f"and day >= today() - {days} order by ctr desc limit {k}\")")
        msgs = [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": f"Which {k} campaigns of {adv} had the best CTR in the last {days} days?"},
            {"role": "assistant", "content": f"<THINK>Rank campaigns of {adv} by click-through rate.</THINK>"
                                             f"<PLAN>Filter Campaign by advertiser {adv}, last {days} days of "
                                             f"DailyStat, compute ctr, keep the top {k}.</PLAN><CODE>{code}</CODE>"},
            {"role": "tool", "content": _tool_output(i, k)},
            {"role": "assistant", "content": f"<ANSWER>The top {k} campaigns are listed above.</ANSWER>"},
        ]
        workflow = "top_ctr_campaigns"
        if i % 3 == 0:  # a follow-up turn that must keep the earlier constraints
            workflow = "ctr_drilldown"
            msgs += [
                {"role": "user", "content": "Now split it by week."},
                {"role": "assistant", "content": "<THINK>Same filter, group by week.</THINK>"
                                                 f"<PLAN>Keep advertiser {adv} and {days} days, group ctr by week."
                                                 f"</PLAN><CODE>{code.replace('order by', 'group by week order by')}"
                                                 "</CODE>"},
                {"role": "tool", "content": _tool_output(i + 1, 2)},
                {"role": "assistant", "content": "<ANSWER>Weekly CTR is shown above.</ANSWER>"},
            ]
        rows.append({"messages": msgs, "workflow": workflow, "instance_id": f"{workflow}-{i:03d}",
                     "n_tokens": sum(len(m["content"]) for m in msgs) // 4})
    return rows


def corpus_of(rows: list[dict]) -> list[str]:
    """The tokenizer corpus: every message text, in order (as the recipe's texts would be)."""
    return [m["content"] for r in rows for m in r["messages"]]


@pytest.fixture(scope="session")
def conversations() -> list[dict]:
    return make_conversations()


@pytest.fixture(scope="session")
def dataset_dir(tmp_path_factory, conversations) -> Path:
    from datasets import Dataset

    path = tmp_path_factory.mktemp("data") / "sft_dataset"
    Dataset.from_list(conversations).save_to_disk(str(path))
    return path


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory, conversations) -> Path:
    from runtime.train.tiny_moe import build_tiny_moe

    return build_tiny_moe(tmp_path_factory.mktemp("model") / "tiny_moe", corpus_of(conversations), TINY_SPEC)


@pytest.fixture(scope="session")
def tokenizer(tiny_model_dir):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_model_dir)


@contextmanager
def craft_head_calls():
    """Record, while inside, which LM head computes each loss forward of a trainer's model.

    Yields a list that gets `"craft"` for each forward with `fused_lm_head` that craft's
    CPU head (`runtime.train.loss_head`) computes, and `"trl"` for each that reaches TRL's
    head: one TRL kept (a model the patch refuses) or one craft's head fell back to.
    Plain forwards, such as generation's, are not recorded.
    """
    from runtime.train import loss_head

    calls: list[str] = []
    patch = loss_head.score_trained_positions

    def recorded(forward, head: str):
        @functools.wraps(forward)
        def call(*args, **kwargs):
            if kwargs.get("fused_lm_head", False):
                calls.append(head)
            return forward(*args, **kwargs)
        return call

    def recording_patch(model, *args, **kwargs):
        model.forward = recorded(model.forward, "trl")      # the head the patch keeps behind its own
        replaced = patch(model, *args, **kwargs)
        if replaced:
            # craft's forward records "craft"; the TRL head behind it records "trl" only on a fallback
            craft_forward = model.forward
            model.forward = recorded(craft_forward, "craft")
        return replaced

    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setattr(loss_head, "score_trained_positions", recording_patch)
        yield calls

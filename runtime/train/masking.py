"""Which tokens SFT trains on: labels from the plan's masking spec, proven before training.

The plan's `specs/masking.json` says, per stage, which chat roles are trained. This
module renders each conversation with `apply_chat_template(...,
return_assistant_tokens_mask=True)`, attributes every token to the message (and so the
role) it came from, and trains a token iff its role is trained: assistant output is
what the chat template marks with `{% generation %}`; system and user messages are
trained only when the stage's `mask` leaves them out. `labels_for` builds the labels
SFT trains on; `mask_report` counts trainable vs masked tokens per role with the same
rule, and `check_masking` fails the run if any tool-output token would be trained:
tool outputs (dataframe previews, ids, timestamps) must never be learned as if the
model had produced them, whatever the recipe says.

Attribution uses character offsets: the template is prefix-preserving, so rendering
`messages[:i+1]` gives the exact end of message `i` in the full text, and the fast
tokenizer's offset mapping places every token in one message.

Example (not run here: needs a tokenizer with the chat template and a dataset)::

    report = mask_report(tok, dataset, n_samples=16, seed=0)
    check_masking(report)                       # raises MaskingError on a trained tool token
    write_mask_report(report, "runs/x/sft")
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

from craftc.atomic import write_atomic

__all__ = [
    "MaskingError",
    "attribute_tokens",
    "apply_roles",
    "check_masking",
    "labels_for",
    "mask_report",
    "render_marked",
    "write_mask_report",
]

# Roles whose tokens are never trainable, whatever the masking spec says. "template"
# covers text that belongs to no message (e.g. a trailing generation prompt).
NEVER_TRAINED = ("tool", "template")
# The masking spec when none is given: assistant output only.
ASSISTANT_ONLY = {"assistant": "trained", "system": "masked", "tool": "masked", "user": "masked"}
_MAX_SPAN_CHARS = 120


class MaskingError(RuntimeError):
    """The chat template would train on tokens that are not assistant output."""


def _render(tokenizer, messages: list[dict]) -> str:
    return tokenizer.apply_chat_template(messages, tokenize=False)


def attribute_tokens(tokenizer, messages: list[dict]) -> list[dict]:
    """Render one conversation and describe each token.

    Args:
        tokenizer: A fast tokenizer whose chat template has generation markers.
        messages: `[{"role": ..., "content": ...}, ...]`.

    Returns:
        One dict per token: `id`, `text`, `start`, `end` (character offsets in the
        rendered text), `message` (index, or -1 outside every message), `role` and
        `trained` (the assistant mask TRL will use).

    Raises:
        MaskingError: If the template is not prefix-preserving, or its tokenization
            differs from the one `apply_chat_template` returns (attribution would lie).
    """
    # Copies, so datasets' Arrow rows are never mutated; keys with None values are
    # dropped by transformers before rendering, as TRL sees them.
    messages = [dict(m) for m in messages]
    text = _render(tokenizer, messages)
    bounds, start = [], 0
    for i in range(len(messages)):
        prefix = _render(tokenizer, messages[: i + 1])
        if not text.startswith(prefix):
            raise MaskingError(
                f"the chat template is not prefix-preserving at message {i} ({messages[i]['role']}); "
                "tokens cannot be attributed to roles. Render each message independently of later ones."
            )
        bounds.append((start, len(prefix)))
        start = len(prefix)

    rendered = tokenizer.apply_chat_template(messages, return_dict=True, return_assistant_tokens_mask=True)
    ids, mask = list(rendered["input_ids"]), list(rendered["assistant_masks"])
    enc = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    if list(enc["input_ids"]) != ids:
        raise MaskingError("re-tokenizing the rendered text gave different ids than apply_chat_template")

    tokens, msg = [], 0
    for tid, (s, e), trained in zip(ids, enc["offset_mapping"], mask, strict=True):
        while msg < len(bounds) and s >= bounds[msg][1]:
            msg += 1
        inside = msg < len(bounds) and bounds[msg][0] <= s
        tokens.append({
            "id": tid, "text": text[s:e], "start": s, "end": e,
            "message": msg if inside else -1,
            "role": messages[msg]["role"] if inside else "template",
            "trained": bool(trained),
        })
    return tokens


def apply_roles(tokens: list[dict], roles: dict[str, str]) -> list[dict]:
    """Set `trained` on system, user and tool tokens whose role the masking spec trains.

    Other tokens keep the chat template's mask, so a template that marks a masked role
    inside `{% generation %}` still shows up as trainable (and `check_masking` fails).

    Example:
        >>> toks = [{"role": "user", "trained": False}, {"role": "assistant", "trained": True}]
        >>> [t["trained"] for t in apply_roles(toks, {"user": "trained", "assistant": "trained"})]
        [True, True]
    """
    return [{**tok, "trained": True} if tok["role"] in ("system", "user", "tool") and roles.get(tok["role"]) == "trained"
            else tok for tok in tokens]


def labels_for(tokenizer, messages: list[dict], roles: dict[str, str]) -> dict[str, list[int]]:
    """`{"input_ids", "labels"}` of one conversation; untrained tokens get label -100.

    When the spec trains assistant output only (the usual case), the labels are the
    chat template's assistant mask from one render; otherwise every token is
    attributed to its message first (a render per message).
    """
    masked = {i for i, m in enumerate(messages) if m.get("masked")}   # a teacher's failed attempt
    if not masked and not any(roles.get(role) == "trained" for role in ("system", "user", "tool")):
        rendered = tokenizer.apply_chat_template([dict(m) for m in messages], return_dict=True,
                                                 return_assistant_tokens_mask=True)
        ids = list(rendered["input_ids"])
        return {"input_ids": ids, "labels": [t if m else -100 for t, m in zip(ids, rendered["assistant_masks"])]}
    tokens = apply_roles(attribute_tokens(tokenizer, messages), roles)
    tokens = [{**t, "trained": False} if t["message"] in masked else t for t in tokens]
    return {"input_ids": [t["id"] for t in tokens],
            "labels": [t["id"] if t["trained"] else -100 for t in tokens]}


def render_marked(tokens: list[dict]) -> str:
    """Join token texts, wrapping each trained span in `[[` and `]]`.

    Example:
        >>> render_marked([{"text": "a", "trained": False}, {"text": "b", "trained": True}])
        'a[[b]]'
    """
    out, inside = [], False
    for tok in tokens:
        if tok["trained"] != inside:
            out.append("[[" if tok["trained"] else "]]")
            inside = tok["trained"]
        out.append(tok["text"])
    if inside:
        out.append("]]")
    return "".join(out)


def _violations(tokens: list[dict], example: int, example_id, forbidden: tuple[str, ...]) -> list[dict]:
    """Trainable runs of tokens in a forbidden role, one entry per run."""
    found, run = [], []
    for tok in tokens + [{"trained": False, "role": None, "message": None}]:
        bad = tok["trained"] and tok["role"] in forbidden
        if run and (not bad or tok["message"] != run[-1]["message"]):
            span = "".join(t["text"] for t in run)
            found.append({
                "example": example, "id": example_id, "message": run[0]["message"], "role": run[0]["role"],
                "chars": [run[0]["start"], run[-1]["end"]], "tokens": len(run),
                "span": span if len(span) <= _MAX_SPAN_CHARS else span[:_MAX_SPAN_CHARS] + "...",
            })
            run = []
        if bad:
            run.append(tok)
    return found


def mask_report(tokenizer, dataset, n_samples: int = 32, seed: int = 0, n_rendered: int = 3,
                roles: dict[str, str] | None = None) -> dict:
    """Count trainable and masked tokens per role over a seeded sample of `dataset`.

    Args:
        tokenizer: The tokenizer SFT will use (its chat template decides the mask).
        dataset: A `datasets.Dataset` (or list of rows) with a `messages` column.
        n_samples: How many examples to render (all of them if the dataset is smaller).
        seed: Sampling seed, so the report is reproducible.
        n_rendered: How many sampled examples to include as marked text.
        roles: The stage's roles in the masking spec (default: assistant output only).

    Returns:
        A JSON-serialisable dict: `per_role` counts, `violations` (trainable tokens
        outside assistant output), `untrained_examples` (examples with nothing to
        learn), `eos_trained` and `samples` (text with `[[trained]]` spans).
    """
    roles = roles or ASSISTANT_ONLY
    # Trainable tokens of a masked role are a template bug; of the tool role, always an error.
    forbidden = tuple(r for r in ("system", "user") if roles.get(r) != "trained") + NEVER_TRAINED
    n = len(dataset)
    picked = sorted(random.Random(seed).sample(range(n), min(n_samples, n)))
    per_role: dict[str, dict[str, int]] = {}
    violations, untrained, samples = [], [], []
    eos_total = eos_trained = 0
    for idx in picked:
        row = dataset[idx]
        example_id = row.get("instance_id", idx) if isinstance(row, dict) else idx
        tokens = apply_roles(attribute_tokens(tokenizer, row["messages"]), roles)
        for tok in tokens:
            counts = per_role.setdefault(tok["role"], {"trainable": 0, "masked": 0})
            counts["trainable" if tok["trained"] else "masked"] += 1
            if tok["role"] == "assistant" and tok["id"] == tokenizer.eos_token_id:
                eos_total += 1
                eos_trained += tok["trained"]
        violations += _violations(tokens, idx, example_id, forbidden)
        if not any(t["trained"] for t in tokens):
            untrained.append({"example": idx, "id": example_id})
        if len(samples) < n_rendered:
            samples.append({"example": idx, "id": example_id, "marked": render_marked(tokens)})
    return {
        "n_examples": n, "n_sampled": len(picked), "seed": seed, "roles": dict(sorted(roles.items())),
        "per_role": dict(sorted(per_role.items())),
        "violations": violations, "untrained_examples": untrained,
        "eos_trained": {"trained": eos_trained, "total": eos_total},
        "samples": samples,
    }


def check_masking(report: dict) -> None:
    """Fail if the report shows trainable non-assistant tokens or nothing to train.

    Args:
        report: The dict from `mask_report`.

    Raises:
        MaskingError: Naming each offending example, message, role and text span.
    """
    problems = [
        f"example {v['example']} (id {v['id']}), message {v['message']} ({v['role']}): "
        f"{v['tokens']} trainable token(s) at chars {v['chars'][0]}-{v['chars'][1]}: {v['span']!r}"
        for v in report["violations"]
    ]
    problems += [
        f"example {u['example']} (id {u['id']}): no trainable token (no assistant output inside "
        "{% generation %})" for u in report["untrained_examples"]
    ]
    eos = report["eos_trained"]
    if eos["total"] and eos["trained"] < eos["total"]:
        problems.append(f"{eos['total'] - eos['trained']} of {eos['total']} assistant end-of-turn tokens "
                        "are masked: the model would never learn to stop")
    if problems:
        shown = problems[:10] + ([f"... and {len(problems) - 10} more"] if len(problems) > 10 else [])
        raise MaskingError(
            "masking would train on the wrong tokens:\n  " + "\n  ".join(shown)
            + "\nhelp: tool outputs are never trained: keep `tool_outputs` in the stage's `mask`. "
            "Only assistant output (content and <|im_end|>) may sit inside "
            "{% generation %}...{% endgeneration %} in the chat template; system, user and tool "
            "messages must render outside it. See mask_report.md for marked samples."
        )


def _markdown(report: dict) -> str:
    lines = ["# Mask report", "",
             f"{report['n_sampled']} of {report['n_examples']} examples rendered (seed {report['seed']}). "
             "Trained spans are wrapped in `[[...]]`.", "",
             "| role | trainable | masked |", "| --- | ---: | ---: |"]
    lines += [f"| {r} | {c['trainable']} | {c['masked']} |" for r, c in report["per_role"].items()]
    eos = report["eos_trained"]
    lines += ["", f"Assistant end-of-turn tokens trained: {eos['trained']} of {eos['total']}.",
              "", f"Violations: {len(report['violations'])}."]
    lines += [f"- example {v['example']} message {v['message']} ({v['role']}): `{v['span']!r}`"
              for v in report["violations"][:20]]
    for s in report["samples"]:
        lines += ["", f"## Example {s['example']} (id {s['id']})", "", "````text", s["marked"], "````"]
    return "\n".join(lines) + "\n"


def write_mask_report(report: dict, out_dir: str | os.PathLike) -> tuple[Path, Path]:
    """Write `mask_report.json` and `mask_report.md` into `out_dir` atomically.

    Returns:
        The two paths written.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    json_path, md_path = out / "mask_report.json", out / "mask_report.md"
    write_atomic(json_path, json.dumps(report, indent=2, sort_keys=True, ensure_ascii=False) + "\n")
    write_atomic(md_path, _markdown(report))
    return json_path, md_path
